#include "net/timer.hpp"

#include <utility>

namespace myr::net {

struct Timer::Handle {
    uv_timer_t timer;
    std::function<void()> callback;
};

Timer::Timer(uv_loop_t* loop) : h_(new Handle()) {
    uv_timer_init(loop, &h_->timer);
    h_->timer.data = h_;
}

Timer::~Timer() {
    h_->callback = nullptr;
    uv_timer_stop(&h_->timer);
    uv_close(reinterpret_cast<uv_handle_t*>(&h_->timer),
             [](uv_handle_t* handle) { delete static_cast<Handle*>(handle->data); });
}

void Timer::start(Duration after, std::function<void()> callback) {
    h_->callback = std::move(callback);
    const auto ms = after.count() < 0 ? 0 : static_cast<uint64_t>(after.count());
    uv_timer_start(
        &h_->timer,
        [](uv_timer_t* t) {
            // A copy: the callback may destroy this Timer, and with it the stored function.
            auto cb = static_cast<Handle*>(t->data)->callback;
            if (cb) cb();
        },
        ms, 0);
}

void Timer::stop() {
    uv_timer_stop(&h_->timer);
    h_->callback = nullptr;
}

bool Timer::active() const {
    return uv_is_active(reinterpret_cast<const uv_handle_t*>(&h_->timer));
}

}  // namespace myr::net
