// What the server was offered and what it was told: the one view of an offer's statuses. The
// installer changes it as an install goes on and the runtime's OpAMP adapter reads it.
//
// - The report: one status per offered package; the TopLevel one (the first) is the installer's,
//   every other one is answered InstallFailed at once.
// - Repeats: only what is installed answers an offer (the OpAMP agent procedure): the offer last
//   Installed, offered again unchanged, is nothing to do; so is the offer packages.json says was
//   Installed, while its version is still the active one. An offer that failed is processed
//   again when it is sent again (the installer's ResendGate paces it).
// - Restart: packages.json's statuses are the first report; an install recovery undid replaces
//   the restored status of the same package.
// - Progress: at most one downloading report per `progress_every`, whatever the downloader sends.
//
// It does not publish: the installer tells its owner after each change.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "core/time.hpp"
#include "update/ports.hpp"

namespace myr::update {

class Ledger {
  public:
    explicit Ledger(Duration progress_every) : progress_every_(progress_every) {}

    // What `current` names (after seeding, a switch, a commit) and the package hash installed
    // with it: every status the installer sets says so as "agent has".
    void set_active(std::string version, std::string package_hash);
    void set_active_version(std::string version) { active_ = std::move(version); }
    const std::string& active() const { return active_; }

    void set_last_attempt(Attempt a) { last_attempt_ = std::move(a); }
    const std::optional<Attempt>& last_attempt() const { return last_attempt_; }
    // packages.json as found at start, after set_active (installer.hpp says how it is used).
    void restore(Installed in);
    // An install recovery undid at start, after restore(): InstallFailed with recovery's words.
    void report_interrupted(const Attempt& a, const std::string& package_name);

    // The entries of the last offer the codec dropped past its cap.
    void note_refused(size_t n) { refused_ = n; }
    size_t refused() const { return refused_; }

    // What makes two offers the same install: the TopLevel package, its file's content hash and
    // bundle; not where the file is fetched from (a fresh URL or headers are the same install).
    static std::string key_of(const Offer& o);
    // Nothing to do for `o`: it is the offer last Installed, unchanged, or the one restored as
    // Installed. Any other offer forgets the restored one.
    bool settled(const Offer& o);
    // The install's offer sent again with another URL, headers or all_packages_hash: the report
    // answers the newest hash (the install goes on, with the new URL for its next request).
    void refresh(const Offer& o);
    // What Checking found on the volume: an intact active version is the one the report names.
    void take_inspection(const Inspection& in);
    // Lays out the report for `o`; returns the package to install (its TopLevel one), if any.
    std::optional<OfferedPackage> open(const Offer& o);

    // What an offer `o` that arrives while `running` is installed comes to. `pending`: the
    // newer offer remembered meanwhile; `cancelled`: it cancelled `running` already.
    enum class WhileBusy {
        ignore,    // the same offer again, or the one already remembered
        refresh,   // the same install with another URL, headers or hash: taken over, not restarted
        again,     // the same offer again, after a newer one cancelled it: wanted again
        withdraw,  // the same offer again while a newer one waits: the newer one is withdrawn
        remember,  // a different offer: remembered (latest wins), it supersedes `running`
    };
    static WhileBusy while_busy(const Offer& o, const Offer& running, bool cancelled,
                                const std::optional<Offer>& pending);

    void set_status(Code code, std::string error = {});
    void restart_progress() { progress_reported_ = false; }
    // True when the report changed (not throttled).
    bool progress(const download::Progress& p, MonoTime now);

    // The end of an offer that failed: its statuses, with the package and the all_packages_hash
    // of the last one Installed (the server is told that hash only for what really got
    // installed).
    Installed ended() const;
    // The same, after the report says InstallFailed with `why` and `attempt` is recorded. The
    // offer stays open: sent again, it is processed again.
    Installed fail(std::string why, std::optional<Attempt> attempt);
    // The end of a good install of `pkg` from `o`: the statuses that say Installed. commit()
    // makes it the active one and takes them as the report once they are on the volume.
    // `fetched`: its bytes were installed, so its package hash becomes the active one's;
    // otherwise (found installed) the active one's hash stays as it was.
    Installed installed(const Offer& o, const OfferedPackage& pkg, bool fetched);
    void commit(const Offer& o, Installed packages, Attempt a);

    const Report& report() const { return report_; }

  private:
    Duration progress_every_;
    Report report_;
    size_t top_index_ = 0;     // our package's entry in report_
    size_t restored_top_ = 0;  // its entry in the report restored at start
    size_t refused_ = 0;
    std::string installed_key_;  // the offer last Installed
    std::string active_;         // the version `current` names, as far as we know
    std::string active_hash_;    // the package hash installed with it
    std::optional<Attempt> last_attempt_;
    std::optional<Installed> last_installed_;  // packages.json as last written (or read at start)
    // all_packages_hash restored from packages.json, until another offer arrives: an offer with it
    // is the one already installed.
    std::string restored_hash_;
    MonoTime last_progress_{};
    bool progress_reported_ = false;
};

}  // namespace myr::update
