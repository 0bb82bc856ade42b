#include "opamp/transport.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace myr::opamp {

namespace {

// Owns one uv_timer_t; the handle memory is freed in its close callback, after libuv is done.
class UvTimer : public Timer {
  public:
    explicit UvTimer(uv_loop_t* loop) : h_(new uv_timer_t) {
        uv_timer_init(loop, h_);
        h_->data = this;
    }
    ~UvTimer() override {
        h_->data = nullptr;
        uv_timer_stop(h_);
        uv_close(reinterpret_cast<uv_handle_t*>(h_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    }
    void start(Duration after, std::function<void()> cb) override {
        cb_ = std::move(cb);
        uv_timer_start(h_, on_timer, static_cast<uint64_t>(std::max<int64_t>(after.count(), 0)), 0);
    }
    void stop() override { uv_timer_stop(h_); }

  private:
    static void on_timer(uv_timer_t* h) noexcept {
        auto* self = static_cast<UvTimer*>(h->data);
        if (!self) return;
        // Move the callback out first: it may restart this timer with a new one.
        auto cb = std::move(self->cb_);
        if (cb) cb();
    }
    uv_timer_t* h_;
    std::function<void()> cb_;
};

}  // namespace

std::unique_ptr<Timer> UvTimerFactory::create() {
    return std::make_unique<UvTimer>(loop_);
}

Backoff::Backoff(std::function<double()> random01) : Backoff(Params{}, std::move(random01)) {}

Backoff::Backoff(Params p, std::function<double()> random01)
    : p_(p), random01_(std::move(random01)) {}

double Backoff::base_ms(unsigned n) const {
    double b =
        static_cast<double>(p_.initial.count()) * std::pow(p_.factor, static_cast<double>(n));
    return std::min(b, static_cast<double>(p_.max.count()));
}

std::pair<Duration, Duration> Backoff::bounds(unsigned n) const {
    const double b = base_ms(n);
    const double cap = static_cast<double>(p_.max.count());
    return {Duration(static_cast<int64_t>(std::floor(b * (1 - p_.jitter)))),
            Duration(static_cast<int64_t>(std::ceil(std::min(b * (1 + p_.jitter), cap))))};
}

Duration Backoff::next() {
    const double b = base_ms(attempt_);
    if (attempt_ < 1000) ++attempt_;
    const double r = random01_ ? random01_() : 0.5;
    const double d = b * (1 + p_.jitter * (2 * r - 1));
    return Duration(static_cast<int64_t>(std::min(d, static_cast<double>(p_.max.count()))));
}

std::function<double()> default_random01() {
    auto gen = std::make_shared<std::mt19937_64>(std::random_device{}());
    return [gen] { return std::uniform_real_distribution<double>(0.0, 1.0)(*gen); };
}

}  // namespace myr::opamp
