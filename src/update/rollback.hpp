// The rollback, a small machine of its own inside the installer's rolling_back state: the journal
// says rolling-back for all its steps and recovery treats them alike (switch back to `from`), so
// they are not states of the installer's table.
//
// clang-format off
//   step         work                                  on failure
//   stop         stop the supervisor (skipped when      logged; the switch happens anyway (the
//                stopped)                               child is gone or going: stop KILLs)
//   switch_back  `current` back to `from`               the end: not switched
//   start        start the supervisor on `from`         the end: switched, not healthy
//   health       the health rounds                      the end: switched, not healthy
// clang-format on
//
// It answers once per start(), on the loop; cancel() (or destruction) drops what is in flight.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "loop/scheduler.hpp"
#include "service/service_controller.hpp"
#include "update/health_rounds.hpp"
#include "update/ports.hpp"

namespace myr::update {

struct RollbackResult {
    bool switched = false;  // `current` names `from` again
    bool healthy = false;   // and it passed its health rounds
    std::string failure;    // the step that failed, and why (when not healthy)
};

// The report's reason for a rolled-back install: `why` it failed, then what the rollback did.
std::string rolled_back_reason(const std::string& why, const std::string& from,
                               const RollbackResult& r);
// For /readyz after a rollback that is not healthy: what runs now, and why it is unproven.
std::string unhealthy_after(const std::string& from, const RollbackResult& r);

class Rollback {
  public:
    Rollback(service::ServiceController& service, VolumeOps& volume, HealthRounds& rounds)
        : service_(service), volume_(volume), rounds_(rounds) {}
    Rollback(const Rollback&) = delete;
    Rollback& operator=(const Rollback&) = delete;

    // `on_switched` runs as soon as `current` names `from` again, before the supervisor starts.
    void start(std::string from, std::function<void()> on_switched,
               std::function<void(RollbackResult)> done);
    void cancel();

  private:
    enum class Step { stop, switch_back, start, health };
    void run(Step s);
    void end(std::string failure);

    service::ServiceController& service_;
    VolumeOps& volume_;
    HealthRounds& rounds_;
    std::string from_;
    std::function<void()> on_switched_;
    std::function<void(RollbackResult)> done_;
    RollbackResult result_;
    std::unique_ptr<update::Step> in_flight_;
    loop::Guard guard_;
};

}  // namespace myr::update
