// The schema of updater.yaml: each section is a table of keys, each key a typed decoder writing
// into the Config. Problems are collected, never thrown, so `validate` can list them all.
#include <functional>

#include "config/loader.hpp"
#include "version/version.hpp"

namespace myr::config {

namespace {

using yaml::Node;
namespace L = limits;
// For a key whose maximum a rule checks with its minimum in one message (host.pollInterval:
// check_host in rules.cpp).
constexpr Duration kBoundedByRules = Duration::max();

using Decoder = std::function<void(const Node& key, const Node& value, const std::string& path)>;

struct Entry {
    const char* name;
    Decoder decode;
};

std::string join(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
}

bool is_scalar(const Node& n) {
    return n.kind == Node::Kind::scalar;
}

class Schema {
  public:
    Schema(Config& cfg, Context& ctx) : cfg_(cfg), ctx_(ctx) {}

    void root(const Node& root);

  private:
    // network: (proxy:), tables of their own to keep root() short.
    std::function<std::vector<Entry>()> network_entries();
    std::function<std::vector<Entry>()> signer_entries();
    std::function<std::vector<Entry>()> signature_entries();
    // Walks a mapping against its table: unknown and duplicate keys are problems.
    void mapping(const Node& map, const std::string& path, const std::vector<Entry>& entries);
    // A section value: a mapping (walked), or empty (`log:` alone, all defaults).
    Decoder section_fn(std::function<std::vector<Entry>()> make);

    void expected(const Node& key, const std::string& path, const char* what, const Node& got) {
        ctx_.at(key.mark, path, std::string("expected ") + what + ", got " + yaml::describe(got));
    }
    // The scalar's text, refusing collections, null and NUL bytes. False after reporting.
    bool scalar_text(const Node& key, const Node& v, const std::string& path, const char* what,
                     std::string& out, bool null_is_empty);

    Decoder boolean(bool& out);
    // An integer in [min, max], written plain (`-1`, `3`; not `"3"` or `0x10`).
    Decoder integer(std::function<void(int64_t)> set, int64_t min, int64_t max);
    Decoder uint(uint32_t& out, uint32_t min, uint32_t max);
    Decoder text(std::string& out);
    Decoder file_name(std::string& out);
    Decoder abs_path(std::string& out, bool allow_empty);
    // A duration in [0 or 1 ms, max].
    Decoder duration(Duration& out, bool allow_zero, Duration max);
    // A positive duration up to max, or "" / null for "unset" (a value derived from others).
    Decoder duration_or_unset(std::optional<Duration>& out, Duration max);
    Decoder size(uint64_t& out, uint64_t max);
    Decoder url(std::optional<Url>& out, std::vector<std::string> schemes, bool empty_is_none);
    Decoder url_list(std::vector<Url>& out, std::vector<std::string> schemes);
    Decoder string_list(std::vector<std::string>& out, bool allow_empty_list);
    Decoder version(std::optional<VersionText>& out);
    Decoder host_port(std::optional<HostPort>& out);
    template <class E>
    Decoder choice(E& out, std::vector<std::pair<const char*, E>> values);

