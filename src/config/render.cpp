// The effective configuration as YAML, and the grace period `validate` recommends. The output must
// load again to an equal Config, so every string is double-quoted with YAML escapes.
#include <cstdio>
#include <limits>

#include "config/config.hpp"

namespace myr::config {

namespace {

// Decodes one UTF-8 sequence at s[i]; returns its length, or 0 when it is not valid UTF-8.
size_t utf8_next(const std::string& s, size_t i, uint32_t& cp) {
    auto cont = [&](size_t k) {
        return k < s.size() && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80;
    };
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
        cp = c;
        return 1;
    }
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || c >= 0xF8) return 0;
    cp = c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
        if (!cont(i + k)) return 0;
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    return len;
}

// Characters YAML lets stand unescaped inside double quotes without changing meaning: printable,
// and not one of the Unicode line or paragraph separators that would be folded.
bool verbatim(uint32_t cp) {
    if (cp == '"' || cp == '\\') return false;
    if (cp >= 0x20 && cp <= 0x7E) return true;
    if (cp == 0x2028 || cp == 0x2029 || cp == 0xFEFF) return false;
    return (cp >= 0xA0 && cp <= 0xD7FF) || (cp >= 0xE000 && cp <= 0xFFFD) ||
           (cp >= 0x10000 && cp <= 0x10FFFF);
}

std::string quote(const std::string& s) {
    std::string out = "\"";
    for (size_t i = 0; i < s.size();) {
        uint32_t cp = 0;
        size_t len = utf8_next(s, i, cp);
        char buf[16];
        if (len == 0) {
            // Not UTF-8 (the parser never produces this); keep the byte's value visible.
            std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned char>(s[i]));
            out += buf;
            i += 1;
            continue;
        }
        if (cp == '"' || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (verbatim(cp)) {
            out.append(s, i, len);
        } else if (cp <= 0xFF) {
            std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(cp));
            out += buf;
        } else if (cp <= 0xFFFF) {
            std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(cp));
            out += buf;
        } else {
            std::snprintf(buf, sizeof buf, "\\U%08X", static_cast<unsigned>(cp));
            out += buf;
        }
        i += len;
    }
    return out + "\"";
}

const char* bool_text(bool b) {
    return b ? "true" : "false";
}

std::string url_text(const std::optional<Url>& u) {
    return quote(u ? u->str() : "");
}

// A proxy URL with its user information (a password) shown as "***".
std::string without_credentials(const std::string& url) {
    const size_t start = url.find("://") == std::string::npos ? 0 : url.find("://") + 3;
    const size_t at = url.rfind('@');
    if (at == std::string::npos || at < start) return url;
    return url.substr(0, start) + "***" + url.substr(at);
}

std::string list_text(const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + quote(items[i]);
    return out + "]";
}

const char* level_text(log::Level l) {
    switch (l) {
        case log::Level::debug:
            return "debug";
        case log::Level::info:
            return "info";
        case log::Level::warn:
            return "warn";
        case log::Level::error:
            return "error";
    }
    return "info";
}

// a + b without overflow, clamped at the largest duration.
Duration sat_add(Duration a, Duration b) {
    using Rep = Duration::rep;
    if (b.count() > 0 && a.count() > std::numeric_limits<Rep>::max() - b.count()) {
        return Duration(std::numeric_limits<Rep>::max());
    }
    return a + b;
}

}  // namespace

Duration recommended_grace_period(const Config& cfg) {
    Duration stop = cfg.container ? cfg.container->stop_timeout : Container{}.stop_timeout;
    Duration health = cfg.update.health_timeout;
    Duration total = sat_add(stop, stop);
    total = sat_add(total, health);
    total = sat_add(total, health);
    return sat_add(total, std::chrono::seconds(60));
}

