// Rules that involve more than one key, or the mode: they run on the decoded Config, and skip any
// key that already had a problem so a single mistake is reported once.
#include <vector>

#include "config/loader.hpp"
#include "core/regex.hpp"
#include "core/text.hpp"
#include "version/template.hpp"

namespace myr::config {

namespace {

constexpr size_t kMaxRegexpLength = 1024;

// Ends in a '$' that is not escaped (an odd number of backslashes before it escapes it).
bool ends_anchored(const std::string& re) {
    if (re.empty() || re.back() != '$') return false;
    size_t slashes = 0;
    for (size_t i = re.size() - 1; i > 0 && re[i - 1] == '\\'; --i) ++slashes;
    return slashes % 2 == 0;
}

void check_regexp(const std::string& re, Context& ctx) {
    const char* key = "update.signerIdentity.subjectRegexp";
    if (re.size() > kMaxRegexpLength) {
        ctx.at_key(key, "is longer than " + std::to_string(kMaxRegexpLength) + " characters");
        return;
    }
    // The same compiler the verifier uses (core/regex.hpp), so what validates is what runs.
    if (auto compiled = Regex::compile(re); !compiled) {
        ctx.at_key(key,
                   "is not a valid ECMAScript regular expression of the supported syntax "
                   "(docs/config.md): " +
                       compiled.error().message());
        return;
    }
    if (re.front() != '^' || !ends_anchored(re)) {
        ctx.at_key(key,
                   "must be anchored: start with ^ and end with $ (an unanchored pattern "
                   "would accept any identity containing a match)");
    }
}

void check_server(const Config& cfg, Context& ctx) {
    const Server& s = cfg.server;
    if (s.endpoint && s.endpoint->scheme == "ws" && !is_loopback_host(s.endpoint->host) &&
        !s.allow_insecure_transport && !ctx.bad("server.allowInsecureTransport")) {
        ctx.at_key("server.endpoint",
                   "ws:// to a host that is not loopback sends the enrollment token in clear: use "
                   "wss://, or set server.allowInsecureTransport: true inside a trusted network");
    }
    if (!s.enrollment_token_file.empty() && !s.enrollment_token_env.empty()) {
        ctx.at_key("server.enrollmentTokenEnv",
                   "set at most one of enrollmentTokenFile and enrollmentTokenEnv");
    }
    if (ctx.mode() != Mode::any && !s.endpoint && !ctx.bad("server.endpoint")) {
        ctx.at_key("server.endpoint", std::string("is required by the ") +
                                          (ctx.mode() == Mode::container ? "container" : "run") +
                                          " command");
    }
}

// The proxy URL's full check (net::parse_proxy_url) runs when the updater starts; here what can
// be seen without it, so `validate` names the usual mistakes.
void check_network(const Config& cfg, Context& ctx) {
    const Proxy& p = cfg.network.proxy;
    if (!p.url.empty() && !ctx.bad("network.proxy.url")) {
        const std::string lower = text::lower(p.url);
        if (lower.rfind("https://", 0) == 0) {
            ctx.at_key("network.proxy.url",
                       "https:// proxies are not supported; use http:// (TLS to the server still "
                       "runs end to end through CONNECT)");
        } else if (lower.find("://") != std::string::npos && lower.rfind("http://", 0) != 0) {
            ctx.at_key("network.proxy.url", "must be an http:// URL");
        }
    }
    if (!p.credentials_file.empty() && !p.credentials_env.empty()) {
        ctx.at_key("network.proxy.credentialsEnv",
                   "set at most one of credentialsFile and credentialsEnv");
    }
}

// Only {version} is a placeholder: a typo such as {Version} would otherwise be compared literally
// and refuse every release, or worse, be mistaken for a pin that holds. It is replaced in subject
// and the certificate fields; in issuer and subjectRegexp it would be compared (or matched)
// literally, so every signed release would fail: refused there, naming where it works.
void check_signer_templates(const SignerIdentity& si, Context& ctx) {
    std::vector<SignerField> templates = signer_fields(si);
    templates.push_back({"subject", &si.subject});
    for (const SignerField& f : templates) {
        std::string key = std::string("update.signerIdentity.") + f.key;
        if (f.value->empty() || ctx.bad(key)) continue;
        if (auto ok = version::check_template(*f.value); !ok) ctx.at_key(key, ok.error().message());
    }
    constexpr const char* kWhere =
        " is not replaced here: {version} works in subject and the certificate fields";
    if (si.issuer.find_first_of("{}") != std::string::npos &&
        !ctx.bad("update.signerIdentity.issuer")) {
        ctx.at_key("update.signerIdentity.issuer",
                   std::string("is compared exactly and a placeholder") + kWhere);
    }
    if (si.subject_regexp.find("{version}") != std::string::npos &&
        !ctx.bad("update.signerIdentity.subjectRegexp")) {
        ctx.at_key("update.signerIdentity.subjectRegexp", std::string("{version}") + kWhere);
    }
}

void check_update(const Config& cfg, Context& ctx) {
    const Update& u = cfg.update;
    const SignerIdentity& si = u.signer_identity;
    check_signer_templates(si, ctx);
    if (!si.subject_regexp.empty() && !ctx.bad("update.signerIdentity.subjectRegexp")) {
        check_regexp(si.subject_regexp, ctx);
    }
    if (u.require_signature && !ctx.bad("update.requireSignature")) {
        if (u.trusted_root_file.empty() && !ctx.bad("update.trustedRootFile")) {
            ctx.at_key("update.trustedRootFile", "is required when requireSignature is true");
        }
        bool bad_identity = ctx.bad_itself("update.signerIdentity") ||
                            ctx.bad("update.signerIdentity.subject") ||
                            ctx.bad("update.signerIdentity.subjectRegexp");
        if (si.subject.empty() && si.subject_regexp.empty() && !bad_identity) {
            ctx.at_key("update.signerIdentity",
                       "needs subject or subjectRegexp when requireSignature is true");
        } else if (!si.subject.empty() && !si.subject_regexp.empty()) {
            ctx.at_key("update.signerIdentity.subjectRegexp",
                       "set exactly one of subject and subjectRegexp");
        }
        if (si.issuer.empty() && !ctx.bad("update.signerIdentity.issuer")) {
            ctx.at_key("update.signerIdentity.issuer",
                       "must not be empty when requireSignature is true");
        }
    }
    // The URL policy refuses plain http:// downloads unless the endpoint is on a loopback host or
    // insecure transport is allowed (download/url_policy.cpp): such a prefix could never admit an
    // offer, which is better said now than at the first install.
    const Server& s = cfg.server;
    const bool plain_http =
        s.allow_insecure_transport || (s.endpoint && is_loopback_host(s.endpoint->host));
    for (size_t i = 0; s.endpoint && !plain_http && i < u.allowed_download_prefixes.size(); ++i) {
        const std::string key = "update.allowedDownloadPrefixes[" + std::to_string(i) + "]";
        if (u.allowed_download_prefixes[i].scheme == "http" && !ctx.bad(key) &&
            !ctx.bad("server.allowInsecureTransport")) {
            ctx.at_key(key,
                       "http:// downloads are refused while server.endpoint is not on a "
                       "loopback host and server.allowInsecureTransport is false: use "
                       "https://, or allow insecure transport inside a trusted network");
        }
    }
    if (u.health_interval >= u.health_timeout && !ctx.bad("update.healthInterval") &&
        !ctx.bad("update.healthTimeout")) {
        ctx.at_key(
            ctx.present("update.healthInterval") ? "update.healthInterval" : "update.healthTimeout",
            "healthInterval (" + format_duration(u.health_interval) +
                ") must be shorter than healthTimeout (" + format_duration(u.health_timeout) + ")");
    }
}

void check_container(const Config& cfg, Context& ctx) {
    if (ctx.mode() != Mode::container) return;
    if (cfg.collector.activation != Activation::symlink && !ctx.bad("collector.activation")) {
        ctx.at_key("collector.activation", "must be symlink for the container command");
    }
    if (!cfg.container) {
        ctx.at_key("container", "section is required by the container command");
        return;
    }
    if (ctx.bad_itself("container")) return;
    const Container& c = *cfg.container;
    if (c.supervisor_command.empty() && !ctx.bad("container.supervisorCommand")) {
        ctx.at_key("container.supervisorCommand",
                   "is required by the container command (a non-empty list: program and "
                   "arguments)");
    } else if (!c.supervisor_command.empty() && c.supervisor_command[0].empty()) {
        ctx.at_key("container.supervisorCommand", "the program (first item) must not be empty");
    }
    if (c.seed_binary.empty() && !ctx.bad("container.seedBinary")) {
        ctx.at_key("container.seedBinary",
                   "is required by the container command (an absolute path)");
    }
}

// The poll is systemctl's only way to tell a change: slower than this and a crash loop or a
// restart is seen late; faster and systemctl runs more often than the unit can change.
constexpr Duration kMinPollInterval = std::chrono::milliseconds(200);
constexpr Duration kMaxPollInterval = std::chrono::seconds(10);

// systemd's rules for a unit name (unit_name_is_valid), narrowed to what `run` can follow: a
// service, and an instance rather than a template. The name goes to systemctl as an argument, so
// one that starts with '-' would be read as an option (`--host=…` runs systemctl over ssh); every
// call also puts `--` before it (service/systemd_unit.hpp), and this names the mistake early.
// Returns why `name` is not one, or "".
std::string unit_name_problem(const std::string& name) {
    constexpr std::string_view kSuffix = ".service";
    constexpr size_t kMaxUnitName = 255;  // systemd's UNIT_NAME_MAX less its NUL
    if (name.size() > kMaxUnitName) {
        return "is longer than " + std::to_string(kMaxUnitName) + " bytes";
    }
    if (name[0] == '-') return "must not start with '-' (systemctl would read it as an option)";
    const size_t bad = name.find_first_not_of(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789:_.-\\@");
    if (bad != std::string::npos) {
        return "may hold only letters, digits and \":_.-\\@\", not \"" +
               yaml::printable(name.substr(bad, 1)) + "\"";
    }
    if (!name.ends_with(kSuffix) || name.size() == kSuffix.size()) {
        return "must be a systemd service unit name ending in .service";
    }
    const std::string stem = name.substr(0, name.size() - kSuffix.size());
    const size_t at = stem.find('@');
    if (at == 0) return "must have a name before '@'";
    if (at != std::string::npos && at + 1 == stem.size()) {
        return "is a template (nothing after '@'): name an instance, e.g. " + stem + "edge.service";
    }
    return "";
}

void check_host(const Config& cfg, Context& ctx) {
    if (cfg.host && !ctx.bad_itself("host")) {
        const Host& h = *cfg.host;
        const std::string& n = h.service_name;
        if (!n.empty() && !ctx.bad("host.serviceName")) {
            if (std::string why = unit_name_problem(n); !why.empty()) {
                ctx.at_key("host.serviceName",
                           why + ", got \"" + yaml::printable(n, 60, true) + "\"");
            }
        }
        if ((h.poll_interval < kMinPollInterval || h.poll_interval > kMaxPollInterval) &&
            !ctx.bad("host.pollInterval")) {
            ctx.at_key("host.pollInterval", "must be between " + format_duration(kMinPollInterval) +
                                                " and " + format_duration(kMaxPollInterval) +
                                                ", got " + format_duration(h.poll_interval));
        }
    }
    if (ctx.mode() != Mode::run) return;
    if (cfg.collector.activation != Activation::symlink && !ctx.bad("collector.activation")) {
        ctx.at_key("collector.activation", "must be symlink for host mode (copy is not built)");
    }
    if (!cfg.host) {
        ctx.at_key("host", "section is required by host mode (run)");
        return;
    }
    if (cfg.host->service_name.empty() && !ctx.bad("host.serviceName") && !ctx.bad_itself("host")) {
        ctx.at_key("host.serviceName",
                   "is required by host mode (run): the supervisor's unit, e.g. "
                   "opampsupervisor.service");
    }
}

}  // namespace

void check_rules(const Config& cfg, Context& ctx) {
    check_server(cfg, ctx);
    check_network(cfg, ctx);
    check_update(cfg, ctx);
    check_container(cfg, ctx);
    check_host(cfg, ctx);
}

Duration effective_download_timeout(const Update& u) {
    if (u.download_timeout) return *u.download_timeout;
    return kDownloadTimeoutBase + std::chrono::duration_cast<Duration>(
                                      std::chrono::seconds(u.max_artifact_size / kDownloadMinRate));
}

std::vector<SignerField> signer_fields(const SignerIdentity& si) {
    return {{"sourceRepositoryRef", &si.source_repository_ref},
            {"buildConfigUri", &si.build_config_uri},
            {"sourceRepositoryUri", &si.source_repository_uri},
            {"githubWorkflowName", &si.github_workflow_name},
            {"githubWorkflowRef", &si.github_workflow_ref},
            {"githubWorkflowRepository", &si.github_workflow_repository}};
}

std::vector<Url> effective_download_prefixes(const Config& cfg) {
    if (!cfg.update.allowed_download_prefixes.empty()) return cfg.update.allowed_download_prefixes;
    if (!cfg.server.endpoint) return {};
    Url u = *cfg.server.endpoint;
    u.scheme = u.secure() ? "https" : "http";
    u.path = "/artifacts/";
    return {u};
}

}  // namespace myr::config
