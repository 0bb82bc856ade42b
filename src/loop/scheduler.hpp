// The loop seam: time, timers, "answer on the next turn" and the work queue, behind one interface.
//
// Everything asynchronous in the daemon (the child service, the heartbeat, the OpAMP agent, the
// state-file watcher, the net clients, run_capture, start-up, later the installer) takes a
// Scheduler. The product runs on UvScheduler (libuv); tests run on FakeScheduler, where time moves
// only when the test says so, so a 60 s backoff or a 30 s stop timeout is checked in microseconds.
//
// Rules every implementation keeps:
// - everything runs on the loop thread, one callback at a time;
// - a callback never runs from inside the call that scheduled it (post, start, post_work);
// - destroying a Timer cancels it, also from inside its own callback.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "core/time.hpp"

namespace myr::loop {

class Timer {
  public:
    virtual ~Timer() = default;
    // Arms the timer once, `after` from now; re-arming replaces the pending expiry and callback.
    virtual void start(Duration after, std::function<void()> callback) = 0;
    // Fires every `every`, first after `every`, until stop().
    virtual void start_repeating(Duration every, std::function<void()> callback) = 0;
    virtual void stop() = 0;
    virtual bool active() const = 0;
    // Time left until it fires; zero when not armed.
    virtual Duration remaining() const = 0;
};

// The monotonic and wall clocks come with it (Clock), so whatever holds a Scheduler needs no
// second seam for time.
class Scheduler : public Clock {
  public:
    [[nodiscard]] virtual std::unique_ptr<Timer> timer() = 0;
    // Runs `fn` on the loop on a later turn, in the order posted. The way to answer "later" from
    // a call that must not call back inline.
    virtual void post(std::function<void()> fn) = 0;
    // Runs `work` on the thread pool, then `done` on the loop. `work` must not touch loop state.
    // `done` always runs; `cancelled` is true when the job was dropped before it started
    // (shutdown). Tie `done` to its owner with a Guard: it may arrive after the owner is gone.
    virtual void post_work(std::function<void()> work,
                           std::function<void(bool cancelled)> done) = 0;
};

// Ties callbacks to the life of their owner. What bind() wraps does nothing once the Guard is
// destroyed or dropped: posted answers, completions of work-queue jobs, anything that may arrive
// after the object that asked for it is gone. watch() serves the other question, "was I destroyed
// by the handler I just called?".
class Guard {
  public:
    Guard() = default;
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

    template <class F>
    auto bind(F fn) const {
        return [w = std::weak_ptr<const char>(token_), fn = std::move(fn)](auto&&... args) mutable {
            if (w.expired()) return;
            fn(std::forward<decltype(args)>(args)...);
        };
    }
    // Callbacks bound so far will not run; later ones will.
    void drop() { token_ = std::make_shared<const char>(0); }
    std::weak_ptr<const char> watch() const { return token_; }

  private:
    std::shared_ptr<const char> token_ = std::make_shared<const char>(0);
};

}  // namespace myr::loop
