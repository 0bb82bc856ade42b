// The installer: an offered TopLevel package in, the new collector running and healthy (or the old
// one back) out. The states and transitions are the table of machine.hpp; this class only runs
// them: post(Event) looks the pair up, enter(State) journals the journaled states durably and then
// starts the state's one asynchronous step through a port (ports.hpp). Every completion is tied to
// the state that started it (a generation number), so an answer that arrives after a cancel or a
// shutdown changes nothing.
//
// The parts it drives, each in its own file: the ledger (what was offered and reported,
// ledger.hpp), the Checking rules (a pure verdict, check.hpp), the health rounds
// (health_rounds.hpp) and the rollback's steps inside rolling_back (rollback.hpp).
//
// Checking ends with a random wait of up to update.startJitter (a fleet's requests spread over the
// window), reported as Downloading at 0 %.
// Downloading fetches again after a transient failure, within update.retryFor (retry.hpp); the
// wait between fetches is a timer tied to the state like any completion.
//
// Offers during an install: the same offer again is ignored, or taken over when only its URL,
// headers or hash changed (the install goes on); a different one is remembered (latest wins),
// cancels the install before the critical section and waits for its end inside it. Offers when
// idle: only what is installed answers an offer (Ledger::settled); one that failed is processed
// again when sent again, at most once per backoff step (ResendGate).
// Shutdown: outside the critical section the install is dropped where it is (the journal, if
// any, makes the next start clean up); inside, it runs to its end, bounded by 2 × stopTimeout + 2
// × healthTimeout, and on_end() tells the runtime.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loop/scheduler.hpp"
#include "service/service_controller.hpp"
#include "update/end_wait.hpp"
#include "update/events.hpp"
#include "update/health_rounds.hpp"
#include "update/ledger.hpp"
#include "update/machine.hpp"
#include "update/outcome.hpp"
#include "update/ports.hpp"
#include "update/resend_gate.hpp"
#include "update/rollback.hpp"
#include "update/settings.hpp"
#include "update/trial_watch.hpp"

namespace myr::update {

struct Ports {
    Fetcher& fetcher;
    Verifier& verifier;
    Stager& stager;
    Preflighter& preflight;
    service::ServiceController& service;
    VolumeOps& volume;
    HealthProbe& health;
};

// The installer as a rollout engine sees it (docs/opamp.md, "The updater's own health"): every
// field "" when it does not apply; times in RFC 3339.
struct UpdateView {
    std::string state;             // the installer's state; "trial" also for a resumed trial
    std::string target_version;    // of the install in progress or on trial
    std::string previous_version;  // what it replaces (kept until the trial is over)
    std::string trial_until;       // the trial's end: the install is final then
    std::string retry_until;       // while a transient failure is fetched again
    std::string quarantine_until;  // the last attempt's quarantine ("until the offer changes")
    std::string last_error;        // the install's, or the last attempt's reason
    bool operator==(const UpdateView&) const = default;
};

class Installer : public service::CriticalSection {
  public:
    // `on_report` runs on the loop whenever report() changed.
    Installer(loop::Scheduler& sched, Ports ports, Settings settings,
              std::function<void()> on_report);
    ~Installer() override = default;
    Installer(const Installer&) = delete;
    Installer& operator=(const Installer&) = delete;

    // What is known at start (after recovery and seeding): the active version, the package hash
    // stored with it, and the outcome recovery found (an interrupted install), reported once.
    void set_active(std::string version, std::string package_hash = {}) {
        ledger_.set_active(std::move(version), std::move(package_hash));
    }
    void set_last_attempt(Attempt a) { ledger_.set_last_attempt(std::move(a)); }
    // An install that recovery undid at start (last-attempt.json "interrupted"): reported as
    // InstallFailed with recovery's words, in place of the restored status of the same package
    // (or, without one, under `package_name`), so that the first report after connecting says
    // what happened to the offer. Call after restore().
    void report_interrupted(const Attempt& a, const std::string& package_name) {
        ledger_.report_interrupted(a, package_name);
    }
    // packages.json as found at start, after set_active: its statuses are the first report after
    // the restart, and the same offer again (same all_packages_hash) is recognised as installed
    // while its version is still the active one.
    void restore(Installed in) { ledger_.restore(std::move(in)); }
    // A trial that recovery let go on after a restart (journal phase "trial", deadline `until` in
    // Unix seconds): at the deadline the journal is cleared and GC runs, as at the end of a trial
    // in one run. Only the deadline is watched: a crash loop now ends the container as usual,
    // and the next start counts it as a boot. An offer before the deadline ends the trial as
    // passed (the new install starts from this version).
    void resume_trial(std::string version, int64_t until);

    // Who counts what the installer does (/metrics); set before the first offer.
    void observe(Observer o) { observer_ = std::move(o); }

    void offer(Offer offer);
    const Report& report() const { return ledger_.report(); }
    // What was offered and reported: the view the OpAMP adapter reads.
    const Ledger& ledger() const { return ledger_; }
    // The version `current` names as far as the installer knows (after a commit or a rollback).
    const std::string& active_version() const { return ledger_.active(); }
    State state() const { return state_; }

    // TERM or INT.
    void shutdown();

