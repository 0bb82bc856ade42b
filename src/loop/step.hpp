// One asynchronous step in flight, and the one way to put blocking work behind one.
//
// Every asynchronous port (the downloader, the preflight, the installer's ports, the health probe)
// answers a call with a Step. The rule is the same everywhere: destroying the Step cancels what it
// stands for, and no callback of it runs afterwards. So an owner that moves on (a state change, a
// shutdown, a superseding offer) just drops its Step and needs no case for a late answer.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/result.hpp"
#include "loop/scheduler.hpp"

namespace myr::loop {

class Step {
  public:
    virtual ~Step() = default;
};

// Runs `work` on the thread pool and `done` with its result on the loop, unless the returned Step
// is gone by then. A job cannot be stopped once it runs on the pool, so destroying its Step only
// silences the answer. A job dropped by a shutdown answers Errc::cancelled naming `what`.
template <class T>
[[nodiscard]] std::unique_ptr<Step> post_job(Scheduler& sched, std::string what,
                                             std::function<Result<T>()> work,
                                             std::function<void(Result<T>)> done) {
    // The Step is only the flag `done` reads: the job's answer goes nowhere once it is false.
    struct Silencer final : Step {
        std::shared_ptr<bool> alive = std::make_shared<bool>(true);
        ~Silencer() override { *alive = false; }
    };
    auto step = std::make_unique<Silencer>();
    // Written by the job, read by `done` after the pool's completion (a happens-before edge).
    auto out = std::make_shared<std::optional<Result<T>>>();
    sched.post_work(
        [work = std::move(work), out] { out->emplace(work()); },
        [alive = step->alive, out, what = std::move(what), done = std::move(done)](bool cancelled) {
            if (!*alive) return;
            if (cancelled || !out->has_value()) {
                return done(fail(Errc::cancelled, what + ": dropped by shutdown"));
            }
            done(std::move(**out));
        });
    return step;
}

}  // namespace myr::loop
