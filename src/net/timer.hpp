// A one-shot libuv timer owned by one object. Destroying the Timer (also from inside its own
// callback) stops it; the libuv handle is freed in its close callback, never before.
#pragma once

#include <uv.h>

#include <functional>

#include "core/time.hpp"

namespace myr::net {

class Timer {
  public:
    explicit Timer(uv_loop_t* loop);
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;

    // (Re)arms the timer; an earlier callback that has not fired is replaced.
    void start(Duration after, std::function<void()> callback);
    void stop();
    bool active() const;

  private:
    struct Handle;
    Handle* h_;
};

}  // namespace myr::net
