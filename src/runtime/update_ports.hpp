// The installer's ports that the runtime owns because they need the loop's network stack or the
// Sigstore verifier (update/ needs neither): the health probe over net::HttpClient and the bundle
// verification on the work queue.
#pragma once

#include <uv.h>

#include <memory>
#include <string>

#include "loop/scheduler.hpp"
#include "runtime/root_watch.hpp"
#include "update/ports.hpp"
#include "verify/sigstore.hpp"

namespace myr::runtime {

class HttpHealthProbe : public update::HealthProbe {
  public:
    HttpHealthProbe(uv_loop_t* loop, loop::Scheduler& sched) : loop_(loop), sched_(sched) {}
    std::unique_ptr<update::Step> get(const Url& url, Duration timeout,
                                      update::Callback<int> done) override;

  private:
    uv_loop_t* loop_;
    loop::Scheduler& sched_;
};

// Verifies against the root RootWatch holds at the moment of the call (root_watch.hpp): a root
// refreshed on disk is used by the next install without a restart, and one install uses one root
// from start to end. The check itself runs on the work queue.
class SigstoreVerifier : public update::Verifier {
  public:
    SigstoreVerifier(loop::Scheduler& sched, const RootWatch& roots, verify::Identity identity,
                     verify::Options options = {})
        : sched_(sched), roots_(roots), identity_(std::move(identity)), options_(options) {}
    std::unique_ptr<update::Step> verify(Request request, update::Callback<Verified> done) override;
    std::string trust() const override;

  private:
    loop::Scheduler& sched_;
    const RootWatch& roots_;
    verify::Identity identity_;
    verify::Options options_;  // update.signature
};

}  // namespace myr::runtime
