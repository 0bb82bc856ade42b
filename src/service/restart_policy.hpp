// When to restart a child that ended unexpectedly (spec "Process model"). Pure: time comes from a
// Clock, so the policy is tested without waiting.
//
// - The first restart waits `restart_delay`; each further one doubles the wait, up to 60 s (or
//   restart_delay itself when that is longer).
// - A child that ran at least 60 s before it ended resets the wait to restart_delay.
// - More than `max_restarts` unexpected ends within `restart_window` give up: the container exits 1
//   so the runtime restarts it and the crash loop is visible.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

#include "core/time.hpp"

namespace myr::service {

struct RestartSettings {
    Duration restart_delay = std::chrono::seconds(2);
    uint32_t max_restarts = 5;
    Duration restart_window = std::chrono::minutes(10);
};

inline constexpr Duration kMaxRestartDelay = std::chrono::seconds(60);
inline constexpr Duration kStableRun = std::chrono::seconds(60);

struct RestartDecision {
    bool give_up = false;
    Duration delay{0};         // wait before the restart (when not giving up)
    uint32_t recent_ends = 0;  // unexpected ends within the window, this one included
    std::string reason;        // for the log when giving up
};

class RestartPolicy {
  public:
    RestartPolicy(RestartSettings settings, const Clock& clock);

    // The child was started (now).
    void started();
    // The child ended unexpectedly (now): restart after `delay`, or give up.
    RestartDecision ended_unexpectedly();
    // Forgets the ends and the grown delay: a start on purpose (the first, or the installer's
    // after a swap or a rollback) begins a new history, often of another binary.
    void reset();
    // The delay the next unexpected end would get (for logs and probes).
    Duration next_delay() const { return next_delay_; }

  private:
    RestartSettings settings_;
    const Clock& clock_;
    MonoTime started_at_{};
    bool running_ = false;
    Duration next_delay_;
    std::deque<MonoTime> ends_;
};

}  // namespace myr::service
