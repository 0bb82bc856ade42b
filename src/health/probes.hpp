// What the probe endpoints answer (spec "Health, probes and rollback"), independent of HTTP.
//
// /healthz is liveness: the main loop's heartbeat is younger than 30 s. A repeating loop timer
// feeds it, so it goes stale only when the loop itself is stuck (long start-up work runs on the
// work queue, so seeding and recovery keep it green).
// /readyz is readiness: the child runs and no install is in its critical section (the runtime
// decides both and says why not).
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

// The questions the server asks on every probe request, and the /metrics text (runtime/ renders
// it; empty function: /metrics is off, container.metrics false, and answers 404).
struct Probes {
    std::function<Answer()> healthz;
    std::function<Answer()> readyz;
    std::function<const std::string&()> metrics;
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

// /readyz from what the runtime gathers: whether the child runs outside an install's critical
// section, and one line saying what the child and the installer do (ChildService::describe,
// update::Installer::describe).
class Readiness {
  public:
    Readiness(std::function<bool()> ready, std::function<std::string()> text)
        : ready_(std::move(ready)), text_(std::move(text)) {}
    Answer answer() const;

  private:
    std::function<bool()> ready_;
    std::function<std::string()> text_;
};

}  // namespace myr::health
