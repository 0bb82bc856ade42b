// An updater.yaml for a test of the `container` command, or of `run` (host mode) when
// host_service_name is set: the fields the tests set, each written only when set, so that
// everything else keeps the product's default.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace myr::test {

struct UpdaterConfig {
    // server
    std::string endpoint = "ws://127.0.0.1:1/v1/opamp";  // nothing listens: the agent retries
    std::string enrollment_token_file;
    std::string ca_file;
    // network.proxy
    std::string proxy_url;
    std::vector<std::string> no_proxy;
    std::string proxy_credentials_file, proxy_credentials_env;
    std::optional<bool> allow_insecure_transport;  // server.allowInsecureTransport
    // update
    bool require_signature = false;
    std::string trusted_root_file;
    std::string signer_subject, signer_issuer;  // update.signerIdentity
    // update.signerIdentity's certificate fields: {"sourceRepositoryRef", "refs/tags/v{version}"}
    std::vector<std::pair<std::string, std::string>> signer_fields;
    std::optional<int> min_timestamps;  // update.signature.minTimestamps
    std::vector<std::string> allowed_download_prefixes;
    std::string minimum_version;
    std::optional<bool> allow_downgrade;
    std::optional<int> max_minor_skew;
    std::string max_artifact_size;
    std::string download_timeout;
    // Off, so that every download starts at once; the jitter's own tests set it.
    std::string start_jitter = "0s";
    // update.retryFor: off, so that a case about one failed download ends at its first failure
    // (update_retry_test.cpp sets it).
    std::string retry_for = "0s";
    std::string quarantine_for;  // update.quarantineFor ("" = the default)
    std::string health_timeout, health_interval;
    std::optional<int> health_successes;
    // No trial by default: the older tests expect an install to end at its commit; the trial's
    // own tests (update_trial_test.cpp) set it.
    std::string trial_period = "0s";
    std::optional<int> trial_max_restarts, trial_max_boots;
    // collector
    std::string install_dir;
    std::string state_dir;
    std::optional<int> keep_versions;
    // nullopt keeps the default URL; "" turns the collector's health check off.
    std::optional<std::string> collector_health_url;
    std::string config_file;
    // supervisor
    std::string storage_dir;
    std::string supervisor_health_url;
    bool supervisor_health_off = false;  // healthUrl: "" (the stand-in serves none by default)
    // container
    std::vector<std::string> supervisor_command;
    std::string seed_binary;
    std::string seed_policy;  // newest, image
    std::string stop_signal;  // TERM, INT
    std::string stop_timeout;
    std::string restart_delay;
    std::optional<int> max_restarts;
    std::string restart_window;
    // container.terminationMessagePath. "" writes "" (off): a test machine that is itself a
    // Kubernetes pod has a /dev/termination-log of its own, which no test may overwrite.
    std::string termination_message_path;
    int health_port = 0;        // container.healthListen on 127.0.0.1; 0 writes "" (probes off)
    std::string health_listen;  // container.healthListen as given ("[::1]:13135"), over health_port
    std::optional<bool> metrics;  // container.metrics (unset: the default, on)
    // host: set host_service_name for `run`; the host section then replaces the container one,
    // and health_port, health_listen, metrics and seed_binary are written as host.healthListen,
    // host.metrics and host.seedBinary.
    std::string host_service_name;
    std::string host_poll_interval;

    std::string yaml() const;
    std::string network() const;    // the network: section, "" when nothing of it is set
    std::string container() const;  // the container: section
    std::string host() const;       // the host: section
    std::string listen() const;     // the health listener, "" when off
    // Writes yaml() to `path`; returns `path`.
    std::string write(const std::string& path) const;
};

}  // namespace myr::test
