// Seeding at start (spec "Seeding and precedence"): after recovery, before the child starts.
//
// The caller runs `seedBinary --version` (on the event loop, with a timeout, via proc::run_capture)
// and hands in its output; everything here blocks (hashing, copying) and runs on the work queue.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.hpp"
#include "journal/journal.hpp"
#include "store/gc.hpp"
#include "store/precedence.hpp"
#include "store/volume.hpp"

namespace myr::journal {

struct SeedInput {
    std::string image_path;      // container.seedBinary (absolute; a symlink to a file is fine)
    std::string version_output;  // stdout of `seedBinary --version`
    bool version_ok = true;      // false: it failed to start, timed out or exited non-zero
    store::SeedPolicy policy = store::SeedPolicy::newest;
    uint32_t keep_versions = 1;
};

struct SeedOutcome {
    bool activated = false;
    store::Rule rule = store::Rule::nothing_active;
    std::string image_version;  // "" when `--version` gave nothing usable (image_collector_version)
    std::string active_version;    // what `current` names afterwards
    std::string previous_version;  // of the active marker afterwards
    bool reused = false;           // an intact directory of the image version was reused
    std::string reason;            // one line for the log
};

// Decides per the precedence table and, when the image wins, activates it through a journaled
// activation (op seed) followed by GC. Fails when a journal is still present (recovery has not run:
// until then an existing active version is never replaced), except a trial's, which recovery keeps
// (an activation of the image replaces it: the trial is moot then), and when the image version is
// unknown and nothing intact is active (the start fails). Fault points: the store's and the
// journal's.
[[nodiscard]] Result<SeedOutcome> seed(const store::Volume& vol, Journal& journal,
                                       const SeedInput& in);

// A rollback as one journaled operation (op rollback): `current` goes to the active marker's
// previousVersion. The installer does not call it: it journals its own rolling-back phase (op
// update) and points `current` back at the `from` it journaled (store::switch_current, through
// update::VolumeOps::switch_back), so that recovery and the rollback agree on the version.
[[nodiscard]] Result<std::string> rollback(const store::Volume& vol, Journal& journal);

// GC protecting whatever the journal names; refuses to run while the journal cannot be parsed.
[[nodiscard]] Result<store::GcResult> gc(const store::Volume& vol, const Journal& journal,
                                         uint32_t keep_versions);

}  // namespace myr::journal
