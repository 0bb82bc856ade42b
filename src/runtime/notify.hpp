// Host mode's answers to systemd about the updater's own unit (`Type=notify`, service/sd_notify):
// READY=1 once the updater runs (recovery and seeding done, the agent started), STOPPING=1 when
// its shutdown begins, STATUS= for `systemctl status`, and WATCHDOG=1 from a timer on the loop
// when the unit sets WatchdogSec=: a loop that stops turning misses it, and systemd restarts the
// updater (recovery then runs as after any crash).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "loop/scheduler.hpp"
#include "service/sd_notify.hpp"

namespace myr::runtime {

class UnitNotifier {
  public:
    UnitNotifier(loop::Scheduler& sched, service::Notifier notifier);
    // Starts the watchdog's timer (when the unit has one).
    void start();
    void ready(std::string_view status);
    void stopping();
    void status(std::string_view text);

  private:
    void send(const std::string& message);

    service::Notifier notifier_;
    std::unique_ptr<loop::Timer> watchdog_;
    bool warned_ = false;
};

}  // namespace myr::runtime
