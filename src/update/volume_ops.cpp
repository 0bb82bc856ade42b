#include "update/volume_ops.hpp"

#include "core/fault.hpp"
#include "core/log.hpp"
#include "core/time.hpp"
#include "download/spool.hpp"
#include "fsx/file.hpp"
#include "journal/seed.hpp"
#include "loop/step.hpp"
#include "statedir/state_dir.hpp"
#include "store/activate.hpp"
#include "update/state_files.hpp"

namespace myr::update {
namespace {

// The room of a directory's filesystem; nullopt (logged) when statvfs fails: the room rule then
// does not apply, and a real shortage still ends the install with ENOSPC (transient).
std::optional<Inspection::Room> room_at(int dirfd, const std::string& path) {
    auto sp = fsx::space_of(dirfd);
    if (!sp) {
        log::warn("update: room not known", {{"path", path}, {"error", sp.error().message()}});
        return std::nullopt;
    }
    return Inspection::Room{path, sp->available, sp->device};
}

// A new install of a package whose last install was interrupted while its version ran carries
// that count of restarts (record_recovery bounds it); an unreadable record carries nothing.
void carry_restarts(const statedir::StateDir& state, Attempt& in_progress) {
    auto last = load_attempt(state);
    if (!last || !last->has_value()) return;
    const Attempt& prev = **last;
    if (prev.outcome == Outcome::interrupted &&
        prev.package_hash_hex == in_progress.package_hash_hex &&
        prev.version == in_progress.version) {
        in_progress.restarts = prev.restarts;
    }
}

}  // namespace

StoreVolumeOps::StoreVolumeOps(loop::Scheduler& sched, std::shared_ptr<store::Volume> volume,
                               std::shared_ptr<journal::Journal> journal, uint32_t keep_versions)
    : sched_(sched),
      vol_(std::move(volume)),
      journal_(std::move(journal)),
      keep_versions_(keep_versions) {}

template <class T>
std::unique_ptr<Step> StoreVolumeOps::run(std::function<Result<T>()> work, Callback<T> done) {
    return loop::post_job<T>(sched_, "volume", std::move(work), std::move(done));
}

std::unique_ptr<Step> StoreVolumeOps::inspect(Callback<Inspection> done) {
    auto vol = vol_;
    auto journal = journal_;
    return run<Inspection>(
        [vol, journal]() -> Result<Inspection> {
            auto act = store::active(*vol);
            if (!act) return act.fail("inspect " + vol->path());
            Inspection in;
            in.active = act->version;
            in.active_intact = act->state == store::Active::State::intact;
            if (act->marker) in.previous = act->marker->previous_version;
            // The package hash goes with the version only while that version is still active.
            auto installed = load_installed(journal->state());
            if (!installed) {
                log::warn("update: packages.json ignored",
                          {{"error", installed.error().message()}});
            } else if (installed->has_value() && (*installed)->version == in.active) {
                in.active_package_hash = (*installed)->package_hash;
            }
            auto last = load_attempt(journal->state());
            if (!last) {
                // Only the quarantine rule depends on it; the next outcome rewrites it.
                log::warn("update: last attempt ignored", {{"error", last.error().message()}});
            } else if (last->has_value() && (*last)->outcome != Outcome::in_progress) {
                in.last_attempt = **last;
            }
            if (act->marker) in.active_size = act->marker->size;
            in.volume_room = room_at(vol->root_fd(), vol->path());
            in.spool_room =
                room_at(journal->state().fd(), journal->state().path_of(statedir::entry::spool));
            return in;
        },
        std::move(done));
}

std::unique_ptr<Step> StoreVolumeOps::write_journal(JournalEntry e, Done done) {
    bool first = !record_ || record_->from != e.from || record_->to != e.to;
    if (first) {
        record_ = journal::begin(journal::Op::update, e.from, e.to, e.phase);
    } else {
        record_->phase = e.phase;
    }
    record_->trial_until = e.trial_until;
    record_->boots = 0;
    journal::Record r = *record_;
    std::optional<Attempt> in_progress;
    if (first) {
        in_progress = Attempt{e.package_hash_hex, e.to, Outcome::in_progress, "", r.started_at};
    }
    auto journal = journal_;
    return run<void>(
        [journal, r, in_progress]() mutable -> Status {
            // The crash matrix's points of each journaled state's entry: update.<phase>.before
            // (nothing of the state written yet) and .after (journaled, its work not begun).
            MYR_TRY(fault::point("update." + r.phase + ".before"), "journal");
            if (in_progress) {
                carry_restarts(journal->state(), *in_progress);
                MYR_TRY(store_attempt(journal->state(), *in_progress), "journal");
            }
            MYR_TRY(journal->write(r), "journal " + r.phase);
            MYR_TRY(fault::point("update." + r.phase + ".after"), "journal");
            return {};
        },
        std::move(done));
}

std::unique_ptr<Step> StoreVolumeOps::activate(Activation a, Done done) {
    auto vol = vol_;
    return run<void>(
        [vol, a]() -> Status {
            store::ActivateRequest req;
            req.version = a.version;
            req.source = store::Source::update;
            req.staged_id = a.staged_id;
            req.expected_sha256 = a.sha256_hex;
            if (!a.previous.empty()) req.previous_version = a.previous;
            // store::activate logs the swap ("volume: version activated") for every source.
            auto r = store::activate(*vol, req);
            if (!r) return r.fail();
            return {};
        },
        std::move(done));
}

std::unique_ptr<Step> StoreVolumeOps::switch_back(std::string version, Done done) {
    auto vol = vol_;
    return run<void>(
        [vol, version]() -> Status {
            MYR_TRY(store::switch_current(*vol, version), "switch back");
            return {};
        },
        std::move(done));
}

std::unique_ptr<Step> StoreVolumeOps::finish(Finish f, Done done) {
    if (f.clear_journal) record_.reset();
    auto vol = vol_;
    auto journal = journal_;
    uint32_t keep = keep_versions_;
    return run<void>(
        [vol, journal, f, keep]() -> Status {
            // The journal goes first: the outcome is decided, and everything after it is tidying
            // that a crash may cut short without harm (the next start cleans staging and spool).
            MYR_TRY(fault::point("update.finish.before"), "finish");
            if (f.clear_journal) MYR_TRY(journal->clear(), "finish");
            if (!f.staged_id.empty()) {
                MYR_TRY(store::discard_staging(*vol, f.staged_id), "finish");
            }
            auto spool = download::clear_spool(journal->state());
            if (!spool) return spool.fail("finish");
            if (f.attempt) MYR_TRY(store_attempt(journal->state(), *f.attempt), "finish");
            if (f.packages) MYR_TRY(store_installed(journal->state(), *f.packages), "finish");
            MYR_TRY(fault::point("update.finish.after"), "finish");
            if (f.gc) {
                // A failed GC costs disk space, not correctness: logged, not an install failure.
                auto g = journal::gc(*vol, *journal, keep);
                if (!g) {
                    log::warn("update: gc failed", {{"error", g.error().message()}});
                } else if (!g->removed.empty()) {
                    std::string removed;
                    for (const std::string& n : g->removed) {
                        removed += (removed.empty() ? "" : ",") + n;
                    }
                    log::info("update: gc", {{"removed", removed}});
                }
            }
            return {};
        },
        std::move(done));
}

}  // namespace myr::update
