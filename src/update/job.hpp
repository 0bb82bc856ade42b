// Blocking port work on the work queue, answered on the loop: the one shape the real ports share
// (VolumeOps, the Sigstore verifier, the archive extraction).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "loop/scheduler.hpp"
#include "update/ports.hpp"

namespace myr::update {

// A job cannot be stopped once it runs on the pool; destroying its Step only silences the answer.
class FlagStep : public Step {
  public:
    explicit FlagStep(std::shared_ptr<bool> alive) : alive_(std::move(alive)) {}
    ~FlagStep() override { *alive_ = false; }

  private:
    std::shared_ptr<bool> alive_;
};

// Runs `work` on the pool and `done` with its result on the loop, unless the Step is gone. A job
// dropped by a shutdown answers Errc::cancelled naming `what`.
template <class T>
std::unique_ptr<Step> post_job(loop::Scheduler& sched, std::string what,
                               std::function<Result<T>()> work, Callback<T> done) {
    auto alive = std::make_shared<bool>(true);
    // Written by the job, read by `done` after the pool's completion (a happens-before edge).
    auto out = std::make_shared<std::optional<Result<T>>>();
    sched.post_work([work = std::move(work), out] { out->emplace(work()); },
                    [alive, out, what = std::move(what), done = std::move(done)](bool cancelled) {
                        if (!*alive) return;
                        if (cancelled || !out->has_value()) {
                            return done(fail(Errc::cancelled, what + ": dropped by shutdown"));
                        }
                        done(std::move(**out));
                    });
    return std::make_unique<FlagStep>(alive);
}

}  // namespace myr::update
