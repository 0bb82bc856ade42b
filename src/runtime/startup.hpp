// The asynchronous steps of container start-up (spec "Seeding and precedence"; docs/volume.md),
// one per runtime stage: recovery and seeding block on the volume, so they run on the work queue
// and the loop keeps beating (/healthz stays green during a long seed); `seedBinary --version`
// runs through the reaper (a PID 1 must collect that child too) with a timeout, so a hanging image
// binary cannot hang the start. Each step answers once, on the loop.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "core/result.hpp"
#include "journal/journal.hpp"
#include "journal/recover.hpp"
#include "journal/seed.hpp"
#include "loop/scheduler.hpp"
#include "proc/reaper.hpp"
#include "statedir/state_dir.hpp"
#include "statedir/writer_lock.hpp"
#include "store/volume.hpp"
#include "update/state_files.hpp"

namespace myr::runtime {

inline constexpr Duration kSeedVersionTimeout = std::chrono::seconds(30);

// The collector volume and the journal in the state directory, open from recovery to exit: the
// installer works on both. Shared with the work-queue jobs that use them, which may still be
// running when a TERM has ended the loop and the runtime is gone.
struct OpenVolume {
    store::Volume store;
    // The state directory, opened once here; the journal, the state files, the spool and the
    // instance uid all live in it.
    statedir::StateDir state;
    journal::Journal journal;
    // packages.json as found at start: the statuses of the last offer and what it installed.
    std::optional<update::Installed> installed;
    // The install that recovery undid at this start, if any (reported after connecting).
    std::optional<update::Attempt> interrupted;
    // A trial that goes on after this start (its journal, with this start counted).
    std::optional<journal::Record> trial;
    // Held from before recovery to the process's end: one updater per state directory.
    statedir::WriterLock lock;
    // With `interrupted`: recovery put the previous version back under it, as it had been
    // swapped in (update::swapped_in) or its trial used up update.trialMaxBoots.
    bool interrupted_swapped = false;
    // The version `current` named before recovery ("" when none): host mode's supervisor unit
    // outlives the updater and may still run it.
    std::string current_before{};
};
using SharedVolume = std::shared_ptr<OpenVolume>;

// Opens the volume and the state directory, takes the state directory's writer lock (a second
// updater on the same volume fails here, naming the holder) and runs journal recovery (which logs
// what it did).
void recover_volume(loop::Scheduler& sched, const config::Config& cfg,
                    std::function<void(Result<SharedVolume>)> done);

// The seeding decision's input from updater.yaml, without the probe's answer: container.seedBinary
// and container.seedPolicy, or host.seedBinary (policy newest; "" = none).
journal::SeedInput seed_input(const config::Config& cfg);

// Runs `<in.image_path> --version`. Its outcome is an input of the seeding decision either way (a
// failure is a row of the precedence table, not an error of the start). No seed binary (host
// mode without host.seedBinary): answered at once, as a version not known.
void probe_image(proc::Reaper& reaper, loop::Scheduler& sched, journal::SeedInput in,
                 std::function<void(journal::SeedInput)> done);

// The seeding decision, and the copy when the image wins (journal::seed logs the decision).
void seed_volume(loop::Scheduler& sched, SharedVolume volume, journal::SeedInput in,
                 std::function<void(Result<journal::SeedOutcome>)> done);

}  // namespace myr::runtime
