#include "service/restart_policy.hpp"

#include <algorithm>

namespace myr::service {

RestartPolicy::RestartPolicy(RestartSettings settings, const Clock& clock)
    : settings_(settings), clock_(clock), next_delay_(settings.restart_delay) {}

void RestartPolicy::started() {
    started_at_ = clock_.now();
    running_ = true;
}

void RestartPolicy::reset() {
    ends_.clear();
    next_delay_ = settings_.restart_delay;
}

RestartDecision RestartPolicy::ended_unexpectedly() {
    MonoTime now = clock_.now();
    if (running_ && now - started_at_ >= kStableRun) next_delay_ = settings_.restart_delay;
    running_ = false;

    ends_.push_back(now);
    while (!ends_.empty() && now - ends_.front() > settings_.restart_window) ends_.pop_front();

    RestartDecision d;
    d.recent_ends = static_cast<uint32_t>(ends_.size());
    if (ends_.size() > settings_.max_restarts) {
        d.give_up = true;
        d.reason = std::to_string(ends_.size()) + " unexpected ends within " +
                   format_duration(settings_.restart_window) + " (maxRestarts " +
                   std::to_string(settings_.max_restarts) + ")";
        return d;
    }
    d.delay = next_delay_;
    Duration cap = std::max(kMaxRestartDelay, settings_.restart_delay);
    next_delay_ = std::min(next_delay_ * 2, cap);
    return d;
}

}  // namespace myr::service
