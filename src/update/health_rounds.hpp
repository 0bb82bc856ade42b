// Health rounds: is the supervisor up, and does every health URL answer 2xx? A round asks each
// probe in order (the first failure ends it); `successes` rounds in a row, one every `interval`,
// make the verdict healthy. A failed round resets the count. The verdict is unhealthy at the
// deadline, or at once when the service gave up restarting (waiting would only delay the
// rollback). Used by health_checking and by the rollback's last step alike.
//
// It answers once per start(), on the loop, never from inside start(); stop() (or destruction)
// cancels the timers and the probe in flight, and no answer comes after it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "core/url.hpp"
#include "loop/scheduler.hpp"
#include "service/service_controller.hpp"
#include "update/ports.hpp"

namespace myr::update {

struct HealthCheck {
    std::string name;  // in the failure text: "collector http://127.0.0.1:13133/: 503"
    Url url;
};

struct RoundsSettings {
    Duration timeout = std::chrono::minutes(2);  // for the whole verdict
    uint32_t successes = 3;                      // rounds in a row
    Duration interval = std::chrono::seconds(2);
    Duration probe_timeout = std::chrono::seconds(5);  // one GET; capped by interval
};

struct HealthVerdict {
    bool healthy = false;
    std::string why;  // when unhealthy: the last failure and how often in a row, or the count
    bool crash_loop = false;  // unhealthy because the service gave up restarting
};

class HealthRounds {
  public:
    HealthRounds(loop::Scheduler& sched, HealthProbe& probe,
                 const service::ServiceController& service, std::vector<HealthCheck> checks,
                 RoundsSettings settings);
    HealthRounds(const HealthRounds&) = delete;
    HealthRounds& operator=(const HealthRounds&) = delete;

    // Starts over (a running one is cancelled): the first round after one interval.
    void start(std::function<void(HealthVerdict)> done);
    void stop();

  private:
    void round();
    void probe_next();
    void round_result(bool passed, const std::string& why);
    void give_up();
    void answer(HealthVerdict v);

    loop::Scheduler& sched_;
    HealthProbe& probe_;
    const service::ServiceController& service_;
    std::vector<HealthCheck> checks_;
    RoundsSettings settings_;

    std::unique_ptr<loop::Timer> round_timer_;
    std::unique_ptr<loop::Timer> deadline_;
    std::unique_ptr<Step> in_flight_;
    std::function<void(HealthVerdict)> done_;
    uint32_t passes_ = 0;
    std::string last_failure_;
    uint32_t failure_repeats_ = 0;
    size_t next_check_ = 0;
    loop::Guard guard_;  // dropped by stop(): a late probe answer or timer does nothing
};

}  // namespace myr::update
