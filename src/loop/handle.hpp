// The one owner of a libuv handle (libuv's handle lifecycle, as uvw does it): every handle the
// daemon opens — timers, the signal watchers, the capture pipe, sockets — lives in a Handle<H>.
//
// libuv may touch a handle until its close callback has run, so the memory is freed there and
// never before. While the handle is open, `data` belongs to the user: the trampolines find their
// object through it. close() takes `data` back (from then on it names the memory to free); libuv
// runs no callback of a closing handle except its close callback, and cancelled requests report
// through their own `data`. close() is safe at any time on the loop thread, also from inside the
// handle's own callback; an optional `closed` hook runs from the close callback, after libuv is
// done with the handle (a connection frees itself there).
//
// An owner must be closed or destroyed before Loop::close(): the loop cannot tell our handles from
// anybody else's and closes what is still open, so an owner destroyed afterwards would close its
// handle a second time. That is a bug in the caller and aborts with a message.
#pragma once

#include <uv.h>

#include <functional>
#include <utility>

namespace myr::loop {

namespace detail {
inline int init(uv_loop_t* l, uv_timer_t* h) {
    return uv_timer_init(l, h);
}
inline int init(uv_loop_t* l, uv_signal_t* h) {
    return uv_signal_init(l, h);
}
inline int init(uv_loop_t* l, uv_idle_t* h) {
    return uv_idle_init(l, h);
}
inline int init(uv_loop_t* l, uv_tcp_t* h) {
    return uv_tcp_init(l, h);
}
inline int init(uv_loop_t* l, uv_pipe_t* h) {
    return uv_pipe_init(l, h, 0);
}

// What the close callback frees: the handle and the owner's `closed` hook.
template <class H>
struct Box {
    H handle{};
    std::function<void()> closed;
};

[[noreturn]] void closed_twice();
}  // namespace detail

template <class H>
class Handle {
  public:
    Handle() = default;
    // Allocates and initialises the handle (uv_timer_init, uv_tcp_init, …). On failure the owner
    // stays empty and init_error() says why.
    explicit Handle(uv_loop_t* loop) : box_(new detail::Box<H>()) {
        init_error_ = detail::init(loop, &box_->handle);
        if (init_error_ != 0) {
            // Not initialised: libuv never saw it, so it is freed directly.
            delete box_;
            box_ = nullptr;
        }
    }
    ~Handle() { close(); }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    Handle(Handle&& o) noexcept
        : box_(std::exchange(o.box_, nullptr)), init_error_(o.init_error_) {}
    Handle& operator=(Handle&& o) noexcept {
        if (this != &o) {
            close();
            box_ = std::exchange(o.box_, nullptr);
            init_error_ = o.init_error_;
        }
        return *this;
    }

    explicit operator bool() const { return box_ != nullptr; }
    int init_error() const { return init_error_; }
    H* get() const { return box_ ? &box_->handle : nullptr; }
    H* operator->() const { return get(); }
    uv_handle_t* base() const { return reinterpret_cast<uv_handle_t*>(get()); }
    uv_stream_t* stream() const { return reinterpret_cast<uv_stream_t*>(get()); }

    // Closes the handle; its memory is freed (and `closed` runs) in libuv's close callback. The
    // owner is empty afterwards. No-op on an empty owner.
    void close(std::function<void()> closed = {}) noexcept {
        if (!box_) return;
        detail::Box<H>* box = std::exchange(box_, nullptr);
        uv_handle_t* h = reinterpret_cast<uv_handle_t*>(&box->handle);
        if (uv_is_closing(h)) detail::closed_twice();
        box->closed = std::move(closed);
        h->data = box;
        uv_close(h, [](uv_handle_t* handle) noexcept {
            auto* b = static_cast<detail::Box<H>*>(handle->data);
            auto hook = std::move(b->closed);
            delete b;
            if (hook) hook();
        });
    }

  private:
    detail::Box<H>* box_ = nullptr;
    int init_error_ = 0;
};

}  // namespace myr::loop
