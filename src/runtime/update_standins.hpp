// Stand-ins for the installer ports whose implementations are merged from other branches (the
// downloader, the archive extraction, the preflight): until then an install that needs them fails
// with a reason that says so, on a later loop turn as the port contract wants. Everything else
// about an offer is real — the Checking rules, the same version already active → Installed, the
// reports — so what the server sees is the truth about this build.
//
// Replace by the adapters of update_seams.hpp once download/ and stage/ are merged.
#pragma once

#include <memory>
#include <string>

#include "loop/scheduler.hpp"
#include "update/job.hpp"
#include "update/ports.hpp"

namespace myr::runtime {

inline constexpr const char* kNotMerged = "not in this build yet (merged separately, issue 11)";

template <class T>
std::unique_ptr<update::Step> fail_later(loop::Scheduler& sched, update::Callback<T> done,
                                         std::string what) {
    auto alive = std::make_shared<bool>(true);
    sched.post([alive, done = std::move(done), what = std::move(what)] {
        if (*alive) done(fail(Errc::unknown, what + ": " + kNotMerged));
    });
    return std::make_unique<update::FlagStep>(alive);
}

class StandinFetcher : public update::Fetcher {
  public:
    explicit StandinFetcher(loop::Scheduler& sched) : sched_(sched) {}
    // The URL policy belongs to the downloader; without it nothing is fetched at all, so there is
    // nothing to guard yet.
    Status check_url(const std::string&) const override { return {}; }
    std::unique_ptr<update::Step> fetch(download::Request,
                                        download::Downloader::Handlers h) override {
        return fail_later<download::Artifact>(sched_, std::move(h.on_done), "downloader");
    }

  private:
    loop::Scheduler& sched_;
};

class StandinStager : public update::Stager {
  public:
    explicit StandinStager(loop::Scheduler& sched) : sched_(sched) {}
    std::unique_ptr<update::Step> stage(std::string, update::Callback<Staged> done) override {
        return fail_later<Staged>(sched_, std::move(done), "archive extraction");
    }

  private:
    loop::Scheduler& sched_;
};

class StandinPreflighter : public update::Preflighter {
  public:
    explicit StandinPreflighter(loop::Scheduler& sched) : sched_(sched) {}
    std::unique_ptr<update::Step> run(stage::PreflightRequest,
                                      update::Callback<stage::PreflightReport> done) override {
        return fail_later<stage::PreflightReport>(sched_, std::move(done), "preflight");
    }

  private:
    loop::Scheduler& sched_;
};

}  // namespace myr::runtime
