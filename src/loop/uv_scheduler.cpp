#include "loop/uv_scheduler.hpp"

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace myr::loop {

namespace {

[[noreturn]] void abort_with(const char* what, int rc) {
    std::fprintf(stderr, "myriarch-updater: %s: %s\n", what, uv_strerror(rc));
    std::abort();
}

uint64_t millis(Duration d) {
    return d.count() < 0 ? 0 : static_cast<uint64_t>(d.count());
}

class UvTimer final : public Timer {
  public:
    explicit UvTimer(uv_loop_t* loop) : h_(loop) {
        // uv_timer_init only records the loop; it has no failure to report.
        if (!h_) abort_with("uv_timer_init", h_.init_error());
        h_->data = this;
    }

    void start(Duration after, std::function<void()> cb) override { arm(after, Duration(0), cb); }
    void start_repeating(Duration every, std::function<void()> cb) override {
        arm(every, every, cb);
    }
    void stop() override {
        uv_timer_stop(h_.get());
        cb_.reset();
    }
    bool active() const override { return uv_is_active(h_.base()) != 0; }
    Duration remaining() const override {
        if (!active()) return Duration(0);
        return Duration(static_cast<int64_t>(uv_timer_get_due_in(h_.get())));
    }

  private:
    void arm(Duration after, Duration repeat, std::function<void()>& cb) {
        cb_ = std::make_shared<std::function<void()>>(std::move(cb));
        uv_timer_start(h_.get(), &UvTimer::fire, millis(after), millis(repeat));
    }

    static void fire(uv_timer_t* t) noexcept {
        auto* self = static_cast<UvTimer*>(t->data);
        // A reference of our own: the callback may re-arm (replacing cb_) or destroy this timer.
        std::shared_ptr<std::function<void()>> cb = self->cb_;
        if (!uv_is_active(self->h_.base())) self->cb_.reset();  // a one-shot is spent
        if (cb && *cb) (*cb)();
    }

    Handle<uv_timer_t> h_;
    std::shared_ptr<std::function<void()>> cb_;
};

// Idle memory (docs/footprint.md, issue 38). libuv starts its whole pool at the first job (the
// start's hash of the collector), four threads unless UV_THREADPOOL_SIZE says otherwise, and each
// keeps its touched stack pages and a malloc arena of its own dirty for the life of PID 1. Two
// threads are enough: one long job (a hash, a download's commit) and the short ones beside it
// (a name lookup, a file removal). An operator's UV_THREADPOOL_SIZE wins. libuv reads the variable
// once, when the pool starts; it is removed again after the first job so that the supervisor and
// the collector do not inherit it.
constexpr const char* kPoolSize = "2";
bool pool_size_ours = false;

void size_pool() {
    if (std::getenv("UV_THREADPOOL_SIZE") != nullptr) return;
    pool_size_ours = ::setenv("UV_THREADPOOL_SIZE", kPoolSize, 0) == 0;
}

struct WorkJob {
    uv_work_t req{};
    std::function<void()> work;
    std::function<void(bool)> done;
};

}  // namespace

UvScheduler::UvScheduler(uv_loop_t* loop) : loop_(loop), idle_(loop) {
    if (!idle_) abort_with("uv_idle_init", idle_.init_error());
    idle_->data = this;
    size_pool();
#ifdef __GLIBC__
    // The pool's threads allocate little (a hash context, a lookup's answer); an arena per thread
    // would keep its own pages dirty for good. They share the main one instead.
    ::mallopt(M_ARENA_MAX, 1);
#endif
}

UvScheduler::~UvScheduler() = default;

MonoTime UvScheduler::now() const {
    return std::chrono::steady_clock::now();
}

WallTime UvScheduler::wall() const {
    return std::chrono::system_clock::now();
}

std::unique_ptr<Timer> UvScheduler::timer() {
    return std::make_unique<UvTimer>(loop_);
}

void UvScheduler::post(std::function<void()> fn) {
    posted_.push_back(std::move(fn));
    // An active idle handle makes the next iteration poll without blocking and then run on_idle.
    if (!uv_is_active(idle_.base())) uv_idle_start(idle_.get(), &UvScheduler::on_idle);
}

void UvScheduler::on_idle(uv_idle_t* idle) noexcept {
    auto* self = static_cast<UvScheduler*>(idle->data);
    // Only what was posted before this turn: what these callbacks post runs on the next one.
    std::deque<std::function<void()>> batch;
    batch.swap(self->posted_);
    uv_idle_stop(idle);
    while (!batch.empty()) {
        std::function<void()> fn = std::move(batch.front());
        batch.pop_front();
        if (fn) fn();
    }
    // A callback above may have destroyed the scheduler; `batch` is ours, so that is fine as long
    // as nothing touches `self` afterwards.
}

void UvScheduler::post_work(std::function<void()> work, std::function<void(bool)> done) {
    auto* job = new WorkJob{{}, std::move(work), std::move(done)};
    job->req.data = job;
    int rc = uv_queue_work(
        loop_, &job->req, [](uv_work_t* r) noexcept { static_cast<WorkJob*>(r->data)->work(); },
        [](uv_work_t* r, int status) noexcept {
            std::unique_ptr<WorkJob> j(static_cast<WorkJob*>(r->data));
            if (j->done) j->done(status == UV_ECANCELED);
        });
    // uv_queue_work fails only for a null work callback, which cannot happen here.
    if (rc != 0) abort_with("uv_queue_work", rc);
    if (pool_size_ours) {  // the pool has started (uv_queue_work starts it) and read the size
        ::unsetenv("UV_THREADPOOL_SIZE");
        pool_size_ours = false;
    }
}

}  // namespace myr::loop
