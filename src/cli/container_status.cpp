#include "cli/container_status.hpp"

#include "core/time.hpp"

namespace myr::cli {
namespace {

uint64_t now_unix_nano() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(wall_now().time_since_epoch())
            .count());
}

}  // namespace

ContainerStatus::ContainerStatus(loop::Scheduler& sched, const service::ChildService& child)
    : child_(child), timer_(sched.timer()) {
    health_.healthy = false;
    health_.status = "starting: preparing the collector volume";
    health_.status_time_unix_nano = now_unix_nano();
}

void ContainerStatus::set_volume(const VolumeState& v) {
    volume_ = v;
    if (on_change_) on_change_();
}

void ContainerStatus::start_sampling() {
    sample();
    timer_->start_repeating(std::chrono::seconds(1), [this] { sample(); });
}

void ContainerStatus::sample() {
    service::State state = child_.state();
    pid_t pid = child_.pid();
    if (state == last_state_ && pid == last_pid_ && health_.status_time_unix_nano != 0 &&
        health_.status.rfind("starting:", 0) != 0) {
        return;
    }
    bool was_running = last_state_ == service::State::running;
    last_state_ = state;
    last_pid_ = pid;
    uint64_t now = now_unix_nano();
    health_.healthy = state == service::State::running;
    health_.status = "supervisor " + child_.describe();
    health_.status_time_unix_nano = now;
    if (health_.healthy && (!was_running || health_.start_time_unix_nano == 0)) {
        health_.start_time_unix_nano = now;
    }
    if (was_running && !health_.healthy) {
        health_.last_error = "supervisor ended: " + child_.describe();
    }
    if (on_change_) on_change_();
}

}  // namespace myr::cli
