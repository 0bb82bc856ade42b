// The runtime's shutdown waits for the installer's critical section to end, and no longer than a
// bound: after it the runtime stops the child anyway and the next start's recovery finishes the
// job. Once released after a shutdown, nobody waits again.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/time.hpp"
#include "loop/scheduler.hpp"

namespace myr::update {

class EndWait {
  public:
    explicit EndWait(loop::Scheduler& sched) : bound_(sched.timer()) {}

    // Waiting ends at `limit` from now even if the section does not; `on_expiry` runs then.
    void bound(Duration limit, std::function<void()> on_expiry) {
        bound_->start(limit, std::move(on_expiry));
    }
    void add(std::function<void()> waiter) { waiters_.push_back(std::move(waiter)); }
    // The section is over (or the bound passed): every waiter runs.
    void release(bool final);
    bool released() const { return released_; }

  private:
    std::unique_ptr<loop::Timer> bound_;
    std::vector<std::function<void()>> waiters_;
    bool released_ = false;
};

inline void EndWait::release(bool final) {
    bound_->stop();
    if (final) released_ = true;
    auto waiters = std::move(waiters_);
    waiters_.clear();
    for (auto& w : waiters) w();
}

}  // namespace myr::update
