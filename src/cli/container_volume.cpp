#include "cli/container_volume.hpp"

#include <memory>
#include <optional>

#include "core/log.hpp"
#include "journal/journal.hpp"
#include "journal/recover.hpp"
#include "journal/seed.hpp"
#include "store/volume.hpp"

namespace myr::cli {
namespace {

// Shared between the loop and the work queue. Each field is written by one job and read only after
// that job's completion callback, which libuv runs on the loop (a happens-before edge).
struct Preparation {
    const config::Config* cfg = nullptr;
    std::weak_ptr<bool> alive;
    std::optional<store::Volume> volume;
    std::optional<journal::Journal> journal;
    std::optional<Error> error;
    journal::Recovery recovery;
    journal::SeedInput seed_input;
    journal::SeedOutcome outcome;
    std::function<void(Result<VolumeState>)> done;
};

void log_recovery(const journal::Recovery& r) {
    if (r.journal == journal::Loaded::Kind::absent && r.staging_removed == 0 &&
        r.temp_removed == 0 && r.spool_removed == 0) {
        log::info("recovery: nothing to recover");
        return;
    }
    log::Level level =
        r.journal == journal::Loaded::Kind::absent ? log::Level::info : log::Level::warn;
    log::write(level, "recovery: volume put back in a known state",
               {{"journal", r.journal == journal::Loaded::Kind::ok        ? "interrupted operation"
                            : r.journal == journal::Loaded::Kind::corrupt ? "corrupt"
                                                                          : "none"},
                {"op", r.record ? journal::to_string(r.record->op) : ""},
                {"from", r.record ? r.record->from : ""},
                {"to", r.record ? r.record->to : ""},
                {"action", r.action},
                {"update_interrupted", r.update_interrupted},
                {"corrupt_reason", r.corrupt_reason},
                {"moved_aside", r.moved_aside},
                {"staging_removed", r.staging_removed},
                {"temp_removed", r.temp_removed},
                {"spool_removed", r.spool_removed}});
}

void finish(const std::shared_ptr<Preparation>& p) {
    if (p->error) return p->done(fail(*p->error));
    // journal::seed has logged its decision (rule, versions, reason) already.
    const journal::SeedOutcome& o = p->outcome;
    p->done(VolumeState{o.image_version, o.active_version, o.previous_version});
}

void seed_on_work_queue(loop::Scheduler& sched, const std::shared_ptr<Preparation>& p) {
    sched.post_work(
        [p] {
            auto r = journal::seed(*p->volume, *p->journal, p->seed_input);
            if (!r) {
                p->error = r.error().context("seed");
                return;
            }
            p->outcome = std::move(r.value());
        },
        [p](bool cancelled) {
            if (p->alive.expired()) return;
            if (cancelled) p->error = Error("seed: cancelled by shutdown");
            finish(p);
        });
}

// `seedBinary --version` on the loop; its result feeds the seeding decision either way, since a
// failure is a row of the precedence table (keep an intact active version), not an error here.
void probe_image_version(loop::Scheduler& sched, proc::Reaper& reaper,
                         const std::shared_ptr<Preparation>& p) {
    const std::string& seed = p->cfg->container->seed_binary;
    proc::CaptureOptions opts;
    opts.timeout = kSeedVersionTimeout;
    proc::run_capture(reaper, sched, {seed, "--version"}, opts,
                      [&sched, p, seed](Result<proc::Captured> r) {
                          if (p->alive.expired()) return;
                          journal::SeedInput& in = p->seed_input;
                          in.image_path = seed;
                          in.policy = p->cfg->container->seed_policy;
                          in.keep_versions = p->cfg->collector.keep_versions;
                          if (!r) {
                              in.version_ok = false;
                              log::warn("seed: image binary --version failed",
                                        {{"path", seed}, {"error", r.error().message()}});
                          } else {
                              in.version_output = r->output;
                              in.version_ok = r->exit_code() == 0;
                              if (!in.version_ok) {
                                  log::warn("seed: image binary --version exited with an error",
                                            {{"path", seed},
                                             {"exit_code", r->exit_code()},
                                             {"output", r->output.substr(0, 200)}});
                              }
                          }
                          seed_on_work_queue(sched, p);
                      });
}

}  // namespace

void prepare_volume(loop::Scheduler& sched, proc::Reaper& reaper, const config::Config& cfg,
                    std::weak_ptr<bool> alive, std::function<void(Result<VolumeState>)> done) {
    auto p = std::make_shared<Preparation>();
    p->cfg = &cfg;
    p->alive = std::move(alive);
    p->done = std::move(done);
    log::info("volume: recovering",
              {{"install_dir", cfg.collector.install_dir}, {"state_dir", cfg.collector.state_dir}});
    sched.post_work(
        [p] {
            auto vol = store::Volume::open(p->cfg->collector.install_dir, p->cfg->collector.binary);
            if (!vol) {
                p->error = vol.error().context("volume " + p->cfg->collector.install_dir);
                return;
            }
            p->volume.emplace(std::move(vol.value()));
            auto j = journal::Journal::open(p->cfg->collector.state_dir);
            if (!j) {
                p->error = j.error().context("state directory " + p->cfg->collector.state_dir);
                return;
            }
            p->journal.emplace(std::move(j.value()));
            auto rec = journal::recover(*p->volume, *p->journal);
            if (!rec) {
                p->error = rec.error().context("recovery");
                return;
            }
            p->recovery = std::move(rec.value());
        },
        [&sched, &reaper, p](bool cancelled) {
            if (p->alive.expired()) return;  // the loop is being closed after a shutdown
            if (cancelled) p->error = Error("recovery: cancelled by shutdown");
            if (p->error) return finish(p);
            log_recovery(p->recovery);
            probe_image_version(sched, reaper, p);
        });
}

}  // namespace myr::cli
