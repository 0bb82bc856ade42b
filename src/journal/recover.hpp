// Start-up recovery (volume.md, "Journal"): runs first at every start, before seeding and before
// the child starts. See the table at the top of journal.hpp.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "journal/journal.hpp"
#include "store/volume.hpp"

namespace myr::journal {

struct Recovery {
    Loaded::Kind journal = Loaded::Kind::absent;
    std::optional<Record> record;  // the interrupted operation, when the journal parsed
    // What was done, for the log: "none", "switched back to 0.115.0", "finished rollback to …",
    // "kept current", "removed current".
    std::string action = "none";
    bool update_interrupted = false;  // report the update as failed ("interrupted")
    std::string corrupt_reason;       // why the journal did not parse
    std::string moved_aside;          // its new name under the state directory
    int staging_removed = 0;          // entries removed from .staging/
    int temp_removed = 0;             // leftover temp files removed
    int spool_removed = 0;            // spool entries removed
    // A trial the start found (phase "trial"): one of the three ends below, or none.
    bool trial_completed = false;    // its deadline passed while the updater was down
    bool trial_rolled_back = false;  // trialMaxBoots reached: `current` back to `from`
    std::optional<Record> trial;     // goes on: the record as rewritten (boots counted)
    std::string trial_reason;        // "rolled back after commit: …" when rolled back
};

// How a start during a trial is judged (update.trialMaxBoots, the wall clock in Unix seconds).
struct TrialRule {
    int64_t max_boots = 3;
    int64_t now = 0;
};

// Tidies the downloader's spool and returns how many entries went (download::tidy_spool in the
// product: what a download can resume from is kept). The downloader owns the spool and its rule;
// recovery only decides when it runs.
using ClearSpool = std::function<Result<int>()>;

// Puts the volume back in a known state after an interrupted operation, idempotently: a crash
// during recovery is recovered by the next start (the journal is removed last). Always removes
// leftovers in .staging/ and temp files (`.<name>.tmp-XXXXXX`) in the install directory, its
// version directories and the state directory, and tidies the spool (`clear_spool`): no
// download runs before recovery, so nothing there is in use. Logs what it did, in one line. Fault
// points `recover.*` via the store and journal points it uses.
[[nodiscard]] Result<Recovery> recover(const store::Volume& vol, Journal& journal,
                                       const ClearSpool& clear_spool, const TrialRule& trial = {});

}  // namespace myr::journal
