// The life of a mode from start-up to exit, on the seams only (the scheduler, the service
// controller, the installer's critical section), so container mode and host mode (a systemd unit
// in place of our child) share it and it is unit-tested on a fake clock. What each start-up step
// does, and what the installer and the agent are, the mode plugs in (LifecycleSteps).
//
// Stages; start-up is the first three, each one asynchronous step with one completion:
//
// clang-format off
//   stage          event                                  next
//   recovering     recovered                              probing_image
//   recovering     recovery failed                        stopping, exit 1
//   probing_image  the image was probed                   seeding (a failed probe is an input too)
//   seeding        seeded                                 running: installer, service, agent started
//   seeding        seeding failed                         stopping, exit 1
//   running        the service gave up (a crash loop)     stopping, exit 1; inside the critical
//                                                         section: once it ended, if still given up
//                                                         (host mode: reported, no exit)
//   any            TERM or INT                            stopping (a second one changes nothing)
//   any            HUP, USR1 or USR2                      the same stage; forwarded to the service
//   stopping       critical section over; service and     finished(exit code)
//                  agent stopped
// clang-format on
//
// Invariants: the exit code is set once, by the request that began the stop (1 for a failed start
// or a crash loop, 0 for a signal); a completion that arrives in `stopping` is dropped; the
// service and the agent are stopped only once the critical section is over (or never began).
#pragma once

#include <csignal>
#include <functional>
#include <string>

#include "core/result.hpp"
#include "loop/scheduler.hpp"
#include "service/service_controller.hpp"

namespace myr::runtime {

enum class Stage { recovering, probing_image, seeding, running, stopping };

const char* to_string(Stage s);

// The signals a mode's watchers hand to Lifecycle::signal().
inline constexpr int kStopSignals[] = {SIGTERM, SIGINT};
inline constexpr int kForwardedSignals[] = {SIGHUP, SIGUSR1, SIGUSR2};

// What a mode plugs in: the step of each start-up stage, named after it, then the installer and
// the agent. Each start-up step answers once, on the loop, never from inside the call;
// a failed recovery or seeding ends the start with exit 1. The steps keep what they produce (the
// open volume, the seed decision) themselves.
struct LifecycleSteps {
    using Step = std::function<void(std::function<void(Status)> done)>;
    Step recovering;
    // Cannot fail: a failed probe is an input of the seeding decision.
    std::function<void(std::function<void()> done)> probing_image;
    Step seeding;
    // After seeding, before the service starts: builds the installer and returns the critical
    // section the shutdown and the crash-loop exit wait on (nullptr: none).
    std::function<service::CriticalSection*()> start_installer;
    // After the service was started: the agent and what it reports.
    std::function<void()> start_agent;
    // A stop begins: the installer takes no more offers and bounds its critical section.
    std::function<void()> stop_installer;
    // Once the critical section is over, beside the service's stop; `done` runs once the agent
    // said goodbye (at once when there is none).
    std::function<void(std::function<void()> done)> stop_agent;
    // Host mode: the supervisor's unit is systemd's and outlives the updater, so the updater's
    // own exit leaves it running (the critical section is still waited for). Container mode
    // stops its child: nothing else would.
    bool leave_service_running = false;
    // Container mode ends the process when its child crash-loops (the kubelet restarts the pod
    // and says why). Host mode does not: restarting the updater's unit would not restart the
    // supervisor's, which systemd gave up on; the updater stays up, reports the unit unhealthy
    // and may install a version that fixes it.
    bool exit_on_crash_loop = true;
};

class Lifecycle {
  public:
    Lifecycle(loop::Scheduler& sched, service::ServiceController& service, LifecycleSteps steps);
    ~Lifecycle();
    Lifecycle(const Lifecycle&) = delete;
    Lifecycle& operator=(const Lifecycle&) = delete;

    // Enters `recovering`; `finished` runs once, with the exit code, when the stop is complete.
    void start(std::function<void(int exit_code)> finished);
    // TERM and INT stop; HUP, USR1 and USR2 go to the service's main process.
    void signal(int sig);

    Stage stage() const { return stage_; }
    int exit_code() const { return exit_code_; }
    // Why the exit code is not 0, for the termination message: "crash loop", or "start-up failed
    // while recovering: <error>"; "" after TERM or INT.
    const std::string& exit_reason() const { return exit_reason_; }

  private:
    void enter(Stage s);
    void step_done(Stage from, Status st);
    void service_changed();
    void check_crash_loop();
    void stop(int exit_code, const std::string& why, std::string exit_reason = "");
    void stop_service_and_agent();
    void forward(int sig);

    loop::Scheduler& sched_;
    service::ServiceController& service_;
    LifecycleSteps steps_;
    std::function<void(int)> finished_;
    // Before the installer exists there is no critical section to wait for.
    service::NoCriticalSection no_critical_;
    service::CriticalSection* critical_ = &no_critical_;
    Stage stage_ = Stage::recovering;
    bool crash_check_waits_ = false;  // a crash loop waits for the critical section's end
    int pending_stops_ = 0;
    int exit_code_ = 0;
    std::string exit_reason_;
    loop::Guard guard_;
};

}  // namespace myr::runtime
