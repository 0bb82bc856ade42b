// The real VolumeOps: the installer's changes to the collector volume (store/) and the state
// directory (the journal, state_files.hpp, the spool), each run on the work queue and answered on
// the loop. The journal hands out the state directory it lives in (Journal::state()).
//
// One job at a time per installer (the installer waits for each answer), so the Volume and the
// Journal, shared with the runtime, are never used by two threads at once. The shared pointers
// keep them alive for a job that finishes after the runtime is gone.
#pragma once

#include <memory>
#include <optional>

#include "journal/journal.hpp"
#include "loop/scheduler.hpp"
#include "store/volume.hpp"
#include "update/ports.hpp"

namespace myr::update {

class StoreVolumeOps : public VolumeOps {
  public:
    StoreVolumeOps(loop::Scheduler& sched, std::shared_ptr<store::Volume> volume,
                   std::shared_ptr<journal::Journal> journal, uint32_t keep_versions);

    std::unique_ptr<Step> inspect(Callback<Inspection> done) override;
    std::unique_ptr<Step> write_journal(JournalEntry entry, Done done) override;
    std::unique_ptr<Step> activate(Activation a, Done done) override;
    std::unique_ptr<Step> switch_back(std::string version, Done done) override;
    std::unique_ptr<Step> finish(Finish f, Done done) override;

  private:
    template <class T>
    std::unique_ptr<Step> run(std::function<Result<T>()> work, Callback<T> done);

    loop::Scheduler& sched_;
    std::shared_ptr<store::Volume> vol_;
    std::shared_ptr<journal::Journal> journal_;
    uint32_t keep_versions_;
    std::optional<journal::Record> record_;  // the install in progress (one id throughout)
};

}  // namespace myr::update
