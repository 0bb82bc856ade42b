#include "updater_config.hpp"

#include "harness.hpp"

namespace myr::test {
namespace {

std::string quote(const std::string& s) {
    return "\"" + s + "\"";
}

// `  key: value\n`, or nothing when `value` is empty.
std::string field(const std::string& key, const std::string& value) {
    return value.empty() ? "" : "  " + key + ": " + value + "\n";
}

std::string boolean(const std::optional<bool>& b) {
    return b ? std::string(*b ? "true" : "false") : std::string();
}

}  // namespace

std::string UpdaterConfig::network() const {
    std::string list;
    for (const auto& e : no_proxy) list += (list.empty() ? "" : ", ") + quote(e);
    std::string body = field("  url", proxy_url.empty() ? "" : quote(proxy_url)) +
                       field("  noProxy", list.empty() ? "" : "[" + list + "]") +
                       field("  credentialsFile", proxy_credentials_file) +
                       field("  credentialsEnv", proxy_credentials_env);
    return body.empty() ? "" : "network:\n  proxy:\n" + body;
}

std::string UpdaterConfig::listen() const {
    std::string l = health_port ? "127.0.0.1:" + std::to_string(health_port) : "";
    return health_listen.empty() ? l : health_listen;
}

std::string UpdaterConfig::container() const {
    std::string command;
    for (const auto& a : supervisor_command) command += (command.empty() ? "" : ", ") + quote(a);
    return "container:\n  supervisorCommand: [" + command + "]\n" +
           field("seedBinary", seed_binary) + field("seedPolicy", seed_policy) +
           field("stopSignal", stop_signal) + field("stopTimeout", stop_timeout) +
           field("restartDelay", restart_delay) +
           field("maxRestarts", max_restarts ? std::to_string(*max_restarts) : "") +
           field("restartWindow", restart_window) +
           "  terminationMessagePath: " + quote(termination_message_path) + "\n" +
           field("healthListen", quote(listen())) + field("metrics", boolean(metrics));
}

// Host mode has no probe server unless healthListen is given: an empty one is left out.
std::string UpdaterConfig::host() const {
    const std::string l = listen();
    return "host:\n" + field("serviceName", host_service_name) +
           field("pollInterval", host_poll_interval) + field("seedBinary", seed_binary) +
           field("healthListen", l.empty() ? "" : quote(l)) + field("metrics", boolean(metrics));
}

std::string UpdaterConfig::yaml() const {
    std::string prefixes;
    for (const auto& p : allowed_download_prefixes) {
        prefixes += (prefixes.empty() ? "" : ", ") + quote(p);
    }
    std::string signer;
    if (!signer_subject.empty() || !signer_issuer.empty() || !signer_fields.empty()) {
        signer = "  signerIdentity:\n" +
                 (signer_subject.empty() ? "" : "    subject: " + quote(signer_subject) + "\n") +
                 (signer_issuer.empty() ? "" : "    issuer: " + quote(signer_issuer) + "\n");
        for (const auto& [key, value] : signer_fields) {
            signer += "    " + key + ": " + quote(value) + "\n";
        }
    }
    auto number = [](const std::optional<int>& n) { return n ? std::to_string(*n) : ""; };
    return "server:\n" + field("endpoint", endpoint) + field("caFile", ca_file) +
           field("enrollmentTokenFile", enrollment_token_file) +
           field("allowInsecureTransport", boolean(allow_insecure_transport)) + network() +
           "update:\n" + field("requireSignature", require_signature ? "true" : "false") +
           field("trustedRootFile", trusted_root_file) + signer +
           field("signature",
                 min_timestamps ? "{minTimestamps: " + number(min_timestamps) + "}" : "") +
           field("allowedDownloadPrefixes", prefixes.empty() ? "" : "[" + prefixes + "]") +
           field("minimumVersion", minimum_version) +
           field("allowDowngrade", boolean(allow_downgrade)) +
           field("maxMinorSkew", number(max_minor_skew)) +
           field("maxArtifactSize", max_artifact_size) +
           field("downloadTimeout", download_timeout) + field("startJitter", start_jitter) +
           field("retryFor", retry_for) + field("quarantineFor", quarantine_for) +
           field("healthTimeout", health_timeout) +
           field("healthSuccesses", number(health_successes)) +
           field("healthInterval", health_interval) + field("trialPeriod", trial_period) +
           field("trialMaxRestarts", number(trial_max_restarts)) +
           field("trialMaxBoots", number(trial_max_boots)) + "collector:\n" +
           field("installDir", install_dir) + field("stateDir", state_dir) +
           field("keepVersions", number(keep_versions)) +
           (collector_health_url ? "  healthUrl: " + quote(*collector_health_url) + "\n" : "") +
           field("configFile", config_file) + "supervisor:\n" + field("storageDir", storage_dir) +
           (supervisor_health_off ? "  healthUrl: \"\"\n"
                                  : field("healthUrl", supervisor_health_url)) +
           (host_service_name.empty() ? container() : host());
}

std::string UpdaterConfig::write(const std::string& path) const {
    write_file(path, yaml());
    return path;
}

}  // namespace myr::test
