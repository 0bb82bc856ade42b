// The installer's settings, mapped by the runtime from `updater.yaml` (update.*, collector.*).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "core/url.hpp"

namespace myr::update {

struct Settings {
    std::optional<std::string> minimum_version;  // canonical
    bool allow_downgrade = false;
    int max_minor_skew = 1;          // update.maxMinorSkew; negative: not checked
    std::string supervisor_version;  // canonical: the image's version; "" when unknown
    bool require_signature = true;
    uint64_t max_artifact_size = 1ULL << 30;
    Duration retry_for = std::chrono::hours(6);        // update.retryFor; zero: no retries
    Duration quarantine_for = std::chrono::hours(24);  // update.quarantineFor; zero: no expiry
    Duration health_timeout = std::chrono::minutes(2);
    uint32_t health_successes = 3;
    Duration health_interval = std::chrono::seconds(2);
    Duration probe_timeout = std::chrono::seconds(5);  // one GET; capped by health_interval
    std::optional<Url> supervisor_health_url;
    std::optional<Url> collector_health_url;
    std::vector<std::string> validate_args{"validate", "--config={config}"};
    std::string config_file;  // collector.configFile, for {config}
    uid_t uid = 0;            // the preflight runs as the supervisor's user
    gid_t gid = 0;
    Duration stop_timeout = std::chrono::seconds(30);
    Duration progress_every = std::chrono::seconds(2);
    // update.startJitter; zero here (the config's default is 30 s) so that a test that is not
    // about the jitter starts its download at once.
    Duration start_jitter{0};
    Duration trial_period = std::chrono::minutes(10);  // 0: no trial
    uint32_t trial_max_restarts = 3;
};

}  // namespace myr::update
