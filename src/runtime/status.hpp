// What the updater's OpAMP agent reports about the collector: the versions from seeding and the
// health of the supervisor's service, our child or its systemd unit (opamp.md "What the updater
// reports": healthy = service running).
//
// Until follow() the health says the volume is being prepared; from then on it follows the
// service's change events, and the agent is told only when its state, pid or give-up really
// changed. The status time is the time of that change, so an unchanged service never produces a
// message.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

#include "core/time.hpp"
#include "opamp/providers.hpp"
#include "service/service_controller.hpp"
#include "update/installer.hpp"

namespace myr::runtime {

// The collector versions known after seeding.
struct Versions {
    std::string image;     // X from `seedBinary --version` ("" when unknown)
    std::string active;    // what `current` names
    std::string previous;  // the active marker's previousVersion
};

// The name of the updater's own entry in the health's component map.
inline constexpr const char* kUpdaterComponent = "myriarch-updater";

// The updater's own health from the installer's view: status = `describe` ("0.118.0 on trial
// until …"), healthy while no failure is pending, and the attributes `myriarch.update.*` (state
// always; the others when they apply); the OpAMP encoder cuts each value at kMaxReportText.
opamp::SubHealth updater_health(const update::UpdateView& v, const std::string& describe);

class CollectorStatus : public opamp::StatusProvider {
  public:
    CollectorStatus(const Clock& clock, service::ServiceController& service);

    void set_versions(const Versions& v);
    // The installer's verdict on the running collector, "" when it has none: after a rollback
    // whose health check failed too, the version running is unproven and reported unhealthy with
    // this reason, whatever the service's state.
    void set_install_problem(const std::string& reason);
    // The updater's own health, reported as the component "myriarch-updater" of the health's
    // map (docs/opamp.md, "The updater's own health"); its status time is set here, when it
    // changed.
    void set_updater(opamp::SubHealth h);
    // Called (on the loop) whenever what this provider answers has changed.
    void on_change(std::function<void()> cb) { on_change_ = std::move(cb); }
    // The service has been started: report its state from now on.
    void follow();

    std::string image_collector_version() const override { return versions_.image; }
    std::string collector_version() const override { return versions_.active; }
    opamp::ComponentHealth health() const override;

  private:
    void service_changed();

    const Clock& clock_;
    service::ServiceController& service_;
    Versions versions_;
    std::string install_problem_;
    std::optional<opamp::SubHealth> updater_;
    opamp::ComponentHealth health_;
    bool following_ = false;
    bool reported_ = false;  // the service's state has been reported at least once
    service::State last_state_ = service::State::stopped;
    pid_t last_pid_ = -1;
    bool last_gave_up_ = false;  // its restart policy had given up at the last report
    std::function<void()> on_change_;
};

}  // namespace myr::runtime
