// The installer's ports that the runtime owns because they need the loop's network stack or the
// Sigstore verifier (update/ needs neither): the health probe over net::HttpClient and the bundle
// verification on the work queue.
#pragma once

#include <uv.h>

#include <memory>
#include <string>

#include "loop/scheduler.hpp"
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

// update.trustedRootFile is read at each verification (on the work queue), so a root rotated on
// disk is used without a restart and a missing one fails only the installs that need it.
class SigstoreVerifier : public update::Verifier {
  public:
    SigstoreVerifier(loop::Scheduler& sched, std::string trusted_root_file,
                     verify::Identity identity, verify::Options options = {})
        : sched_(sched),
          root_file_(std::move(trusted_root_file)),
          identity_(std::move(identity)),
          options_(options) {}
    std::unique_ptr<update::Step> verify(Request request, update::Callback<Verified> done) override;

  private:
    loop::Scheduler& sched_;
    std::string root_file_;
    verify::Identity identity_;
    verify::Options options_;  // update.signature
};

}  // namespace myr::runtime
