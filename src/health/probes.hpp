// What the probe endpoints answer (spec "Health, probes and rollback"), independent of HTTP.
//
// /healthz is liveness: the main loop's heartbeat is younger than 30 s. A repeating loop timer
// feeds it, so it goes stale only when the loop itself is stuck (long start-up work runs on the
// work queue, so seeding and recovery keep it green).
// /readyz is readiness: the child runs and no swap is in progress.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/time.hpp"
#include "loop/scheduler.hpp"

namespace myr::health {

struct Answer {
    bool ok = false;
    std::string text;  // one short line for people: "child not running: restarting in 4s"
};

// The two questions the server asks on every probe request.
struct Probes {
    std::function<Answer()> healthz;
    std::function<Answer()> readyz;
};

inline constexpr Duration kHeartbeatLimit = std::chrono::seconds(30);

class Heartbeat {
  public:
    explicit Heartbeat(loop::Scheduler& sched, Duration period = std::chrono::seconds(1));
    void beat();
    Duration age() const;
    Answer answer() const;  // 200 while age() < kHeartbeatLimit

  private:
    const Clock& clock_;
    MonoTime last_;
    std::unique_ptr<loop::Timer> timer_;
};

// The readiness inputs the container command gathers: the child's state and the installer's flag.
class Readiness {
  public:
    // `child_running` and `child_text` come from the ChildService.
    Readiness(std::function<bool()> child_running, std::function<std::string()> child_text)
        : child_running_(std::move(child_running)), child_text_(std::move(child_text)) {}
    // The installer sets this around the swap (stop child → switch → start child → health).
    void set_swap_in_progress(bool on) { swap_ = on; }
    Answer answer() const;

  private:
    std::function<bool()> child_running_;
    std::function<std::string()> child_text_;
    bool swap_ = false;
};

}  // namespace myr::health
