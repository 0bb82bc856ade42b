#include "health/probes.hpp"

namespace myr::health {

Heartbeat::Heartbeat(loop::Scheduler& sched, Duration period)
    : clock_(sched), last_(sched.now()), timer_(sched.timer()) {
    timer_->start_repeating(period, [this] { beat(); });
}

void Heartbeat::beat() {
    last_ = clock_.now();
}

Duration Heartbeat::age() const {
    return std::chrono::duration_cast<Duration>(clock_.now() - last_);
}

Answer Heartbeat::answer() const {
    Duration a = age();
    if (a < kHeartbeatLimit) return {true, "ok"};
    return {false, "main loop stalled: last heartbeat " + format_duration(a) + " ago"};
}

Answer Readiness::answer() const {
    if (!ready_()) return {false, text_()};
    return {true, "ready: " + text_()};
}

}  // namespace myr::health
