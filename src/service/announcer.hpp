// The on_change half of ServiceController, shared by its implementations: listeners run on the
// loop once per turn in which something changed, never inside the transition that changed it.
#pragma once

#include <functional>
#include <vector>

#include "loop/scheduler.hpp"

namespace myr::service {

class Announcer {
  public:
    explicit Announcer(loop::Scheduler& sched) : sched_(sched) {}

    void add(std::function<void()> listener) { listeners_.push_back(std::move(listener)); }
    // Something changed: the listeners run on a later turn, once however often this is called in
    // between, so a burst of changes (an end and the restart decision) is one event and listeners
    // read the state as it is then.
    void changed() {
        if (posted_) return;
        posted_ = true;
        sched_.post(guard_.bind([this] {
            posted_ = false;
            auto listeners = listeners_;  // a listener may add another
            for (auto& l : listeners) l();
        }));
    }

  private:
    loop::Scheduler& sched_;
    std::vector<std::function<void()>> listeners_;
    bool posted_ = false;
    loop::Guard guard_;
};

}  // namespace myr::service
