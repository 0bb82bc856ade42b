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

}  // namespace

std::string UpdaterConfig::yaml() const {
    std::string command;
    for (const auto& a : supervisor_command) command += (command.empty() ? "" : ", ") + quote(a);
    std::string listen = health_port ? "127.0.0.1:" + std::to_string(health_port) : "";
    return "server:\n" + field("endpoint", endpoint) + field("caFile", ca_file) +
           field("enrollmentTokenFile", enrollment_token_file) + "update:\n" +
           field("requireSignature", require_signature ? "true" : "false") + "collector:\n" +
           field("installDir", install_dir) + field("stateDir", state_dir) + "supervisor:\n" +
           field("storageDir", storage_dir) + field("healthUrl", supervisor_health_url) +
           "container:\n" + "  supervisorCommand: [" + command + "]\n" +
           field("seedBinary", seed_binary) + field("seedPolicy", seed_policy) +
           field("stopSignal", stop_signal) + field("stopTimeout", stop_timeout) +
           field("restartDelay", restart_delay) +
           field("maxRestarts", max_restarts ? std::to_string(*max_restarts) : "") +
           field("restartWindow", restart_window) + field("healthListen", quote(listen));
}

std::string UpdaterConfig::write(const std::string& path) const {
    write_file(path, yaml());
    return path;
}

}  // namespace myr::test
