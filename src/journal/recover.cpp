#include "journal/recover.hpp"

#include <sys/stat.h>

#include "core/fault.hpp"
#include "core/log.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "store/activate.hpp"

namespace myr::journal {
namespace {

Result<int> remove_temps(int dirfd, const std::string& where) {
    auto names = fsx::list_dir(dirfd);
    if (!names) return names.fail("list " + where);
    int removed = 0;
    for (const std::string& n : *names) {
        if (!fsx::is_temp_name(n)) continue;
        auto st = fsx::stat_at(dirfd, n);
        if (!st) return st.fail(where);
        if (!st->has_value() || S_ISDIR((*st)->st_mode)) continue;
        MYR_TRY(fault::point("recover.temp.before"), "recover");
        MYR_TRY(fsx::unlink_at(dirfd, n), "remove " + where + "/" + n);
        MYR_TRY(fault::point("recover.temp.after"), "recover");
        ++removed;
    }
    if (removed) MYR_TRY(fsx::fsync_dir(dirfd), "sync " + where);
    return removed;
}

Result<int> sweep_temps(const store::Volume& vol, const Journal& journal) {
    int total = 0;
    auto n = remove_temps(vol.root_fd(), vol.path());
    if (!n) return n.fail();
    total += *n;
    n = remove_temps(journal.dir_fd(), journal.dir());
    if (!n) return n.fail();
    total += *n;
    auto versions = fsx::list_dir(vol.versions_fd());
    if (!versions) return versions.fail("list versions");
    for (const std::string& v : *versions) {
        auto st = fsx::stat_at(vol.versions_fd(), v);
        if (!st) return st.fail("versions");
        if (!st->has_value() || !S_ISDIR((*st)->st_mode)) continue;  // never enter a symlink
        auto dir = fsx::open_dir_at(vol.versions_fd(), v);
        if (!dir) continue;
        n = remove_temps(dir->get(), vol.path() + "/versions/" + v);
        if (!n) return n.fail();
        total += *n;
    }
    return total;
}

// Points `current` at `version` unless it already does. When `version` is "" (nothing was active
// before) or not intact, `current` is removed instead: the version the operation moved to is
// unproven, so it must not stay active, and seeding then activates the image binary.
Result<std::string> restore(const store::Volume& vol, const std::string& version) {
    auto cur = store::current_target(vol);
    if (!cur) return cur.fail();
    if (!version.empty() && *cur == version) return "kept current at " + version;
    if (version.empty() || !store::intact(vol, version)) {
        auto st = fsx::stat_at(vol.root_fd(), "current");
        if (!st) return st.fail();
        if (!st->has_value()) return std::string("none");
        MYR_TRY(store::remove_current(vol), "recover");
        return version.empty() ? std::string("removed current (nothing was active before)")
                               : "removed current (" + version + " is not intact)";
    }
    MYR_TRY(fault::point("recover.switch.before"), "recover");
    MYR_TRY(store::switch_current(vol, version, true), "recover");
    MYR_TRY(fault::point("recover.switch.after"), "recover");
    return "switched current to " + version;
}

// The one log line of a recovery (a warning when an operation was cut short).
void log_recovery(const Recovery& r) {
    if (r.journal == Loaded::Kind::absent && r.staging_removed == 0 && r.temp_removed == 0 &&
        r.spool_removed == 0) {
        log::info("recovery: nothing to recover");
        return;
    }
    log::Level level = r.journal == Loaded::Kind::absent ? log::Level::info : log::Level::warn;
    log::write(level, "recovery: volume put back in a known state",
               {{"journal", r.journal == Loaded::Kind::ok        ? "interrupted operation"
                            : r.journal == Loaded::Kind::corrupt ? "corrupt"
                                                                 : "none"},
                {"op", r.record ? to_string(r.record->op) : ""},
                {"phase", r.record ? r.record->phase : ""},
                {"from", r.record ? r.record->from : ""},
                {"to", r.record ? r.record->to : ""},
                {"action", r.action},
                {"update_interrupted", r.update_interrupted},
                {"trial_rolled_back", r.trial_rolled_back},
                {"corrupt_reason", r.corrupt_reason},
                {"moved_aside", r.moved_aside},
                {"staging_removed", r.staging_removed},
                {"temp_removed", r.temp_removed},
                {"spool_removed", r.spool_removed}});
}

// A start during a trial: completed (deadline passed), rolled back (the boots are used up), or
// counted (the journal is rewritten and kept: the trial goes on). Returns the action.
Result<std::string> judge_trial(const store::Volume& vol, Journal& journal, const Record& r,
                                const TrialRule& rule, Recovery& out) {
    if (rule.now >= r.trial_until) {
        out.trial_completed = true;
        return "trial of " + r.to + " completed while the updater was down";
    }
    Record counted = r;
    ++counted.boots;
    if (counted.boots >= rule.max_boots) {
        out.trial_rolled_back = true;
        out.trial_reason = "rolled back after commit: the updater restarted " +
                           std::to_string(counted.boots) + " times during the trial of " + r.to +
                           " (update.trialMaxBoots " + std::to_string(rule.max_boots) + ")";
        auto done = restore(vol, r.from);
        if (!done) return done.fail();
        return "trial failed, " + *done;
    }
    MYR_TRY(journal.write(counted), "count the boot");
    out.trial = counted;
    return "trial of " + r.to + " goes on (boot " + std::to_string(counted.boots) + " of " +
           std::to_string(rule.max_boots) + ")";
}

}  // namespace

Result<Recovery> recover(const store::Volume& vol, Journal& journal, const ClearSpool& clear_spool,
                         const TrialRule& trial) {
    Recovery out;
    auto loaded = journal.load();
    if (!loaded) return loaded.fail("recover");
    out.journal = loaded->kind;
    bool clear_journal = false;
    switch (loaded->kind) {
        case Loaded::Kind::absent:
            break;
        case Loaded::Kind::corrupt: {
            out.corrupt_reason = loaded->reason;
            log::warn("recovery: journal cannot be parsed, moving it aside",
                      {{"dir", journal.dir()}, {"error", loaded->reason}});
            auto aside = journal.move_aside();
            if (!aside) return aside.fail("recover");
            out.moved_aside = *aside;
            out.action = "kept current";
            break;
        }
        case Loaded::Kind::ok: {
            const Record& r = loaded->record;
            out.record = r;
            clear_journal = true;
            Result<std::string> done = std::string("none");
            switch (r.op) {
                case Op::seed:
                    // Every seed step leaves `current` at a complete version (old or new); seeding
                    // is evaluated again right after recovery.
                    done = std::string("kept current");
                    break;
                case Op::update:
                    if (r.phase == phase::trial && r.trial_until > 0) {
                        done = judge_trial(vol, journal, r, trial, out);
                        clear_journal = !out.trial.has_value();
                        break;
                    }
                    out.update_interrupted = true;
                    done = restore(vol, r.from);
                    break;
                case Op::rollback:
                    done = restore(vol, r.to);
                    break;
            }
            if (!done) return done.fail("recover " + std::string(to_string(r.op)));
            out.action = *done;
            break;
        }
    }
    auto staged = store::clear_staging(vol);
    if (!staged) return staged.fail("recover");
    out.staging_removed = *staged;
    auto temps = sweep_temps(vol, journal);
    if (!temps) return temps.fail("recover");
    out.temp_removed = *temps;
    // At every start, not only after an interrupted update (no download runs before recovery,
    // so nothing in the spool is in use). A download's part and meta stay for the same offer to
    // resume; the next download of another hash or the end of the next install removes them.
    auto spool = clear_spool();
    if (!spool) return spool.fail("recover");
    out.spool_removed = *spool;
    // Last, so that a crash anywhere above repeats the whole recovery at the next start.
    if (clear_journal) MYR_TRY(journal.clear(), "recover");
    log_recovery(out);
    return out;
}

}  // namespace myr::journal
