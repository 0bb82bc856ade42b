// An updater.yaml for a test of the `container` command: the fields the tests set, each written
// only when set, so that everything else keeps the product's default.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace myr::test {

struct UpdaterConfig {
    // server
    std::string endpoint = "ws://127.0.0.1:1/v1/opamp";  // nothing listens: the agent retries
    std::string enrollment_token_file;
    std::string ca_file;
    // update
    bool require_signature = false;
    // collector
    std::string install_dir;
    std::string state_dir;
    // supervisor
    std::string storage_dir;
    std::string supervisor_health_url;
    // container
    std::vector<std::string> supervisor_command;
    std::string seed_binary;
    std::string seed_policy;  // newest, image
    std::string stop_signal;  // TERM, INT
    std::string stop_timeout;
    std::string restart_delay;
    std::optional<int> max_restarts;
    std::string restart_window;
    int health_port = 0;  // container.healthListen on 127.0.0.1; 0 writes "" (probes off)

    std::string yaml() const;
    // Writes yaml() to `path`; returns `path`.
    std::string write(const std::string& path) const;
};

}  // namespace myr::test
