// The installer's Stager over the staging module's extraction (stage/extract.hpp), which blocks
// and knows nothing of the store: this port runs it on the work queue into the store's staging.
// The downloader and the preflight need no adapter: they are ports of their own modules.
#pragma once

#include <memory>
#include <string>

#include "loop/scheduler.hpp"
#include "stage/extract.hpp"
#include "store/volume.hpp"
#include "update/ports.hpp"

namespace myr::runtime {

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

}  // namespace myr::runtime
