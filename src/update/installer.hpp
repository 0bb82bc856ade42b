// The installer: an offered TopLevel package in, the new collector running and healthy (or the old
// one back) out. The states and transitions are the table of machine.hpp; this class only runs
// them: post(Event) looks the pair up, enter(State) journals the journaled states durably and then
// starts the state's one asynchronous step through a port (ports.hpp). Every completion is tied to
// the state that started it (a generation number), so an answer that arrives after a cancel or a
// shutdown changes nothing.
//
// rolling_back is one state with four steps in a row (stop, switch back, start, health rounds):
// the journal says rolling-back for all of them and recovery treats them alike (switch back to
// `from`), so more states would only lengthen the table.
//
// Offers during an install: the same offer again is ignored; a different one is remembered
// (latest wins), cancels the install before the critical section and waits for its end inside it.
// Shutdown: outside the critical section the install is dropped where it is (the journal, if
// any, makes the next start clean up); inside, it runs to its end, bounded by 2 × stopTimeout + 2
// × healthTimeout, and on_end() tells the runtime.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loop/scheduler.hpp"
#include "service/service_controller.hpp"
#include "update/machine.hpp"
#include "update/ports.hpp"

namespace myr::update {

struct Settings {
    std::optional<std::string> minimum_version;  // canonical
    bool allow_downgrade = false;
    bool require_signature = true;
    uint64_t max_artifact_size = 1ULL << 30;
    Duration health_timeout = std::chrono::minutes(2);
    uint32_t health_successes = 3;
    Duration health_interval = std::chrono::seconds(2);
    Duration probe_timeout = std::chrono::seconds(5);  // one GET; capped by health_interval
    std::optional<Url> supervisor_health_url;
    std::optional<Url> collector_health_url;
    std::vector<std::string> validate_args{"validate", "--config={config}"};
    std::string config_file;  // collector.configFile, for {config}
    uid_t uid = 0;            // the preflight runs as the supervisor's user
    gid_t gid = 0;
    Duration stop_timeout = std::chrono::seconds(30);
    Duration progress_every = std::chrono::seconds(2);
};

struct Ports {
    Fetcher& fetcher;
    Verifier& verifier;
    Stager& stager;
    Preflighter& preflight;
    service::ServiceController& service;
    VolumeOps& volume;
    HealthProbe& health;
};

class Installer : public service::CriticalSection {
  public:
    // `on_report` runs on the loop whenever report() changed.
    Installer(loop::Scheduler& sched, Ports ports, Settings settings,
              std::function<void()> on_report);
    ~Installer() override;
    Installer(const Installer&) = delete;
    Installer& operator=(const Installer&) = delete;

    // What is known at start (after recovery and seeding): the active version, the package hash
    // stored with it, and the outcome recovery found (an interrupted install), reported once.
    void set_active(std::string version, std::string package_hash = {});
    void set_last_attempt(Attempt a);
    // An install that recovery undid at start (last-attempt.json "interrupted"): reported as
    // InstallFailed with recovery's words, in place of the restored status of the same package
    // (or, without one, under `package_name`), so that the first report after connecting says
    // what happened to the offer. Call after restore().
    void report_interrupted(const Attempt& a, const std::string& package_name);
    // packages.json as found at start, after set_active: its statuses are the first report after
    // the restart, and the same offer again (same all_packages_hash) is recognised as installed
    // while its version is still the active one.
    void restore(Installed in);

    void offer(Offer offer);
    const Report& report() const { return report_; }
    // The version `current` names as far as the installer knows (after a commit or a rollback).
    const std::string& active_version() const { return active_; }
    State state() const { return state_; }

    // TERM or INT.
    void shutdown();

    // service::CriticalSection: the runtime's shutdown waits on it.
    bool active() const override;
    void on_end(std::function<void()> cb) override;

    // For /readyz: false in the critical section, with the step it is in.
    bool ready() const { return !critical(state_); }
    std::string describe() const;
    // The collector health after an install: false after a rollback whose health check failed
    // too (the previous version runs, unproven), with why.
    bool unhealthy() const { return !unhealthy_reason_.empty(); }
    const std::string& unhealthy_reason() const { return unhealthy_reason_; }

  private:
    void post(Event ev, std::string reason = {});
    // The same, on a later turn: for outcomes decided inside an entry action.
    void later(Event ev, std::string reason = {});
    void enter(State s);
    void work(State s);
    // Ties a completion to the state that started it: it does nothing once the state changed.
    template <class F>
    auto bound(F fn);
    void accept(Offer offer);

    void check(const Inspection& in);
    void download_progress(const download::Progress& p);
    void verify_artifact();
    void start_rounds();
    void start_round();
    void probe_next();
    void round_result(bool passed, const std::string& why);
    void health_deadline();
    void rollback_next();
    void end_critical();

    void set_status(Code code, std::string error = {});
    void publish();
    void log_state(State from, State to) const;
    std::string key_of(const Offer& o) const;
    Attempt attempt(std::string outcome, std::string reason) const;
    Installed ended_packages() const;

    loop::Scheduler& sched_;
    Ports ports_;
    Settings settings_;
    std::function<void()> on_report_;

    State state_ = State::idle;
    uint64_t gen_ = 0;  // bumped on every state change; completions of older states are dropped
    std::unique_ptr<Step> step_;
    std::unique_ptr<loop::Timer> round_timer_;
    std::unique_ptr<loop::Timer> deadline_timer_;
    std::unique_ptr<loop::Timer> shutdown_bound_;

    // The install in progress.
    std::optional<Offer> offer_;
    std::optional<OfferedPackage> pkg_;    // its TopLevel package
    size_t top_index_ = 0;                 // its entry in report_
    std::string from_;                     // active when it began
    std::string reason_;                   // why it failed (the report's error)
    bool cancelled_ = false;               // failed because a newer offer superseded it
    bool record_attempt_ = false;          // the failure goes into last-attempt.json
    std::optional<download::Artifact> artifact_;
    std::optional<Stager::Staged> staged_;
    std::string signer_;
    // Health rounds.
    uint32_t passes_ = 0;
    std::string last_failure_;
    uint32_t failure_repeats_ = 0;
    size_t probe_index_ = 0;
    // Rollback.
    enum class RollbackStep { stop, switch_back, start, health, done };
    RollbackStep rb_step_ = RollbackStep::stop;
    bool rb_switched_ = false;
    bool rb_healthy_ = false;
    std::string rb_failure_;

    std::optional<Offer> pending_;  // the latest offer that arrived during an install
    std::string done_key_;          // the offer last brought to an end (repeats are ignored)
    std::string active_;            // the version `current` names, as far as we know
    std::string active_hash_;       // the package hash installed with it
    std::optional<Attempt> last_attempt_;
    std::optional<Installed> last_installed_;  // packages.json as last written (or read at start)
    // all_packages_hash restored from packages.json, until another offer arrives: an offer with it
    // is the one already installed.
    std::string restored_hash_;
    size_t restored_top_ = 0;  // our package's entry in the restored report_
    std::string unhealthy_reason_;
    MonoTime last_progress_{};
    bool progress_reported_ = false;

    bool shutting_down_ = false;
    bool end_waiters_done_ = false;  // the shutdown bound passed, or the section ended
    std::vector<std::function<void()>> end_waiters_;

    Report report_;
    loop::Guard guard_;
};

}  // namespace myr::update
