#include "loop/fake_scheduler.hpp"

#include <algorithm>

namespace myr::loop {

struct FakeScheduler::Slot {
    std::optional<MonoTime> due;
    Duration every{0};  // zero: one-shot
    uint64_t seq = 0;   // arming order, for ties
    std::shared_ptr<std::function<void()>> cb;
};

namespace {

class FakeTimer final : public Timer {
  public:
    FakeTimer(FakeScheduler& s, std::shared_ptr<FakeScheduler::Slot> slot, uint64_t& seq)
        : s_(s), slot_(std::move(slot)), seq_(seq) {}

    void start(Duration after, std::function<void()> cb) override { arm(after, Duration(0), cb); }
    void start_repeating(Duration every, std::function<void()> cb) override {
        // A zero period would fire forever at one instant.
        arm(every, std::max(every, Duration(1)), cb);
    }
    void stop() override {
        slot_->due.reset();
        slot_->cb.reset();
    }
    bool active() const override { return slot_->due.has_value(); }
    Duration remaining() const override {
        if (!slot_->due) return Duration(0);
        return std::chrono::duration_cast<Duration>(*slot_->due - s_.now());
    }

  private:
    void arm(Duration after, Duration every, std::function<void()>& cb) {
        slot_->due = s_.now() + std::max(after, Duration(0));
        slot_->every = every;
        slot_->seq = ++seq_;
        slot_->cb = std::make_shared<std::function<void()>>(std::move(cb));
    }

    FakeScheduler& s_;
    std::shared_ptr<FakeScheduler::Slot> slot_;
    uint64_t& seq_;
};

}  // namespace

// The same starting points as FakeClock: far from zero, so "now - something" never underflows.
FakeScheduler::FakeScheduler()
    : mono_(std::chrono::hours(1000)), wall_(std::chrono::seconds(1'800'000'000)) {}

FakeScheduler::~FakeScheduler() = default;

std::unique_ptr<Timer> FakeScheduler::timer() {
    auto slot = std::make_shared<Slot>();
    slots_.push_back(slot);
    return std::make_unique<FakeTimer>(*this, std::move(slot), arm_seq_);
}

void FakeScheduler::post(std::function<void()> fn) {
    posted_.push_back(std::move(fn));
}

void FakeScheduler::post_work(std::function<void()> work, std::function<void(bool)> done) {
    work_.emplace_back(std::move(work), std::move(done));
}

size_t FakeScheduler::run_pending() {
    size_t ran = 0;
    while (!posted_.empty() || !work_.empty()) {
        if (!posted_.empty()) {
            auto fn = std::move(posted_.front());
            posted_.pop_front();
            if (fn) fn();
        } else {
            auto [work, done] = std::move(work_.front());
            work_.pop_front();
            if (work) work();
            if (done) done(false);
        }
        ++ran;
    }
    return ran;
}

void FakeScheduler::cancel_work() {
    auto jobs = std::move(work_);
    work_.clear();
    for (auto& [work, done] : jobs) {
        if (done) done(true);
    }
}

std::shared_ptr<FakeScheduler::Slot> FakeScheduler::earliest_due_by(MonoTime limit) const {
    std::shared_ptr<Slot> best;
    for (const auto& w : slots_) {
        auto s = w.lock();
        if (!s || !s->due || *s->due > limit) continue;
        if (!best || *s->due < *best->due || (*s->due == *best->due && s->seq < best->seq)) {
            best = s;
        }
    }
    return best;
}

void FakeScheduler::advance(Duration d) {
    run_pending();
    const MonoTime target = mono_ + std::max(d, Duration(0));
    while (auto slot = earliest_due_by(target)) {
        const Duration step = std::chrono::duration_cast<Duration>(*slot->due - mono_);
        mono_ += step;
        wall_ += step;
        auto cb = slot->cb;  // the callback may re-arm or destroy the timer
        if (slot->every > Duration(0)) {
            slot->due = *slot->due + slot->every;
        } else {
            slot->due.reset();
            slot->cb.reset();
        }
        if (cb && *cb) (*cb)();
        run_pending();
    }
    const Duration rest = std::chrono::duration_cast<Duration>(target - mono_);
    mono_ += rest;
    wall_ += rest;
    slots_.erase(std::remove_if(slots_.begin(), slots_.end(),
                                [](const std::weak_ptr<Slot>& w) { return w.expired(); }),
                 slots_.end());
}

std::optional<Duration> FakeScheduler::next_due() const {
    auto s = earliest_due_by(MonoTime::max());
    if (!s) return std::nullopt;
    return std::chrono::duration_cast<Duration>(*s->due - mono_);
}

size_t FakeScheduler::armed_timers() const {
    size_t n = 0;
    for (const auto& w : slots_) {
        auto s = w.lock();
        if (s && s->due) ++n;
    }
    return n;
}

}  // namespace myr::loop
