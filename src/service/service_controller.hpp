// The installer drives the collector's supervisor through this interface, whether it is our child
// (container mode, ChildService) or a systemd unit (host mode). All calls happen on the loop and
// answer through callbacks on the loop, never from inside the call.
//
// Two things are kept apart (dinit's desired and actual state): what the process does now
// (State) and what the controller is meant to do with it (Desired) — so "stopped" can say whether
// it was never started, stopped on request, or given up after a crash loop.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/result.hpp"

namespace myr::service {

enum class State {
    running,             // the process exists
    waiting_to_restart,  // it ended unexpectedly; the restart delay is running
    stopping,            // TERM sent, waiting for the end (KILL after stopTimeout)
    stopped,             // no process, and nothing will start one (see Desired for why)
};

enum class Desired {
    not_started,  // start() was never called
    running,      // started: keep it running, restarting per the restart policy
    stopped,      // stop() was called: no restart until start()
    gave_up,      // the restart policy gave up (a crash loop)
};

const char* to_string(State s);
const char* to_string(Desired d);

using Done = std::function<void(Status)>;

class ServiceController {
  public:
    virtual ~ServiceController() = default;

    virtual State state() const = 0;
    virtual Desired desired() const = 0;
    // Calls `listener` on the loop after state() or desired() changed: once per turn in which
    // something changed, never from inside the call that changed it. Listeners stay for the life
    // of the controller.
    virtual void on_change(std::function<void()> listener) = 0;
    // Stops on purpose: no automatic restart until start(). Succeeds once the process is gone.
    virtual void stop(Done done) = 0;
    // Starts now (cancelling a pending backoff). Succeeds once the process was exec'd.
    virtual void start(Done done) = 0;
    // Passes an operator's signal (HUP, USR1, USR2) to the service's main process, not its group:
    // the supervisor forwards to its collector itself. The pid it went to; none when no process
    // runs.
    virtual std::optional<pid_t> forward(int sig) = 0;

    // What the reports (/readyz, the OpAMP health, /metrics, the exit reason) say of the service,
    // whichever controller runs it.
    // One line: "child running (pid 42)", "unit x.service not running: restarting (2 restarts)".
    virtual std::string describe() const { return to_string(state()); }
    // The main process; -1 when none runs.
    virtual pid_t pid() const { return -1; }
    // Restarts after an unexpected end since the controller began.
    virtual uint64_t restarts() const { return 0; }
    // Why it gave up, "" unless desired() is gave_up.
    virtual std::string give_up_reason() const { return ""; }
};

// The part of an installation that must not be cut short by a shutdown (after the supervisor was
// stopped, until it runs again). Shutdown waits for its end before stopping the child.
class CriticalSection {
  public:
    virtual ~CriticalSection() = default;
    virtual bool active() const = 0;
    // Runs `cb` once on the loop when the section ends (at once if it is not active).
    virtual void on_end(std::function<void()> cb) = 0;
    // A crash loop now is the installer's to handle (a rollback), not a reason to exit: inside
    // the section, and during a new version's trial, which rolls back on a crash loop.
    virtual bool handles_crash_loop() const { return active(); }
};

// Until the installer plugs in its own: never in a critical section.
class NoCriticalSection : public CriticalSection {
  public:
    bool active() const override { return false; }
    void on_end(std::function<void()> cb) override { cb(); }
};

}  // namespace myr::service
