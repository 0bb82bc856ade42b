#include "loop/loop.hpp"

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace myr::loop {

namespace {

uv_handle_t* as_handle(void* h) {
    return static_cast<uv_handle_t*>(h);
}

void abort_with(const char* what, int rc) {
    std::fprintf(stderr, "myriarch-updater: %s: %s\n", what, uv_strerror(rc));
    std::abort();
}

}  // namespace

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
    uv_timer_t guard;
    uv_timer_init(&loop_, &guard);
    uv_timer_start(
        &guard, [](uv_timer_t*) {}, 10, 10);
    uint64_t deadline = uv_now(&loop_) + static_cast<uint64_t>(timeout.count());
    bool ok = pred();
    while (!ok) {
        uv_run(&loop_, UV_RUN_ONCE);
        ok = pred();
        uv_update_time(&loop_);
        if (uv_now(&loop_) >= deadline) break;
    }
    uv_close(as_handle(&guard), nullptr);
    uv_run(&loop_, UV_RUN_NOWAIT);
    return ok;
}

void Loop::stop() {
    uv_stop(&loop_);
}

int Loop::close() {
    if (closed_) return 0;
    // Close whatever is still open (wrappers destroyed later only clear their data).
    uv_walk(
        &loop_,
        [](uv_handle_t* h, void*) {
            if (!uv_is_closing(h)) uv_close(h, nullptr);
        },
        nullptr);
    uv_run(&loop_, UV_RUN_DEFAULT);
    int rc = uv_loop_close(&loop_);
    closed_ = rc == 0;
    return rc;
}

// Timer

struct Timer::Handle {
    uv_timer_t timer;
    std::function<void()> callback;
};

Timer::Timer(Loop& loop) : h_(new Handle()) {
    uv_timer_init(loop.get(), &h_->timer);
    h_->timer.data = h_;
}

Timer::~Timer() {
    uv_timer_stop(&h_->timer);
    h_->callback = nullptr;
    // data keeps pointing at the Handle only for the close callback to free it.
    uv_close(as_handle(&h_->timer),
             [](uv_handle_t* handle) { delete static_cast<Handle*>(handle->data); });
}

void Timer::start(Duration after, std::function<void()> callback, Duration repeat) {
    h_->callback = std::move(callback);
    auto ms = [](Duration d) { return d.count() < 0 ? 0 : static_cast<uint64_t>(d.count()); };
    uv_timer_start(
        &h_->timer,
        [](uv_timer_t* t) {
            // A copy: the callback may destroy this Timer and with it the stored function.
            auto cb = static_cast<Handle*>(t->data)->callback;
            if (cb) cb();
        },
        ms(after), ms(repeat));
}

void Timer::stop() {
    uv_timer_stop(&h_->timer);
    h_->callback = nullptr;
}

bool Timer::active() const {
    return uv_is_active(as_handle(&h_->timer)) != 0;
}

Duration Timer::remaining() const {
    if (!active()) return Duration(0);
    uint64_t due = uv_timer_get_due_in(&h_->timer);
    return Duration(static_cast<int64_t>(due));
}

// SignalWatcher

struct SignalWatcher::Handle {
    uv_signal_t signal;
    std::function<void(int)> callback;
};

SignalWatcher::SignalWatcher(Loop& loop) : h_(new Handle()) {
    uv_signal_init(loop.get(), &h_->signal);
    h_->signal.data = h_;
}

SignalWatcher::~SignalWatcher() {
    uv_signal_stop(&h_->signal);
    h_->callback = nullptr;
    uv_close(as_handle(&h_->signal),
             [](uv_handle_t* handle) { delete static_cast<Handle*>(handle->data); });
}

Status SignalWatcher::start(int signum, std::function<void(int)> callback) {
    h_->callback = std::move(callback);
    int rc = uv_signal_start(
        &h_->signal,
        [](uv_signal_t* s, int signum) {
            auto cb = static_cast<Handle*>(s->data)->callback;
            if (cb) cb(signum);
        },
        signum);
    if (rc != 0) {
        return fail(
            Error(std::string("watch signal ") + std::to_string(signum) + ": " + uv_strerror(rc)));
    }
    return {};
}

void SignalWatcher::stop() {
    uv_signal_stop(&h_->signal);
    h_->callback = nullptr;
}

// Work queue

namespace {

struct WorkJob {
    uv_work_t req;
    std::function<void()> work;
    std::function<void(bool)> done;
};

}  // namespace

void post_work(Loop& loop, std::function<void()> work, std::function<void(bool cancelled)> done) {
    auto* job = new WorkJob{{}, std::move(work), std::move(done)};
    job->req.data = job;
    int rc = uv_queue_work(
        loop.get(), &job->req, [](uv_work_t* r) { static_cast<WorkJob*>(r->data)->work(); },
        [](uv_work_t* r, int status) {
            auto* j = static_cast<WorkJob*>(r->data);
            if (j->done) j->done(status == UV_ECANCELED);
            delete j;
        });
    if (rc != 0) {
        // uv_queue_work only fails for a null work callback, which cannot happen here.
        abort_with("uv_queue_work", rc);
    }
}

Duration loop_now(Loop& loop) {
    return Duration(static_cast<int64_t>(uv_now(loop.get())));
}

}  // namespace myr::loop