    // service::CriticalSection: the runtime's shutdown waits on it.
    bool active() const override { return in_section(state_) && !end_wait_.released(); }
    bool handles_crash_loop() const override { return active() || state_ == State::trial; }
    void on_end(std::function<void()> cb) override {
        if (!active()) return cb();
        end_wait_.add(std::move(cb));
    }

    // For /readyz: false in the critical section, with the step it is in.
    bool ready() const { return !critical(state_); }
    std::string describe() const;
    // During a trial (in this run or resumed after a restart): "trial until <RFC3339 time>";
    // "" otherwise.
    std::string trial_text() const;
    // What the server is told of the updater itself (its own ComponentHealth): the state, the
    // versions, the deadlines, the last error. installer_view.cpp; docs/opamp.md.
    UpdateView view() const;
    // The collector health after an install: false after a rollback whose health check failed
    // too (the previous version runs, unproven), with why.
    bool unhealthy() const { return !unhealthy_reason_.empty(); }
    const std::string& unhealthy_reason() const { return unhealthy_reason_; }

  private:
    // A trial runs when update.trialPeriod is set and no shutdown is under way; without one,
    // trial is a step of the commit and stays inside the critical section (in_section).
    bool trial_on() const { return settings_.trial_period > Duration(0) && !shutting_down_; }
    bool in_section(State s) const { return critical(s) || (s == State::trial && !trial_on()); }
    void post(Event ev, Why why = {});
    void fail_with(Failure code, std::string text) { post(Event::failed, {code, std::move(text)}); }
    // A step's answer: done, or failed with `code` and "<what>: <error>".
    Done step_done(Failure code, std::string what);
    // The same, on a later turn: for outcomes decided inside an entry action.
    void later(Event ev, Why why = {});
    void enter(State s);
    void work(State s);
    // Ties a completion to the state that started it: it does nothing once the state changed.
    template <class F>
    auto bound(F fn) {
        return guard_.bind([this, g = gen_, fn = std::move(fn)](auto&&... args) mutable {
            if (g != gen_) return;
            fn(std::forward<decltype(args)>(args)...);
        });
    }
    void accept(Offer offer);
    void offer_during_install(Offer o);
    void hold(Offer o, Duration wait);
    void refresh(Offer o);

    // Entry actions with more than one line.
    void rest();
    void check(const Inspection& in);
    void verify_offer();
    void start_after_jitter();
    void download();
    void fetch(bool from_zero = false);
    void fetch_failed(const Error& e);
    void verify_artifact();
    void stage();
    void preflight();
    void activate();
    void start_trial();
    void end_resumed_trial();
    void commit();
    void commit_failed(const Error& e);
    void finish_failed();
    void roll_back();
    void finish_rollback();
    void finish(VolumeOps::Finish f, const char* what);

    void status(Code code, std::string error = {});
    void publish() {
        if (on_report_) on_report_();
    }
    void log_state(State from, State to) const;
    void ended(Ending::Kind kind);
    Attempt attempt(Outcome outcome, std::string reason) const;

    loop::Scheduler& sched_;
    Ports ports_;
    Settings settings_;
    std::function<void()> on_report_;
    Observer observer_;
    Ledger ledger_;
    HealthRounds rounds_;
    Rollback rollback_;  // uses rounds_

    State state_ = State::idle;
    uint64_t gen_ = 0;  // bumped on every state change; completions of older states are dropped
    std::unique_ptr<Step> step_;

    // The install in progress.
    std::optional<Offer> offer_;
    std::optional<OfferedPackage> pkg_;  // its TopLevel package
    std::string from_;                   // active when it began
    uint64_t spool_reserve_ = 0;         // room the download leaves for the binary (check.hpp)
    Why why_;                            // why it failed (the report's error), or cancelled
    Rule refused_by_ = Rule::none;       // the Checking rule that refused it
    std::string refused_under_;          // the trusted root its signature was refused under
    bool crash_loop_ = false;            // the health rounds ended on a crash loop
    bool record_attempt_ = false;        // the failure goes into last-attempt.json
    bool swapped_ = false;               // swapping was entered: a failed commit is undone
    MonoTime first_try_{};               // of the download: update.retryFor counts from here
    MonoTime fetch_began_{};             // of the fetch in flight
    int retries_ = 0;                    // fetches started again after a transient failure
    bool zero_tried_ = false;            // fetched from zero after a resumed digest mismatched
    std::unique_ptr<loop::Timer> retry_timer_;
    std::optional<download::Artifact> artifact_;
    std::optional<Stager::Staged> staged_;
    RollbackResult rolled_;
    TrialWatch trial_;
    WallTime trial_until_{};  // the trial's deadline (this run's or the resumed one's)
    // A trial resumed after a restart: its version, its deadline timer, the step that ends it.
    std::string resumed_version_;
    std::unique_ptr<loop::Timer> resumed_deadline_;
    std::unique_ptr<Step> resumed_end_;

    std::optional<Offer> pending_;  // the latest offer that arrived during an install
    // A failed offer sent again is checked again, at most once per backoff step (resend_gate.hpp):
    // one sent earlier waits in held_ for the step's end.
    ResendGate resend_;
    std::optional<Offer> held_;
    std::unique_ptr<loop::Timer> resend_timer_;
    std::string unhealthy_reason_;

    bool shutting_down_ = false;
    EndWait end_wait_;

    loop::Guard guard_;
};

}  // namespace myr::update
