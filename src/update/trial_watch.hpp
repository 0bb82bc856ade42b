// The watch over a version on trial (machine.hpp, state trial): after its health check passed,
// the new version must run update.trialPeriod without the supervisor crash-looping. It answers
// once: passed when the period is over, failed when the supervisor ended unexpectedly
// `max_restarts` times within it or the restart policy gave up (its own crash-loop rule).
//
// A stop() on purpose (a rollback, a shutdown) is not an unexpected end: only the service's
// waiting_to_restart (it ended, not asked to) and gave_up count.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/result.hpp"
#include "loop/scheduler.hpp"
#include "service/service_controller.hpp"

namespace myr::update {

class TrialWatch {
  public:
    TrialWatch(loop::Scheduler& sched, service::ServiceController& service);
    TrialWatch(const TrialWatch&) = delete;
    TrialWatch& operator=(const TrialWatch&) = delete;

    // `done` gets success at the end of `period`, or the reason the trial failed ("the supervisor
    // ended 3 times during the trial of 0.117.0 (update.trialMaxRestarts 3)").
    void start(Duration period, uint32_t max_restarts, std::string version,
               std::function<void(Status)> done);
    // Drops the watch without an answer.
    void stop();

  private:
    void service_changed();
    void end(Status st);

    loop::Scheduler& sched_;
    service::ServiceController& service_;
    std::unique_ptr<loop::Timer> deadline_;
    std::function<void(Status)> done_;
    std::string version_;
    uint32_t max_restarts_ = 0;
    uint32_t ends_ = 0;
    bool waiting_seen_ = false;  // the current waiting_to_restart is counted already
    loop::Guard guard_;
};

}  // namespace myr::update
