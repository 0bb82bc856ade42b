// RAII wrappers over libuv: one Loop per process, and the handles the daemon uses on it.
//
// A handle is owned by one object. Its destructor stops it, clears `data` and calls uv_close; the
// memory is freed in the close callback, never before (libuv's handle lifecycle). So destroying a
// wrapper is safe at any time on the loop thread, also from inside its own callback. Callbacks are
// noexcept: an exception escaping one would unwind through libuv's C frames.
#pragma once

#include <uv.h>

#include <functional>
#include <string>

#include "core/result.hpp"
#include "core/time.hpp"

namespace myr::loop {

// Owns a uv_loop_t. close() (also called by the destructor) walks the handles still open, closes
// them, runs the loop until their close callbacks ran and returns uv_loop_close()'s result, so a
// test can assert a clean end with `CHECK(loop.close() == 0)`.
class Loop {
  public:
    Loop();
    ~Loop();
    Loop(const Loop&) = delete;
    Loop& operator=(const Loop&) = delete;

    uv_loop_t* get() { return &loop_; }
    // Runs until stop() or until nothing is left to do.
    void run();
    // Runs until `pred` is true (checked after every loop iteration) or `timeout` passes; returns
    // pred(). For tests and for the shutdown drain; the product otherwise uses run().
    bool run_until(const std::function<bool()>& pred, Duration timeout);
    void stop();
    [[nodiscard]] int close();

  private:
    uv_loop_t loop_{};
    bool closed_ = false;
};

// A timer: one-shot (`repeat` zero) or repeating. (Re)arming replaces the earlier callback.
class Timer {
  public:
    explicit Timer(Loop& loop);
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;

    void start(Duration after, std::function<void()> callback, Duration repeat = Duration(0));
    void stop();
    bool active() const;
    // Time left until it fires, zero when not armed.
    Duration remaining() const;

  private:
    struct Handle;
    Handle* h_;
};

// Watches one signal number. libuv turns the signal into a loop event, so the callback may do
// anything (it is not a signal handler).
class SignalWatcher {
  public:
    explicit SignalWatcher(Loop& loop);
    ~SignalWatcher();
    SignalWatcher(const SignalWatcher&) = delete;
    SignalWatcher& operator=(const SignalWatcher&) = delete;

    [[nodiscard]] Status start(int signum, std::function<void(int signum)> callback);
    void stop();

  private:
    struct Handle;
    Handle* h_;
};

// Runs `work` on libuv's thread pool and then `done` on the loop thread. The work function must not
// touch loop state; it hands its result to `done` through captured state it owns (e.g. a
// shared_ptr). `done` always runs, also when the loop is closing (then with `cancelled` true,
// when libuv cancelled the job before it started).
void post_work(Loop& loop, std::function<void()> work, std::function<void(bool cancelled)> done);

// The loop's own monotonic clock (uv_now), for code that compares against timer deadlines.
Duration loop_now(Loop& loop);

}  // namespace myr::loop
