// A Scheduler for tests: time moves only in advance(), posted callbacks and work-queue jobs wait
// in a queue until the test runs them. What takes a minute on the real loop takes microseconds
// here, and every interleaving a test wants is spelled out in it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "loop/scheduler.hpp"

namespace myr::loop {

class FakeScheduler final : public Scheduler {
  public:
    FakeScheduler();
    ~FakeScheduler() override;

    MonoTime now() const override { return mono_; }
    WallTime wall() const override { return wall_; }
    std::unique_ptr<Timer> timer() override;
    void post(std::function<void()> fn) override;
    void post_work(std::function<void()> work, std::function<void(bool cancelled)> done) override;

    // Runs what is queued, then moves time forward by `d`: each due timer fires at its own due
    // time, earliest first (ties in the order they were armed), and what it posts runs before the
    // next one fires.
    void advance(Duration d);
    // Runs posted callbacks and queued work (work, then done(false)) until nothing is queued,
    // including what they queue themselves. Returns how many ran.
    size_t run_pending();
    // Drops queued work as a shutdown would: each `done(true)` runs, its `work` never.
    void cancel_work();

    size_t posted() const { return posted_.size(); }
    size_t queued_work() const { return work_.size(); }
    // Time until the earliest armed timer.
    std::optional<Duration> next_due() const;
    size_t armed_timers() const;

    struct Slot;  // one timer's state, shared with its Timer object

  private:
    std::shared_ptr<Slot> earliest_due_by(MonoTime limit) const;

    MonoTime mono_;
    WallTime wall_;
    uint64_t arm_seq_ = 0;
    std::vector<std::weak_ptr<Slot>> slots_;
    std::deque<std::function<void()>> posted_;
    std::deque<std::pair<std::function<void()>, std::function<void(bool)>>> work_;
};

}  // namespace myr::loop
