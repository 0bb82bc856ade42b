// What the container's OpAMP agent reports about the collector: the versions from seeding and the
// health of the child (opamp.md "What the updater reports": healthy = child running).
//
// The child service has no change events, so a one-second loop timer samples it; the agent is told
// only when the state really changed, and the status time is the time of that change, so an
// unchanged child never produces a message.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cli/container_volume.hpp"
#include "loop/scheduler.hpp"
#include "opamp/providers.hpp"
#include "service/child_service.hpp"

namespace myr::cli {

class ContainerStatus : public opamp::StatusProvider {
  public:
    ContainerStatus(loop::Scheduler& sched, const service::ChildService& child);

    // Seeding is done: the versions are known from now on.
    void set_volume(const VolumeState& v);
    // Called (on the loop) whenever what this provider answers has changed.
    void on_change(std::function<void()> cb) { on_change_ = std::move(cb); }
    void start_sampling();

    std::string image_collector_version() const override { return volume_.image_version; }
    std::string collector_version() const override { return volume_.active_version; }
    opamp::ComponentHealth health() const override { return health_; }

  private:
    void sample();

    const service::ChildService& child_;
    VolumeState volume_;
    opamp::ComponentHealth health_;
    service::State last_state_ = service::State::stopped;
    pid_t last_pid_ = -1;
    std::unique_ptr<loop::Timer> timer_;
    std::function<void()> on_change_;
};

}  // namespace myr::cli
