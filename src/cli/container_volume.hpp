// Volume preparation at every start of `container` (spec "Seeding and precedence"; docs/volume.md):
// journal recovery, then `seedBinary --version`, then the seeding decision — before the child
// starts.
//
// The blocking parts (recovery, hashing and copying the image binary) run on the work queue, so the
// loop keeps beating and /healthz stays green during a long seed. `seedBinary --version` runs on
// the loop through the reaper (a PID 1 must collect that child too) with a timeout, so a hanging
// image binary cannot hang the start.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "core/result.hpp"
#include "loop/scheduler.hpp"
#include "proc/reaper.hpp"

namespace myr::cli {

// What the rest of the container command needs to know afterwards.
struct VolumeState {
    std::string image_version;   // X from `seedBinary --version` ("" when unknown)
    std::string active_version;  // what `current` names after seeding
    std::string previous_version;
};

inline constexpr Duration kSeedVersionTimeout = std::chrono::seconds(30);

// Runs recovery and seeding; `done` is called once on the loop. An error means the start must
// fail (nothing is active and the image binary is unusable, or the volume cannot be written).
// `alive` expires when the caller (owner of `reaper` and `cfg`) is gone: a work-queue job that
// finishes while the loop is being closed after a TERM then touches nothing but its own state.
void prepare_volume(loop::Scheduler& sched, proc::Reaper& reaper, const config::Config& cfg,
                    std::weak_ptr<bool> alive, std::function<void(Result<VolumeState>)> done);

}  // namespace myr::cli
