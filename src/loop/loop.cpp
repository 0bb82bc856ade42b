#include "loop/loop.hpp"

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace myr::loop {

namespace {

[[noreturn]] void abort_with(const char* what, int rc) {
    std::fprintf(stderr, "myriarch-updater: %s: %s\n", what, uv_strerror(rc));
    std::abort();
}

}  // namespace

namespace detail {

void closed_twice() {
    std::fprintf(stderr,
                 "myriarch-updater: a libuv handle outlived Loop::close() and would be closed "
                 "twice (destroy its owner before closing the loop)\n");
    std::abort();
}

}  // namespace detail

Loop::Loop() {
    int rc = uv_loop_init(&loop_);
    // Without a loop nothing can run; this only fails when the kernel refuses an epoll/kqueue fd.
    if (rc != 0) abort_with("uv_loop_init", rc);
}

Loop::~Loop() {
    if (!closed_) (void)close();
}

void Loop::run() {
    uv_run(&loop_, UV_RUN_DEFAULT);
}

bool Loop::run_until(const std::function<bool()>& pred, Duration timeout) {
    // A guard timer wakes the loop at least every 10 ms so the predicate is re-checked even when no
    // other event arrives, and ends the wait at the deadline.
    Handle<uv_timer_t> guard(&loop_);
    uv_timer_start(
        guard.get(), [](uv_timer_t*) noexcept {}, 10, 10);
    uint64_t deadline = uv_now(&loop_) + static_cast<uint64_t>(timeout.count());
    bool ok = pred();
    while (!ok) {
        uv_run(&loop_, UV_RUN_ONCE);
        ok = pred();
        uv_update_time(&loop_);
        if (uv_now(&loop_) >= deadline) break;
    }
    guard.close();
    uv_run(&loop_, UV_RUN_NOWAIT);
    return ok;
}

void Loop::stop() {
    uv_stop(&loop_);
}

int Loop::close() {
    if (closed_) return 0;
    uv_walk(
        &loop_,
        [](uv_handle_t* h, void*) noexcept {
            if (!uv_is_closing(h)) uv_close(h, nullptr);
        },
        nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    int rc = uv_loop_close(&loop_);
    closed_ = rc == 0;
    return rc;
}

// SignalWatcher

SignalWatcher::SignalWatcher(Loop& loop) : h_(loop.get()) {
    if (h_) h_->data = this;
}

Status SignalWatcher::start(int signum, std::function<void(int)> callback) {
    const std::string what = "watch signal " + std::to_string(signum);
    if (!h_) return fail(what + ": " + uv_strerror(h_.init_error()));
    callback_ = std::move(callback);
    int rc = uv_signal_start(h_.get(), &SignalWatcher::on_signal, signum);
    if (rc != 0) return fail(what + ": " + uv_strerror(rc));
    return {};
}

void SignalWatcher::on_signal(uv_signal_t* s, int signum) noexcept {
    auto* self = static_cast<SignalWatcher*>(s->data);
    // A copy: the callback may destroy this watcher.
    auto cb = self->callback_;
    if (cb) cb(signum);
}

}  // namespace myr::loop
