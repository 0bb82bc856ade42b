// The installer's ports over the seams of the download and staging modules
// (download/downloader.hpp, stage/extract.hpp, stage/preflight.hpp): the container runtime plugs
// the real downloader, extraction and preflight into the installer through these.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "download/downloader.hpp"
#include "loop/scheduler.hpp"
#include "stage/extract.hpp"
#include "stage/preflight.hpp"
#include "store/volume.hpp"
#include "update/ports.hpp"

namespace myr::runtime {

// The downloader, with its URL policy passed in (the downloader owns the rule; the seam does not
// expose it as a call of its own yet).
class DownloaderFetcher : public update::Fetcher {
  public:
    DownloaderFetcher(download::Downloader& d, std::function<Status(const std::string&)> policy)
        : downloader_(d), policy_(std::move(policy)) {}
    Status check_url(const std::string& url) const override { return policy_(url); }
    std::unique_ptr<update::Step> fetch(download::Request request,
                                        download::Downloader::Handlers handlers) override;

  private:
    download::Downloader& downloader_;
    std::function<Status(const std::string&)> policy_;
};

// stage::extract_binary on the work queue, into a fresh `.staging/<id>/` of the store (removed
// again when the extraction fails).
class ExtractStager : public update::Stager {
  public:
    ExtractStager(loop::Scheduler& sched, std::shared_ptr<store::Volume> vol,
                  stage::ExtractLimits limits)
        : sched_(sched), vol_(std::move(vol)), limits_(limits) {}
    std::unique_ptr<update::Step> stage(std::string archive_path,
                                        update::Callback<Staged> done) override;

  private:
    loop::Scheduler& sched_;
    std::shared_ptr<store::Volume> vol_;
    stage::ExtractLimits limits_;
};

class SeamPreflighter : public update::Preflighter {
  public:
    SeamPreflighter(proc::Reaper& reaper, loop::Scheduler& sched)
        : reaper_(reaper), sched_(sched) {}
    std::unique_ptr<update::Step> run(stage::PreflightRequest request,
                                      update::Callback<stage::PreflightReport> done) override;

  private:
    proc::Reaper& reaper_;
    loop::Scheduler& sched_;
};

}  // namespace myr::runtime