std::string render_effective(const Config& cfg) {
    std::string o;
    auto line = [&o](const std::string& indent, const char* key, const std::string& value) {
        o += indent + key + ": " + value + "\n";
    };
    const std::string i1 = "  ", i2 = "    ";

    const Server& s = cfg.server;
    o += "server:\n";
    line(i1, "endpoint", url_text(s.endpoint));
    line(i1, "allowInsecureTransport", bool_text(s.allow_insecure_transport));
    line(i1, "caFile", quote(s.ca_file));
    line(i1, "enrollmentTokenFile", quote(s.enrollment_token_file));
    line(i1, "enrollmentTokenEnv", quote(s.enrollment_token_env));
    line(i1, "hostName", quote(s.host_name));
    line(i1, "heartbeatInterval", format_duration(s.heartbeat_interval));

    const Proxy& px = cfg.network.proxy;
    o += "\nnetwork:\n";
    o += i1 + "proxy:\n";
    line(i2, "url", quote(without_credentials(px.url)));
    line(i2, "noProxy", list_text(px.no_proxy));
    line(i2, "credentialsFile", quote(px.credentials_file));
    line(i2, "credentialsEnv", quote(px.credentials_env));

    const Update& u = cfg.update;
    o += "\nupdate:\n";
    line(i1, "requireSignature", bool_text(u.require_signature));
    line(i1, "trustedRootFile", quote(u.trusted_root_file));
    o += i1 + "signerIdentity:\n";
    line(i2, "subject", quote(u.signer_identity.subject));
    line(i2, "subjectRegexp", quote(u.signer_identity.subject_regexp));
    line(i2, "issuer", quote(u.signer_identity.issuer));
    for (const SignerField& f : signer_fields(u.signer_identity)) line(i2, f.key, quote(*f.value));
    o += i1 + "signature:\n";
    line(i2, "minTimestamps", std::to_string(u.signature.min_timestamps));
    std::vector<std::string> prefixes;
    for (const Url& p : u.allowed_download_prefixes) prefixes.push_back(p.str());
    std::string prefix_line = list_text(prefixes);
    if (prefixes.empty()) {
        std::vector<Url> derived = effective_download_prefixes(cfg);
        prefix_line += derived.empty() ? "  # none: server.endpoint is not set"
                                       : "  # in effect: " + derived[0].str();
    }
    line(i1, "allowedDownloadPrefixes", prefix_line);
    line(i1, "minimumVersion", quote(u.minimum_version ? u.minimum_version->text : ""));
    line(i1, "allowDowngrade", bool_text(u.allow_downgrade));
    line(i1, "maxMinorSkew", std::to_string(u.max_minor_skew));
    line(i1, "maxArtifactSize", format_size(u.max_artifact_size));
    line(i1, "downloadTimeout",
         u.download_timeout
             ? format_duration(*u.download_timeout)
             : "\"\"  # in effect: " + format_duration(effective_download_timeout(u)));
    line(i1, "startJitter", format_duration(u.start_jitter));
    line(i1, "retryFor", format_duration(u.retry_for));
    line(i1, "quarantineFor", format_duration(u.quarantine_for));
    line(i1, "healthTimeout", format_duration(u.health_timeout));
    line(i1, "healthSuccesses", std::to_string(u.health_successes));
    line(i1, "healthInterval", format_duration(u.health_interval));
    line(i1, "validateArgs", list_text(u.validate_args));
    line(i1, "trialPeriod", format_duration(u.trial_period));
    line(i1, "trialMaxRestarts", std::to_string(u.trial_max_restarts));
    line(i1, "trialMaxBoots", std::to_string(u.trial_max_boots));

    const Collector& c = cfg.collector;
    o += "\ncollector:\n";
    line(i1, "binary", quote(c.binary));
    line(i1, "installDir", quote(c.install_dir));
    line(i1, "stateDir", quote(c.state_dir));
    line(i1, "activation", c.activation == Activation::symlink ? "symlink" : "copy");
    line(i1, "keepVersions", std::to_string(c.keep_versions));
    line(i1, "healthUrl", url_text(c.health_url));
    line(i1, "configFile", quote(c.config_file));

    o += "\nsupervisor:\n";
    line(i1, "healthUrl", url_text(cfg.supervisor.health_url));
    line(i1, "storageDir", quote(cfg.supervisor.storage_dir));

    if (cfg.container) {
        const Container& k = *cfg.container;
        o += "\ncontainer:\n";
        line(i1, "supervisorCommand", list_text(k.supervisor_command));
        line(i1, "seedBinary", quote(k.seed_binary));
        line(i1, "seedPolicy", k.seed_policy == SeedPolicy::newest ? "newest" : "image");
        line(i1, "stopSignal", k.stop_signal == StopSignal::term ? "TERM" : "INT");
        line(i1, "stopTimeout", format_duration(k.stop_timeout));
        line(i1, "restartDelay", format_duration(k.restart_delay));
        line(i1, "maxRestarts", std::to_string(k.max_restarts));
        line(i1, "restartWindow", format_duration(k.restart_window));
        line(i1, "terminationMessagePath", quote(k.termination_message_path));
        line(i1, "healthListen", quote(k.health_listen ? k.health_listen->str() : ""));
        line(i1, "metrics", bool_text(k.metrics));
    }

    if (cfg.host) {
        o += "\nhost:\n";
        line(i1, "serviceName", quote(cfg.host->service_name));
        line(i1, "pollInterval", format_duration(cfg.host->poll_interval));
        line(i1, "seedBinary", quote(cfg.host->seed_binary));
        line(i1, "healthListen",
             quote(cfg.host->health_listen ? cfg.host->health_listen->str() : ""));
        line(i1, "metrics", bool_text(cfg.host->metrics));
    }

    o += "\nlog:\n";
    line(i1, "level", level_text(cfg.log.level));
    line(i1, "format", cfg.log.format == log::Format::json ? "json" : "text");
    return o;
}

}  // namespace myr::config
