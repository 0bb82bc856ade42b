// The Scheduler of the product: libuv timers, one idle handle that runs posted callbacks on the
// next loop iteration, and uv_queue_work for the thread pool. Time is the system's steady and wall
// clock. Destroy it before Loop::close() (its handles follow the rule of loop::Handle).
#pragma once

#include <uv.h>

#include <deque>
#include <functional>
#include <memory>

#include "loop/handle.hpp"
#include "loop/scheduler.hpp"

namespace myr::loop {

class UvScheduler final : public Scheduler {
  public:
    explicit UvScheduler(uv_loop_t* loop);
    ~UvScheduler() override;
    UvScheduler(const UvScheduler&) = delete;
    UvScheduler& operator=(const UvScheduler&) = delete;

    MonoTime now() const override;
    WallTime wall() const override;
    std::unique_ptr<Timer> timer() override;
    void post(std::function<void()> fn) override;
    void post_work(std::function<void()> work, std::function<void(bool cancelled)> done) override;

  private:
    static void on_idle(uv_idle_t* idle) noexcept;

    uv_loop_t* loop_;
    Handle<uv_idle_t> idle_;
    std::deque<std::function<void()>> posted_;
};

}  // namespace myr::loop
