// What the container's OpAMP agent reports about the collector: the versions from seeding and the
// health of the child (opamp.md "What the updater reports": healthy = child running).
//
// Until follow() the health says the volume is being prepared; from then on it follows the child
// service's change events, and the agent is told only when the child's state or pid really
// changed. The status time is the time of that change, so an unchanged child never produces a
// message.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "core/time.hpp"
#include "opamp/providers.hpp"
#include "service/service_controller.hpp"

namespace myr::runtime {

// The collector versions known after seeding.
struct Versions {
    std::string image;     // X from `seedBinary --version` ("" when unknown)
    std::string active;    // what `current` names
    std::string previous;  // the active marker's previousVersion
};

class CollectorStatus : public opamp::StatusProvider {
  public:
    CollectorStatus(const Clock& clock, service::ServiceController& child);

    void set_versions(const Versions& v);
    // The installer's verdict on the running collector, "" when it has none: after a rollback
    // whose health check failed too, the version running is unproven and reported unhealthy with
    // this reason, whatever the child's state.
    void set_install_problem(const std::string& reason);
    // Called (on the loop) whenever what this provider answers has changed.
    void on_change(std::function<void()> cb) { on_change_ = std::move(cb); }
    // The child has been started: report its state from now on.
    void follow();

    std::string image_collector_version() const override { return versions_.image; }
    std::string collector_version() const override { return versions_.active; }
    opamp::ComponentHealth health() const override;

  private:
    void child_changed();

    const Clock& clock_;
    service::ServiceController& child_;
    Versions versions_;
    std::string install_problem_;
    opamp::ComponentHealth health_;
    bool following_ = false;
    bool reported_ = false;  // the child's state has been reported at least once
    service::State last_state_ = service::State::stopped;
    pid_t last_pid_ = -1;
    bool last_gave_up_ = false;  // the child's restart policy had given up at the last report
    std::function<void()> on_change_;
};

}  // namespace myr::runtime
