// The installer drives the collector's supervisor through this interface, whether it is our child
// (container mode, ChildService) or a systemd unit (host mode). All calls happen on the loop and
// answer through callbacks on the loop, never from inside the call.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace myr::service {

enum class State {
    running,   // the process runs
    starting,  // waiting out the restart backoff (or between fork and the first check)
    stopping,  // TERM sent, waiting for the end (KILL after stopTimeout)
    stopped,   // not running and nothing will restart it
};

const char* to_string(State s);

using Done = std::function<void(Status)>;

class ServiceController {
  public:
    virtual ~ServiceController() = default;

    virtual bool exists() const = 0;
    virtual State state() const = 0;
    // Stops on purpose: no automatic restart until start(). Succeeds once the process is gone.
    virtual void stop(Done done) = 0;
    // Starts now (cancelling a pending backoff). Succeeds once the process was exec'd.
    virtual void start(Done done) = 0;
    // The environment the service runs with ("KEY=value" entries), for the preflight validate run.
    virtual std::vector<std::string> environment() const = 0;
};

// The part of an installation that must not be cut short by a shutdown (after the supervisor was
// stopped, until it runs again). Shutdown waits for its end before stopping the child.
class CriticalSection {
  public:
    virtual ~CriticalSection() = default;
    virtual bool active() const = 0;
    // Runs `cb` once on the loop when the section ends (at once if it is not active).
    virtual void on_end(std::function<void()> cb) = 0;
};

// Until the installer plugs in its own: never in a critical section.
class NoCriticalSection : public CriticalSection {
  public:
    bool active() const override { return false; }
    void on_end(std::function<void()> cb) override { cb(); }
};

}  // namespace myr::service
