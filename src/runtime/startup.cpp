#include "runtime/startup.hpp"

#include "core/log.hpp"
#include "core/time.hpp"
#include "download/spool.hpp"
#include "update/state_files.hpp"

namespace myr::runtime {
namespace {

// Blocks: runs on the work queue.
Result<SharedVolume> open_and_recover(const std::string& install_dir, const std::string& binary,
                                      const std::string& state_dir, int64_t max_boots) {
    auto state = statedir::StateDir::open(state_dir);
    if (!state) return state.fail();
    // First of all: a second updater on this volume must not touch it at all (Volume::open
    // already repairs entries).
    auto lock = statedir::WriterLock::take(*state, format_rfc3339(wall_now()));
    if (!lock) return lock.fail();
    auto vol = store::Volume::open(install_dir, binary);
    if (!vol) return vol.fail("volume " + install_dir);
    auto opened = std::make_shared<OpenVolume>(
        OpenVolume{std::move(vol.value()), *state, journal::Journal(*state), std::nullopt,
                   std::nullopt, std::nullopt, std::move(*lock)});
    auto before = store::current_target(opened->store);
    if (before) opened->current_before = *before;
    auto rec = journal::recover(
        opened->store, opened->journal,
        [&state = opened->state] { return download::tidy_spool(state); },
        journal::TrialRule{max_boots, unix_seconds(wall_now())});
    if (!rec) return rec.fail("recovery");
    opened->trial = rec->trial;
    // An update that recovery undid is the last attempt's outcome; losing that record costs only
    // the quarantine rule, so it does not stop the start.
    auto att = update::record_recovery(opened->state, *rec, format_rfc3339(wall_now()), max_boots);
    if (!att) {
        log::warn("recovery: last attempt not recorded", {{"error", att.error().message()}});
    } else if (att->has_value()) {
        log::warn(rec->trial_rolled_back ? "recovery: trial failed, rollback recorded"
                                         : "recovery: interrupted update recorded",
                  {{"version", (*att)->version}, {"reason", (*att)->reason}});
        opened->interrupted = **att;
        opened->interrupted_swapped =
            rec->trial_rolled_back || (rec->record && update::swapped_in(rec->record->phase));
    }
    if (auto in = update::load_installed(opened->state); !in) {
        log::warn("packages.json ignored", {{"error", in.error().message()}});
    } else {
        opened->installed = *in;
    }
    return opened;
}

}  // namespace

void recover_volume(loop::Scheduler& sched, const config::Config& cfg,
                    std::function<void(Result<SharedVolume>)> done) {
    log::info("volume: recovering",
              {{"install_dir", cfg.collector.install_dir}, {"state_dir", cfg.collector.state_dir}});
    // Written by the job, read by `done` after libuv's completion callback (a happens-before edge).
    struct Job {
        std::string install_dir, binary, state_dir;
        int64_t max_boots = 3;
        std::optional<Result<SharedVolume>> result;
    };
    auto job = std::make_shared<Job>();
    job->install_dir = cfg.collector.install_dir;
    job->binary = cfg.collector.binary;
    job->state_dir = cfg.collector.state_dir;
    job->max_boots = cfg.update.trial_max_boots;
    sched.post_work(
        [job] {
            job->result.emplace(
                open_and_recover(job->install_dir, job->binary, job->state_dir, job->max_boots));
        },
        [job, done = std::move(done)](bool cancelled) {
            if (cancelled) return done(fail(Errc::cancelled, "recovery: cancelled by shutdown"));
            done(std::move(*job->result));
        });
}

journal::SeedInput seed_input(const config::Config& cfg) {
    journal::SeedInput in;
    in.keep_versions = cfg.collector.keep_versions;
    if (cfg.container) {
        in.image_path = cfg.container->seed_binary;
        if (cfg.container->seed_policy == config::SeedPolicy::image) {
            in.policy = store::SeedPolicy::image;
        }
    } else if (cfg.host) {
        in.image_path = cfg.host->seed_binary;
    }
    return in;
}

void probe_image(proc::Reaper& reaper, loop::Scheduler& sched, journal::SeedInput in,
                 std::function<void(journal::SeedInput)> done) {
    if (in.image_path.empty()) {
        in.version_ok = false;
        sched.post([in = std::move(in), done = std::move(done)]() mutable { done(std::move(in)); });
        return;
    }
    proc::CaptureOptions opts;
    opts.timeout = kSeedVersionTimeout;
    proc::run_capture(reaper, sched, {in.image_path, "--version"}, opts,
                      [in, done = std::move(done)](Result<proc::Captured> r) mutable {
                          if (!r) {
                              in.version_ok = false;
                              log::warn("seed: image binary --version failed",
                                        {{"path", in.image_path}, {"error", r.error().message()}});
                          } else {
                              in.version_output = r->output;
                              in.version_ok = r->exit_code() == 0;
                              if (!in.version_ok) {
                                  log::warn("seed: image binary --version exited with an error",
                                            {{"path", in.image_path},
                                             {"exit_code", r->exit_code()},
                                             {"output", r->output.substr(0, 200)}});
                              }
                          }
                          done(std::move(in));
                      });
}

void seed_volume(loop::Scheduler& sched, SharedVolume volume, journal::SeedInput in,
                 std::function<void(Result<journal::SeedOutcome>)> done) {
    struct Job {
        SharedVolume volume;
        journal::SeedInput in;
        std::optional<Result<journal::SeedOutcome>> result;
    };
    auto job = std::make_shared<Job>(Job{std::move(volume), std::move(in), std::nullopt});
    sched.post_work(
        [job] {
            auto r = journal::seed(job->volume->store, job->volume->journal, job->in);
            if (r) {
                job->result.emplace(std::move(r));
            } else {
                job->result.emplace(r.fail("seed"));
            }
        },
        [job, done = std::move(done)](bool cancelled) {
            if (cancelled) return done(fail(Errc::cancelled, "seed: cancelled by shutdown"));
            done(std::move(*job->result));
        });
}

}  // namespace myr::runtime
