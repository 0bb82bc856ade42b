// The installer's two files in the state directory, next to journal.json (volume.md):
//
//   last-attempt.json  the outcome of the last install: the quarantine rule of Checking, the
//                      /readyz text and the first report after a restart. "in-progress" while an
//                      install runs, so that a start after a crash knows which offer it was.
//   packages.json      what the last offer came to: the statuses reported at its end, and the
//                      all_packages_hash and package of the last offer Installed (the hash is
//                      stored only when Installed; a failed offer keeps the earlier one).
//
// Both are replaced durably (fsx::write_file_atomic) and read strictly: a file that does not parse
// is ignored with a reason (the next install rewrites it), never trusted in part.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/time.hpp"
#include "journal/recover.hpp"
#include "statedir/state_dir.hpp"
#include "update/ports.hpp"

namespace myr::update {

// The outcome's words in last-attempt.json ("rolled-back", "in-progress", …): the one place they
// are written and read.
const char* to_string(Outcome o);
[[nodiscard]] Result<Outcome> parse_outcome(std::string_view text);
[[nodiscard]] Result<FailureClass> parse_class(std::string_view text);

std::string render_attempt(const Attempt& a);
[[nodiscard]] Result<Attempt> parse_attempt(std::string_view json);
// Absent: nullopt. Unparsable: an error saying why.
[[nodiscard]] Result<std::optional<Attempt>> load_attempt(const statedir::StateDir& dir);
[[nodiscard]] Status store_attempt(const statedir::StateDir& dir, const Attempt& a);

// Whether `a` quarantines its package hash (docs/update.md, "Failure classes"): a deterministic
// failure (failed or rolled-back, not transient) that `forget` has not lifted. How long it lasts
// is Checking's business (update.quarantineFor, check.cpp).
bool quarantines(const Attempt& a);
// When the quarantine of `a` ends by itself: its `at` plus update.quarantineFor. nullopt when it
// lasts until the offer changes (quarantineFor 0, or an `at` that does not read: an edited file
// keeps the quarantine, and `forget` lifts it).
std::optional<WallTime> quarantine_end(const Attempt& a, Duration quarantine_for);

// `myriarch-updater forget`: the quarantine of last-attempt.json lifted (of any package hash, or
// only of `package_hash_hex` when not empty), by rewriting the file atomically with `lifted`
// set to `now_rfc3339`. Returns the attempt lifted, or nullopt when nothing was quarantined.
// It runs beside PID 1 without its writer lock: PID 1 reads the file at each Checking and writes
// it only at the start and end of an install; a write of PID 1 between this read and this rename
// is lost (docs/update.md says what that costs).
[[nodiscard]] Result<std::optional<Attempt>> lift_quarantine(const statedir::StateDir& dir,
                                                             const std::string& package_hash_hex,
                                                             const std::string& now_rfc3339);

// packages.json: what the last offer came to, read back at start so that the first report after a
// restart says it again and the same offer is not taken up again (the struct: ports.hpp). Hashes
// as lower-case hex.
std::string render_installed(const Installed& in);
[[nodiscard]] Result<Installed> parse_installed(std::string_view json);
[[nodiscard]] Result<std::optional<Installed>> load_installed(const statedir::StateDir& dir);
[[nodiscard]] Status store_installed(const statedir::StateDir& dir, const Installed& in);

// After journal::recover: an update that recovery undid is recorded as "interrupted" in
// last-attempt.json (keeping the package hash of the "in-progress" record, which names the offer;
// an interruption quarantines nothing), with what recovery did. An interruption while the new
// version was started or checked counts a restart against the package, carried from one install
// to the next: at `max_restarts` (update.trialMaxBoots) it is recorded rolled-back instead,
// deterministic, so the same offer is quarantined. Returns the attempt written, if any.
// True when an install interrupted in journal phase `phase` had switched `current` to its new
// version and run it (starting, health-checking) or was rolling back from it: the recovery that
// undid it was a rollback (/metrics counts it rolled_back{recovery}, docs/metrics.md).
bool ran_new_version(std::string_view phase);
bool swapped_in(std::string_view phase);

[[nodiscard]] Result<std::optional<Attempt>> record_recovery(const statedir::StateDir& dir,
                                                             const journal::Recovery& r,
                                                             const std::string& now_rfc3339,
                                                             int64_t max_restarts = 3);

}  // namespace myr::update
