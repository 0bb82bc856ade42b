// The installer's Stager over the staging module's extraction, which knows nothing of the store:
// this port creates the store's staging directory and runs the extractor child into it
// (stage/child.hpp: a re-executed updater under kernel limits, so PID 1 never holds the archive's
// decoders).
// The downloader and the preflight need no adapter: they are ports of their own modules.
#pragma once

#include <memory>
#include <string>

#include "loop/scheduler.hpp"
#include "proc/reaper.hpp"
#include "stage/extract.hpp"
#include "store/volume.hpp"
#include "update/ports.hpp"

namespace myr::runtime {

// stage::extract_in_child into a fresh `.staging/<id>/` of the store (removed again when the
// extraction fails).
class ExtractStager : public update::Stager {
  public:
    ExtractStager(proc::Reaper& reaper, loop::Scheduler& sched, std::shared_ptr<store::Volume> vol,
                  stage::ExtractLimits limits)
        : reaper_(reaper), sched_(sched), vol_(std::move(vol)), limits_(limits) {}
    std::unique_ptr<update::Step> stage(std::string archive_path,
                                        update::Callback<Staged> done) override;

  private:
    proc::Reaper& reaper_;
    loop::Scheduler& sched_;
    std::shared_ptr<store::Volume> vol_;
    stage::ExtractLimits limits_;
};

}  // namespace myr::runtime