    Config& cfg_;
    Context& ctx_;
};

bool Schema::scalar_text(const Node& key, const Node& v, const std::string& path, const char* what,
                         std::string& out, bool null_is_empty) {
    if (!is_scalar(v) || (v.is_null() && !null_is_empty)) {
        expected(key, path, what, v);
        return false;
    }
    if (v.value.find('\0') != std::string::npos) {
        ctx_.at(v.mark, path, "must not contain a NUL byte");
        return false;
    }
    out = v.is_null() ? std::string() : v.value;
    return true;
}

void Schema::mapping(const Node& map, const std::string& path, const std::vector<Entry>& entries) {
    std::map<std::string, yaml::Mark> seen;
    for (size_t i = 0; i + 1 < map.items.size(); i += 2) {
        const Node& key = map.items[i];
        const Node& value = map.items[i + 1];
        if (!is_scalar(key) || key.is_null()) {
            ctx_.at(key.mark, path, "keys must be plain names, got " + yaml::describe(key));
            continue;
        }
        std::string kpath = join(path, yaml::printable(key.value));
        auto [it, fresh] = seen.emplace(key.value, key.mark);
        if (!fresh) {
            ctx_.at(key.mark, kpath,
                    "duplicate key (first at line " + std::to_string(it->second.line) +
                        ", column " + std::to_string(it->second.column) + ")");
            continue;
        }
        const Entry* found = nullptr;
        for (const Entry& e : entries) {
            if (key.value == e.name) found = &e;
        }
        if (!found) {
            std::vector<std::string> names;
            for (const Entry& e : entries) names.emplace_back(e.name);
            std::string near = nearest(key.value, names);
            std::string msg = "unknown key";
            if (!near.empty()) {
                msg += ", did you mean \"" + near + "\"?";
            } else {
                msg += " (known keys:";
                for (size_t k = 0; k < names.size(); ++k) msg += (k ? ", " : " ") + names[k];
                msg += ")";
            }
            ctx_.at(key.mark, kpath, msg);
            continue;
        }
        ctx_.remember(kpath, key.mark);
        found->decode(key, value, kpath);
    }
}

Decoder Schema::section_fn(std::function<std::vector<Entry>()> make) {
    return [this, make](const Node& key, const Node& v, const std::string& path) {
        if (v.kind == Node::Kind::mapping) {
            mapping(v, path, make());
        } else if (!v.is_null()) {
            expected(key, path, "a mapping", v);
        }
    };
}

Decoder Schema::boolean(bool& out) {
    return [this, &out](const Node& key, const Node& v, const std::string& path) {
        if (is_scalar(v) && v.plain) {
            const std::string& s = v.value;
            if (s == "true" || s == "True" || s == "TRUE") {
                out = true;
                return;
            }
            if (s == "false" || s == "False" || s == "FALSE") {
                out = false;
                return;
            }
            if (s == "yes" || s == "no" || s == "on" || s == "off" || s == "y" || s == "n") {
                ctx_.at(key.mark, path,
                        "expected true or false, got \"" + yaml::printable(s) +
                            "\" (YAML 1.1 spellings are not booleans here)");
                return;
            }
        }
        expected(key, path, "true or false", v);
    };
}

Decoder Schema::integer(std::function<void(int64_t)> set, int64_t min, int64_t max) {
    return [this, set = std::move(set), min, max](const Node& key, const Node& v,
                                                  const std::string& path) {
        if (!is_scalar(v) || !v.plain || v.value.empty()) {
            expected(key, path, "an integer", v);
            return;
        }
        std::string_view s = v.value;
        bool negative = s[0] == '-';
        if (s[0] == '-' || s[0] == '+') s.remove_prefix(1);
        if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) {
            expected(key, path, "an integer", v);
            return;
        }
        // Digit by digit against the largest magnitude allowed, so nothing overflows.
        const int64_t limit = negative ? -min : max;
        int64_t n = 0;
        for (char c : s) {
            n = n * 10 + (c - '0');
            if (n <= limit) continue;
            ctx_.at(key.mark, path,
                    negative ? "must be at least " + std::to_string(min) + ", got " + v.value
                             : "\"" + yaml::printable(v.value) + "\" is too large (at most " +
                                   std::to_string(max) + ")");
            return;
        }
        if (negative) n = -n;
        if (n < min) {
            ctx_.at(key.mark, path,
                    "must be at least " + std::to_string(min) + ", got " + std::to_string(n));
            return;
        }
        set(n);
    };
}

Decoder Schema::uint(uint32_t& out, uint32_t min, uint32_t max) {
    return integer([&out](int64_t n) { out = static_cast<uint32_t>(n); }, min, max);
}

Decoder Schema::text(std::string& out) {
    return [this, &out](const Node& key, const Node& v, const std::string& path) {
        std::string s;
        if (scalar_text(key, v, path, "a string", s, true)) out = s;
    };
}

Decoder Schema::file_name(std::string& out) {
    return [this, &out](const Node& key, const Node& v, const std::string& path) {
        std::string s;
        if (!scalar_text(key, v, path, "a file name", s, false)) return;
        if (s.empty() || s == "." || s == ".." || s.find('/') != std::string::npos) {
            ctx_.at(key.mark, path,
                    "must be a plain file name (no '/'), got \"" + yaml::printable(s) + "\"");
            return;
        }
        out = s;
    };
}

Decoder Schema::abs_path(std::string& out, bool allow_empty) {
    return [this, &out, allow_empty](const Node& key, const Node& v, const std::string& path) {
        std::string s;
        if (!scalar_text(key, v, path, "an absolute path", s, allow_empty)) return;
        if (s.empty() && allow_empty) {
            out.clear();
            return;
        }
        if (s.empty() || s[0] != '/') {
            ctx_.at(key.mark, path, "must be an absolute path, got \"" + yaml::printable(s) + "\"");
            return;
        }
        out = s;
    };
}

Decoder Schema::duration(Duration& out, bool allow_zero, Duration max) {
    return [this, &out, allow_zero, max](const Node& key, const Node& v, const std::string& path) {
        std::string s;
        if (!scalar_text(key, v, path, "a duration such as \"30s\"", s, false)) return;
        Duration d{0};
        if (s != "0") {
            auto r = parse_duration(s);
            if (!r) {
                ctx_.at(key.mark, path, yaml::printable(r.error().message(), 200, false));
                return;
            }
            d = *r;
        }
        if (d.count() < 0 || (d.count() == 0 && !allow_zero)) {
            ctx_.at(key.mark, path,
                    std::string(allow_zero ? "must not be negative" : "must be positive") +
                        ", got \"" + yaml::printable(s) + "\"");
            return;
        }
        if (d > max) {
            ctx_.at(
                key.mark, path,
                "must be at most " + format_duration(max) + ", got \"" + yaml::printable(s) + "\"");
            return;
        }
        out = d;
    };
}

Decoder Schema::duration_or_unset(std::optional<Duration>& out, Duration max) {
    return [this, &out, max](const Node& key, const Node& v, const std::string& path) {
        if (v.is_null() || (is_scalar(v) && v.value.empty())) {
            out.reset();
            return;
        }
        // duration() assigns only what it accepts; a refusal is reported there.
        Duration d{-1};
        duration(d, false, max)(key, v, path);
        if (d.count() > 0) out = d;
    };
}

Decoder Schema::size(uint64_t& out, uint64_t max) {
    return [this, &out, max](const Node& key, const Node& v, const std::string& path) {
        std::string s;
        if (!scalar_text(key, v, path, "a size such as \"1GiB\"", s, false)) return;
        auto r = parse_size(s);
        if (!r) {
            ctx_.at(key.mark, path, yaml::printable(r.error().message(), 200, false));
            return;
        }
        if (*r == 0) {
            ctx_.at(key.mark, path, "must be at least 1B");
            return;
        }
        if (*r > max) {
            ctx_.at(key.mark, path,
                    "must be at most " + format_size(max) + ", got \"" + yaml::printable(s) + "\"");
            return;
        }
        out = *r;
    };
}

// "ws:// or wss://" from {"ws", "wss"}.
std::string scheme_list(const std::vector<std::string>& schemes) {
    std::string out;
    for (size_t i = 0; i < schemes.size(); ++i) {
        if (i) out += i + 1 == schemes.size() ? " or " : ", ";
        out += schemes[i] + "://";
    }
    return out;
}

Decoder Schema::url(std::optional<Url>& out, std::vector<std::string> schemes, bool empty_is_none) {
    return [this, &out, schemes, empty_is_none](const Node& key, const Node& v,
                                                const std::string& path) {
        std::string s;
        if (!scalar_text(key, v, path, "a URL", s, true)) return;
        if (s.empty()) {
            if (empty_is_none) {
                out.reset();
            } else {
                ctx_.at(key.mark, path, "must be a " + scheme_list(schemes) + " URL, got \"\"");
            }
            return;
        }
        auto u = parse_url(s);
        if (!u) {
            ctx_.at(key.mark, path,
                    "\"" + yaml::printable(s) +
                        "\": " + yaml::printable(u.error().message(), 200, false));
            return;
        }
        bool allowed = false;
        for (const std::string& sc : schemes) allowed = allowed || u->scheme == sc;
        if (!allowed) {
            ctx_.at(
                key.mark, path,
                "must be a " + scheme_list(schemes) + " URL, got \"" + yaml::printable(s) + "\"");
            return;
        }
        out = *u;
    };
}

Decoder Schema::url_list(std::vector<Url>& out, std::vector<std::string> schemes) {
    return [this, &out, schemes](const Node& key, const Node& v, const std::string& path) {
        if (v.is_null()) {
            out.clear();
            return;
        }
        if (v.kind != Node::Kind::sequence) {
            expected(key, path, "a list of URLs", v);
            return;
        }
        std::vector<Url> urls;
        bool ok = true;
        for (size_t i = 0; i < v.items.size(); ++i) {
            const Node& item = v.items[i];
            std::string ipath = path + "[" + std::to_string(i) + "]";
            std::optional<Url> u;
            url(u, schemes, false)(item, item, ipath);
            if (!u) {
                ok = false;
                continue;
            }
            urls.push_back(*u);
        }
        if (ok) out = std::move(urls);
    };
}

Decoder Schema::string_list(std::vector<std::string>& out, bool allow_empty_list) {
    return [this, &out, allow_empty_list](const Node& key, const Node& v, const std::string& path) {
        if (v.kind != Node::Kind::sequence) {
            expected(key, path, "a list of strings", v);
            return;
        }
        std::vector<std::string> items;
        bool ok = true;
        for (size_t i = 0; i < v.items.size(); ++i) {
            const Node& item = v.items[i];
            std::string s;
            if (!scalar_text(item, item, path + "[" + std::to_string(i) + "]", "a string", s,
                             false)) {
                ok = false;
                continue;
            }
            items.push_back(s);
        }
        if (!ok) return;
        if (items.empty() && !allow_empty_list) {
            ctx_.at(key.mark, path, "must not be an empty list");
            return;
        }
        out = std::move(items);
    };
}

Decoder Schema::version(std::optional<VersionText>& out) {
    return [this, &out](const Node& key, const Node& v, const std::string& path) {
        std::string s;
        if (!scalar_text(key, v, path, "a version such as \"0.116.0\"", s, true)) return;
        if (s.empty()) {
            out.reset();
            return;
        }
        if (!version::parse(s)) {
            ctx_.at(key.mark, path,
                    "\"" + yaml::printable(s) +
                        "\" is not a semantic version (MAJOR.MINOR.PATCH, optional leading v, "
                        "-prerelease and +build)");
            return;
        }
        out = VersionText{s};
    };
}

Decoder Schema::host_port(std::optional<HostPort>& out) {
    return [this, &out](const Node& key, const Node& v, const std::string& path) {
        std::string s;
        if (!scalar_text(key, v, path, "host:port", s, true)) return;
        if (s.empty()) {
            out.reset();
            return;
        }
        auto hp = parse_host_port(s);
        if (!hp) {
            ctx_.at(key.mark, path,
                    "\"" + yaml::printable(s) +
                        "\": " + yaml::printable(hp.error().message(), 200, false));
            return;
        }
        out = *hp;
    };
}

template <class E>
Decoder Schema::choice(E& out, std::vector<std::pair<const char*, E>> values) {
    return [this, &out, values](const Node& key, const Node& v, const std::string& path) {
        std::string names;
        for (size_t i = 0; i < values.size(); ++i) {
            names +=
                (i ? (i + 1 == values.size() ? " or " : ", ") : "") + std::string(values[i].first);
        }
        std::string s;
        if (!scalar_text(key, v, path, names.c_str(), s, false)) return;
        for (const auto& [name, value] : values) {
            if (s == name) {
                out = value;
                return;
            }
        }
        ctx_.at(key.mark, path, "must be " + names + ", got \"" + yaml::printable(s) + "\"");
    };
}

std::function<std::vector<Entry>()> Schema::network_entries() {
    Proxy& px = cfg_.network.proxy;
    auto proxy = [this, &px] {
        return std::vector<Entry>{
            {"url", text(px.url)},
            {"noProxy", string_list(px.no_proxy, true)},
            {"credentialsFile", text(px.credentials_file)},
            {"credentialsEnv", text(px.credentials_env)},
        };
    };
    auto network = [this, proxy] {
        return std::vector<Entry>{
            {"proxy", section_fn(proxy)},
        };
    };
    return network;
}

std::function<std::vector<Entry>()> Schema::signer_entries() {
    auto signer = [this] {
        SignerIdentity& si = cfg_.update.signer_identity;
        return std::vector<Entry>{
            {"subject", text(si.subject)},
            {"subjectRegexp", text(si.subject_regexp)},
            {"issuer", text(si.issuer)},
            {"sourceRepositoryRef", text(si.source_repository_ref)},
            {"buildConfigUri", text(si.build_config_uri)},
            {"sourceRepositoryUri", text(si.source_repository_uri)},
            {"githubWorkflowName", text(si.github_workflow_name)},
            {"githubWorkflowRef", text(si.github_workflow_ref)},
            {"githubWorkflowRepository", text(si.github_workflow_repository)},
        };
    };
    return signer;
}

std::function<std::vector<Entry>()> Schema::signature_entries() {
    auto signature = [this] {
        Signature& sg = cfg_.update.signature;
        return std::vector<Entry>{
            {"minTimestamps", integer([&sg](int64_t n) { sg.min_timestamps = static_cast<int>(n); },
                                      1, config::kMaxMinTimestamps)},
        };
    };
    return signature;
}

void Schema::root(const Node& root) {
    Server& sv = cfg_.server;
    Update& up = cfg_.update;
    Collector& co = cfg_.collector;
    Supervisor& su = cfg_.supervisor;
    Log& lg = cfg_.log;
    auto network = network_entries();

    auto server = [this, &sv] {
        return std::vector<Entry>{
            {"endpoint", url(sv.endpoint, {"ws", "wss"}, true)},
            {"allowInsecureTransport", boolean(sv.allow_insecure_transport)},
            {"caFile", text(sv.ca_file)},
            {"enrollmentTokenFile", text(sv.enrollment_token_file)},
            {"enrollmentTokenEnv", text(sv.enrollment_token_env)},
            {"hostName", text(sv.host_name)},
            {"heartbeatInterval", duration(sv.heartbeat_interval, true, L::kHeartbeatInterval)},
        };
    };
    auto signer = signer_entries();
    auto signature = signature_entries();
    auto update = [this, &up, signer, signature] {
        return std::vector<Entry>{
            {"requireSignature", boolean(up.require_signature)},
            {"trustedRootFile", abs_path(up.trusted_root_file, true)},
            {"signerIdentity", section_fn(signer)},
            {"signature", section_fn(signature)},
            {"allowedDownloadPrefixes", url_list(up.allowed_download_prefixes, {"http", "https"})},
            {"minimumVersion", version(up.minimum_version)},
            {"allowDowngrade", boolean(up.allow_downgrade)},
            {"maxMinorSkew", integer([&up](int64_t n) { up.max_minor_skew = static_cast<int>(n); },
                                     -1, config::kMaxMinorSkew)},
            {"maxArtifactSize", size(up.max_artifact_size, L::kMaxArtifactSize)},
            {"downloadTimeout", duration_or_unset(up.download_timeout, L::kDownloadTimeout)},
            {"startJitter", duration(up.start_jitter, true, L::kStartJitter)},
            {"retryFor", duration(up.retry_for, true, L::kRetryFor)},
            {"quarantineFor", duration(up.quarantine_for, true, L::kQuarantineFor)},
            {"healthTimeout", duration(up.health_timeout, false, L::kHealthTimeout)},
            {"healthSuccesses", uint(up.health_successes, 1, L::kHealthSuccesses)},
            {"healthInterval", duration(up.health_interval, false, L::kHealthInterval)},
            {"validateArgs", string_list(up.validate_args, false)},
            {"trialPeriod", duration(up.trial_period, true, L::kTrialPeriod)},
            {"trialMaxRestarts", uint(up.trial_max_restarts, 1, L::kTrialMaxRestarts)},
            {"trialMaxBoots", uint(up.trial_max_boots, 1, L::kTrialMaxBoots)},
        };
    };
    auto collector = [this, &co] {
        return std::vector<Entry>{
            {"binary", file_name(co.binary)},
            {"installDir", abs_path(co.install_dir, false)},
            {"stateDir", abs_path(co.state_dir, false)},
            {"activation", choice<Activation>(co.activation, {{"symlink", Activation::symlink},
                                                              {"copy", Activation::copy}})},
            {"keepVersions", uint(co.keep_versions, 0, L::kKeepVersions)},
            {"healthUrl", url(co.health_url, {"http", "https"}, true)},
            {"configFile", abs_path(co.config_file, false)},
        };
    };
    auto supervisor = [this, &su] {
        return std::vector<Entry>{
            {"healthUrl", url(su.health_url, {"http", "https"}, true)},
            {"storageDir", abs_path(su.storage_dir, false)},
        };
    };
    auto container = [this] {
        Container& ct = *cfg_.container;
        return std::vector<Entry>{
            {"supervisorCommand", string_list(ct.supervisor_command, true)},
            {"seedBinary", abs_path(ct.seed_binary, true)},
            {"seedPolicy", choice<SeedPolicy>(ct.seed_policy, {{"newest", SeedPolicy::newest},
                                                               {"image", SeedPolicy::image}})},
            {"stopSignal", choice<StopSignal>(ct.stop_signal, {{"TERM", StopSignal::term},
                                                               {"INT", StopSignal::interrupt}})},
            {"stopTimeout", duration(ct.stop_timeout, false, L::kStopTimeout)},
            {"restartDelay", duration(ct.restart_delay, false, L::kRestartDelay)},
            {"maxRestarts", uint(ct.max_restarts, 1, L::kMaxRestarts)},
            {"restartWindow", duration(ct.restart_window, false, L::kRestartWindow)},
            {"terminationMessagePath", abs_path(ct.termination_message_path, true)},
            {"healthListen", host_port(ct.health_listen)},
            {"metrics", boolean(ct.metrics)},
        };
    };
    // Made only for a mapping: `host:` alone is no section.
    auto host = [this] {
        Host& h = cfg_.host.emplace();
        return std::vector<Entry>{
            {"serviceName", text(h.service_name)},
            {"pollInterval", duration(h.poll_interval, false, kBoundedByRules)},
            {"seedBinary", abs_path(h.seed_binary, true)},
            {"healthListen", host_port(h.health_listen)},
            {"metrics", boolean(h.metrics)},
        };
    };
    auto log = [this, &lg] {
        return std::vector<Entry>{
            {"level", choice<log::Level>(lg.level, {{"debug", log::Level::debug},
                                                    {"info", log::Level::info},
                                                    {"warn", log::Level::warn},
                                                    {"error", log::Level::error}})},
            {"format", choice<log::Format>(
                           lg.format, {{"text", log::Format::text}, {"json", log::Format::json}})},
        };
    };
    Decoder container_section = [this, container](const Node& key, const Node& v,
                                                  const std::string& path) {
        cfg_.container.emplace();
        section_fn(container)(key, v, path);
    };
    mapping(root, "",
            {
                {"server", section_fn(server)},
                {"network", section_fn(network)},
                {"update", section_fn(update)},
                {"collector", section_fn(collector)},
                {"supervisor", section_fn(supervisor)},
                {"container", container_section},
                {"host", section_fn(host)},
                {"log", section_fn(log)},
            });
}

}  // namespace

void decode(const yaml::Node& root, Config& cfg, Context& ctx) {
    Schema(cfg, ctx).root(root);
}

}  // namespace myr::config
