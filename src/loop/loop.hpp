// The process's libuv loop and its signal watchers. Everything else on the loop goes through the
// Scheduler (scheduler.hpp; UvScheduler is the real one) or owns its handle through loop::Handle.
//
// Callbacks are noexcept: an exception escaping one would unwind through libuv's C frames, so it
// ends the process instead (std::terminate), like any other impossible state.
#pragma once

#include <uv.h>

#include <functional>
#include <string>

#include "core/result.hpp"
#include "core/time.hpp"
#include "loop/handle.hpp"

namespace myr::loop {

// Owns a uv_loop_t. close() (also called by the destructor) closes the handles still open — a test
// may leave a raw one behind — runs the loop until their close callbacks ran and returns
// uv_loop_close()'s result, so a test can assert a clean end with `CHECK(loop.close() == 0)`.
// Every loop::Handle owner (timers, watchers, sockets) must be gone before close(): see handle.hpp.
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
    // pred(). For tests; the product uses run().
    bool run_until(const std::function<bool()>& pred, Duration timeout);
    void stop();
    [[nodiscard]] int close();

  private:
    uv_loop_t loop_{};
    bool closed_ = false;
};

// Watches one signal number. libuv turns the signal into a loop event, so the callback may do
// anything (it is not a signal handler).
class SignalWatcher {
  public:
    explicit SignalWatcher(Loop& loop);
    SignalWatcher(const SignalWatcher&) = delete;
    SignalWatcher& operator=(const SignalWatcher&) = delete;

    [[nodiscard]] Status start(int signum, std::function<void(int signum)> callback);

  private:
    static void on_signal(uv_signal_t* s, int signum) noexcept;

    Handle<uv_signal_t> h_;
    std::function<void(int)> callback_;
};

}  // namespace myr::loop
