#include "runtime/update_seams.hpp"

#include <optional>

#include "loop/step.hpp"
#include "stage/child.hpp"
#include "store/activate.hpp"

namespace myr::runtime {
namespace {

using Staged = update::Stager::Staged;

// One staging: a fresh `.staging/<id>/` (on the work queue: mkdir and fsync), the extractor child
// writing the binary into it (on the loop, through the Reaper), and on a failure the directory
// removed again (on the work queue) before `done` hears why. Destroying it mid-way kills the
// child; the directory is then a leftover that the next start clears (store::clear_staging).
class StagingRun final : public update::Step {
  public:
    StagingRun(proc::Reaper& reaper, loop::Scheduler& sched, std::shared_ptr<store::Volume> vol,
               stage::ExtractLimits limits, std::string archive, update::Callback<Staged> done)
        : reaper_(reaper),
          sched_(sched),
          vol_(std::move(vol)),
          limits_(limits),
          archive_(std::move(archive)),
          done_(std::move(done)) {}

    void start() {
        step_ = loop::post_job<std::string>(
            sched_, "staging",
            [vol = vol_]() -> Result<std::string> {
                auto staging = store::create_staging(*vol);
                if (!staging) return staging.fail("stage");
                return staging->id;
            },
            [this](Result<std::string> id) {
                if (!id) return done_(id.fail());
                id_ = std::move(*id);
                extract();
            });
    }

  private:
    void extract() {
        stage::ChildRequest r;
        r.archive = archive_;
        r.binary = vol_->binary();
        r.staging_dir = store::staging_dir_path(*vol_, id_);
        const std::string path = store::staged_binary_path(*vol_, id_);
        r.limits = limits_;
        step_ = stage::extract_in_child(reaper_, sched_, std::move(r),
                                        [this, path](Result<stage::Extracted> got) {
                                            if (!got) return discard(got.error());
                                            done_(Staged{id_, path, got->sha256_hex, got->size});
                                        });
    }

    // The extraction error is the one to report, as it is: `stage: <member>: <rule>` names what
    // is wrong with the archive. A directory that cannot be removed now is cleared at the next
    // start.
    void discard(Error why) {
        step_ = loop::post_job<int>(
            sched_, "staging",
            [vol = vol_, id = id_]() -> Result<int> {
                (void)store::discard_staging(*vol, id);
                return 0;
            },
            [this, why = std::move(why)](Result<int>) { done_(fail(why)); });
    }

    proc::Reaper& reaper_;
    loop::Scheduler& sched_;
    std::shared_ptr<store::Volume> vol_;
    const stage::ExtractLimits limits_;
    const std::string archive_;
    update::Callback<Staged> done_;
    std::string id_;
    std::unique_ptr<loop::Step> step_;  // what runs now; replacing it ends the previous one
};

}  // namespace

std::unique_ptr<update::Step> ExtractStager::stage(std::string archive_path,
                                                   update::Callback<Staged> done) {
    auto run = std::make_unique<StagingRun>(reaper_, sched_, vol_, limits_, std::move(archive_path),
                                            std::move(done));
    run->start();
    return run;
}

}  // namespace myr::runtime
