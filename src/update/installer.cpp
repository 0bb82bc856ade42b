#include "update/installer.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "core/hex.hpp"
#include "core/log.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "update/check.hpp"
#include "update/requests.hpp"
#include "update/retry.hpp"

namespace myr::update {
namespace {

// A write that found the filesystem full (or the quota used up): room may come back.
bool out_of_room(const Error& e) {
    return e.sys_errno() == ENOSPC || e.sys_errno() == EDQUOT;
}

}  // namespace

namespace {

// The start jitter's wait as a Step: dropping it (a newer offer, a shutdown) stops the timer.
struct Wait final : Step {
    std::unique_ptr<loop::Timer> timer;
};

// Uniform in [0, window], whole milliseconds.
Duration draw_delay(Duration window) {
    if (window.count() <= 0) return Duration{0};
    const auto ms = static_cast<double>(window.count() + 1) * random_unit();
    return std::min(window, Duration{static_cast<Duration::rep>(ms)});
}

}  // namespace

Installer::Installer(loop::Scheduler& sched, Ports ports, Settings settings,
                     std::function<void()> on_report)
    : sched_(sched),
      ports_(ports),
      settings_(std::move(settings)),
      on_report_(std::move(on_report)),
      ledger_(settings_.progress_every),
      rounds_(sched, ports.health, ports.service, health_checks(settings_),
              rounds_settings(settings_)),
      rollback_(ports.service, ports.volume, rounds_),
      trial_(sched, ports.service),
      resumed_deadline_(sched.timer()),
      resend_timer_(sched.timer()),
      end_wait_(sched) {}

void Installer::offer(Offer o) {
    ledger_.note_refused(o.refused);
    if (shutting_down_) return;
    if (state_ != State::idle) return offer_during_install(std::move(o));
    resend_timer_->stop();
    held_.reset();
    if (ledger_.settled(o)) return;
    if (auto wait = resend_.wait(Ledger::key_of(o), sched_.now())) return hold(std::move(o), *wait);
    if (resumed_end_) {
        pending_ = std::move(o);  // the resumed trial is being closed: right after it
        return;
    }
    accept(std::move(o));
    if (!pkg_) {
        publish();  // nothing to install: only the answers for the other packages
        return;
    }
    post(Event::offer);
}

// A failed offer sent again before its backoff step is over: checked at the end of the step (the
// latest resend wins; another offer, an install or a shutdown drops it).
void Installer::hold(Offer o, Duration wait) {
    if (!held_) {
        log::info(
            "update: a failed offer sent again; it is checked again after the backoff",
            {{"in", format_duration(wait)}, {"failures", std::to_string(resend_.failures())}});
    }
    held_ = std::move(o);
    resend_timer_->start(wait, guard_.bind([this] {
        if (!held_ || shutting_down_) return;
        Offer again = std::move(*held_);
        held_.reset();
        offer(std::move(again));
    }));
}

void Installer::offer_during_install(Offer o) {
    switch (Ledger::while_busy(o, *offer_, why_.code == Failure::cancelled, pending_)) {
        case Ledger::WhileBusy::ignore:
            return;
        case Ledger::WhileBusy::refresh:
            return refresh(std::move(o));
        case Ledger::WhileBusy::again:
            pending_ = std::move(o);
            return;
        case Ledger::WhileBusy::withdraw:
            log::info("update: newer offer withdrawn", {{"version", pkg_->version}});
            pending_.reset();
            return;
        case Ledger::WhileBusy::remember:
            break;
    }
    std::string version;
    for (const OfferedPackage& p : o.packages) {
        if (p.top_level) version = p.version;
    }
    log::info(
        "update: newer offer remembered",
        {{"state", to_string(state_)}, {"version", version}, {"running_version", pkg_->version}});
    pending_ = std::move(o);
    post(Event::cancel, {Failure::cancelled, "superseded by the offer of " + version});
}

// The install's own offer sent again with a fresh URL or headers (a presigned URL renewed): the
// install goes on where it is (its jitter, its kept part), and its next request uses them.
void Installer::refresh(Offer o) {
    for (const OfferedPackage& p : o.packages) {
        if (!p.top_level || !p.file || !pkg_->file) continue;
        pkg_->file->url = p.file->url;
        pkg_->file->headers = p.file->headers;
        break;
    }
    ledger_.refresh(o);
    log::info(
        "update: the offer being installed was sent again with a new URL or hash; taken "
        "over for the next request",
        {{"version", pkg_->version}, {"state", to_string(state_)}});
    offer_ = std::move(o);
    publish();
}

// Makes `o` the install in progress; the ledger lays out its report.
void Installer::accept(Offer o) {
    if (!resumed_version_.empty()) {
        log::info("update: a new offer ends the trial as passed", {{"version", resumed_version_}});
        resumed_deadline_->stop();
        resumed_version_.clear();
    }
    offer_ = std::move(o);
    pkg_ = ledger_.open(*offer_);
}

void Installer::post(Event ev, Why why) {
    // A remembered offer posted from idle may still be queued when a shutdown arrives.
    if (ev == Event::offer && shutting_down_) return;
    auto n = next(state_, ev);
    if (!n) {
        // A pair missing from the table is a bug in the installer, never an input: stop loudly
        // rather than leave the volume in a state nobody designed.
        log::error("update: state machine", {{"error", n.error().message()}});
        std::abort();
    }
    if (*n == state_) {
        // Outside the critical section a shutdown leaves the state as it is (idle, or an install
        // dropped where it is): only inside it does the shutdown wait.
        if (ev == Event::shutdown && critical(state_)) {
            log::info("update: shutdown waits for the critical section",
                      {{"state", to_string(state_)}});
        }
        return;
    }
    // The first failure is the one to report; a cancel says why it ended instead.
    const bool failure = ev == Event::failed || ev == Event::undo;
    if ((failure && why_.code == Failure::none) || ev == Event::cancel) {
        why_ = Why{why.code, one_line(std::move(why.text)), why.cls};
    }
    State from = state_;
    step_.reset();
    rollback_.cancel();  // and the health rounds
    trial_.stop();
    ++gen_;
    state_ = *n;
    log_state(from, state_);
    if (observer_.state) observer_.state(state_);
    if (in_section(from) && !in_section(state_)) {
        end_wait_.release(shutting_down_);
        publish();  // the owner learns that the section is over (readiness, a pending crash loop)
    }
    enter(state_);
}

Done Installer::step_done(Failure code, std::string what) {
    return bound([this, code, what = std::move(what)](Status st) {
        if (!st) return fail_with(code, what + ": " + st.error().message());
        post(Event::done);
    });
}

void Installer::later(Event ev, Why why) {
    sched_.post(bound([this, ev, why = std::move(why)]() mutable { post(ev, std::move(why)); }));
}

// Journaled states write the journal durably first: a crash during the work then finds a journal
// that names it.
void Installer::enter(State s) {
    if (!journaled(s) || (s == State::trial && !trial_on())) return work(s);
    auto done = bound([this, s](Status st) {
        // Going back to the known-good version is the safe direction even unjournaled.
        if (!st && s == State::rolling_back) {
            log::error("update: journal not written; rolling back anyway",
                       {{"error", st.error().message()}});
        } else if (!st) {
            return post(Event::failed, Why{Failure::journal, "journal: " + st.error().message(),
                                           classify(st.error())});
        }
        work(s);
    });
    VolumeOps::JournalEntry e{std::string(phase(s)), from_, pkg_->version, hex::encode(pkg_->hash)};
    if (s == State::trial) {
        trial_until_ = saturating_add(sched_.wall(), settings_.trial_period);
        e.trial_until = unix_seconds(trial_until_);
    }
    step_ = ports_.volume.write_journal(std::move(e), std::move(done));
}

// One asynchronous step per state.
void Installer::work(State s) {
    switch (s) {
        case State::idle:
            return rest();
        case State::checking:
            status(Code::installing);
            step_ = ports_.volume.inspect(bound([this](Result<Inspection> r) {
                if (!r) {
                    return post(Event::failed,
                                Why{Failure::inspect, "inspect the volume: " + r.error().message(),
                                    classify(r.error())});
                }
                check(*r);
            }));
            return;
        case State::downloading:
            return download();
        case State::verifying:
            return verify_artifact();
        case State::staging:
            return stage();
        case State::preflight:
            return preflight();
        case State::stopping:
            publish();  // /readyz and the report say the collector is being replaced
            return ports_.service.stop(step_done(Failure::stop, "stop the supervisor"));
        case State::swapping:
            return activate();
        case State::starting:
            return ports_.service.start(
                step_done(Failure::start, "start the supervisor on " + pkg_->version));
        case State::health_checking:
            rounds_.start(bound([this](HealthVerdict v) {
                if (v.healthy) return post(Event::done);
                crash_loop_ = v.crash_loop;
                fail_with(Failure::health, "health check failed: " + v.why);
            }));
            return;
        case State::trial:
            return start_trial();
        case State::committed:
            return commit();
        case State::failed:
            return finish_failed();
        case State::rolling_back:
            return roll_back();
        case State::rolled_back:
            return finish_rollback();
    }
}

// Idle: the install is over; a remembered offer starts on a later turn.
void Installer::rest() {
    offer_.reset();
    pkg_.reset();
    artifact_.reset();
    staged_.reset();
    retry_timer_.reset();
    why_ = {};
    refused_by_ = Rule::none;
    refused_under_.clear();
    zero_tried_ = false;
    crash_loop_ = false;
    record_attempt_ = false;
    swapped_ = false;
    if (shutting_down_ || !pending_) return;
    Offer o = std::move(*pending_);
    pending_.reset();
    accept(std::move(o));
    pkg_ ? later(Event::offer) : publish();
}

// Decide first (check_offer, pure), then act on the verdict.
void Installer::check(const Inspection& in) {
    from_ = in.active;
    ledger_.take_inspection(in);
    auto url_policy = [this](const std::string& url) { return ports_.fetcher.check_url(url); };
    CheckPolicy policy = check_policy(settings_);
    policy.now = sched_.wall();
    policy.trust = ports_.verifier.trust();
    CheckVerdict v = check_offer(*pkg_, in, policy, url_policy);
    spool_reserve_ = spool_reserve(in);
    // From here on the install goes by the canonical name alone (journal, volume, state files,
    // comparisons), so that what it writes is what recovery and the next Checking can read. The
    // report keeps the name the server offered: the ledger laid it out before.
    if (v.kind != CheckVerdict::Kind::refused) pkg_->version = v.version;
    switch (v.kind) {
        case CheckVerdict::Kind::proceed:
            return verify_offer();
        case CheckVerdict::Kind::installed:
            return post(Event::installed);
        case CheckVerdict::Kind::refused:
            refused_by_ = v.rule;
            // Our policy or the node's state said no: never an attempt; the same offer sent again
            // is checked again. A quarantine answers from the record of a deterministic failure.
            return post(Event::failed,
                        Why{v.rule == Rule::no_room ? Failure::room : Failure::policy,
                            std::move(v.text), class_of(v.rule)});
    }
}

// The start jitter (update.startJitter): a fleet offered one release spreads its requests over the
// window instead of reaching the artifact server in the same second. The wait is the end of
// Checking, before Downloading writes its journal: a newer offer or a shutdown drops it as it
// drops a Checking, and a pod killed while it waits leaves nothing for recovery to undo (no
// "interrupted" install). The server already sees Downloading at 0 %: the offer is accepted and
// its download is what comes next. Every install waits, also the one after a restart: a fleet
// restarted at once (a node pool's upgrade) reconnects at once and is a herd again.
void Installer::start_after_jitter() {
    const Duration delay = draw_delay(settings_.start_jitter);
    if (delay.count() == 0) return post(Event::passed);
    ledger_.restart_progress();
    status(Code::downloading);
    log::info("update: download waits for the start jitter",
              {{"version", pkg_->version},
               {"delay", format_duration(delay)},
               {"start_jitter", format_duration(settings_.start_jitter)}});
    auto wait = std::make_unique<Wait>();
    wait->timer = sched_.timer();
    wait->timer->start(delay, bound([this] { post(Event::passed); }));
    step_ = std::move(wait);
}

// Downloading runs one fetch after another until one succeeds, a deterministic failure ends it, or
// update.retryFor since the first try has passed (retry.hpp); it stays Downloading throughout.
void Installer::download() {
    record_attempt_ = true;
    first_try_ = sched_.now();
    retries_ = 0;
    status(Code::downloading);
    fetch();
}

void Installer::fetch(bool from_zero) {
    ledger_.restart_progress();
    fetch_began_ = sched_.now();
    download::Downloader::Handlers h;
    h.on_progress = bound([this](const download::Progress& p) {
        if (ledger_.progress(p, sched_.now())) publish();
    });
    h.on_done = bound([this](Result<download::Artifact> a) {
        if (!a) return fetch_failed(a.error());
        // A kept part that was stale or corrupt (another writer, a disk that lied) shows only
        // now: tried once from zero before the mismatch counts against the package.
        if (a->resumed && !zero_tried_ && check_digest(*pkg_->file, a->sha256_hex)) {
            log::warn(
                "update: the digest of a resumed download does not match; fetching it "
                "once from zero",
                {{"version", pkg_->version}, {"downloaded", a->sha256_hex}});
            zero_tried_ = true;
            return fetch(true);
        }
        artifact_ = std::move(a.value());
        if (observer_.downloaded) {
            observer_.downloaded(artifact_->size,
                                 std::chrono::duration_cast<Duration>(sched_.now() - fetch_began_));
        }
        post(Event::done);
    });
    download::Request req = download_request(*pkg_, settings_);
    req.reserve = spool_reserve_;  // the binary, when the spool shares the volume
    req.fresh = from_zero;
    step_ = ports_.fetcher.fetch(std::move(req), std::move(h));
}

// "download: <cause> (<url>)": the downloader names the URL once, without its query.
void Installer::fetch_failed(const Error& e) {
    const FailureClass cls = classify(e);
    const bool again = cls == FailureClass::transient;
    const Duration elapsed = std::chrono::duration_cast<Duration>(sched_.now() - first_try_);
    auto wait = again ? next_retry(retries_ + 1, elapsed, settings_.retry_for, random_unit())
                      : std::nullopt;
    if (!wait) {
        // An expired budget is still transient: recorded so, the same offer is tried again.
        std::string text = e.message();
        if (again && retries_ > 0) {
            text += "; gave up after " + std::to_string(retries_) + " retries in " +
                    format_duration(elapsed) + " (update.retryFor is " +
                    format_duration(settings_.retry_for) + ")";
        }
        return post(Event::failed, Why{Failure::download, std::move(text), cls});
    }
    ++retries_;
    log::warn("update: download failed; retrying", {{"version", pkg_->version},
                                                    {"error", e.message()},
                                                    {"retry", std::to_string(retries_)},
                                                    {"in", format_duration(*wait)}});
    status(Code::downloading, "retrying: " + one_line(e.message()));
    retry_timer_ = sched_.timer();
    retry_timer_->start(*wait, bound([this] {
        // A shutdown outside the critical section drops the install as is.
        if (!shutting_down_) fetch();
    }));
}

// The end of Checking, before the start jitter and the download: the bundle is verified against
// the offered content hash, so that an offer whose signature is refused costs the artifact server
// no request and the volume no byte. Verifying checks after the download that the bytes are the
// ones this hash names. A refusal here is an attempt like one after the download (it is
// deterministic: the same offer is quarantined), but nothing was written that needs cleaning.
void Installer::verify_offer() {
    auto v = check_signature(*pkg_->file, settings_.require_signature);
    switch (v.kind) {
        case SignatureVerdict::Kind::refused:
            // A bundle missing where one is required: the offer's fault, whatever the root.
            record_attempt_ = true;
            return later(Event::failed, std::move(v.why));
        case SignatureVerdict::Kind::unsigned_allowed:
            return start_after_jitter();
        case SignatureVerdict::Kind::verify:
            break;
    }
    auto done = bound([this](Result<Verifier::Verified> r) {
        if (!r) {
            record_attempt_ = true;
            // No usable root is the node's (refused); a bundle the root refuses is held against
            // the package only under this root (Attempt::trust).
            const bool node = r.error().code() == Errc::refused;
            if (!node) refused_under_ = ports_.verifier.trust();
            return post(Event::failed,
                        Why{Failure::signature, "signature: " + r.error().message(),
                            node ? FailureClass::refused : FailureClass::deterministic});
        }
        if (r->fields.empty()) {
            log::info("update: signature verified",
                      {{"version", pkg_->version}, {"subject", r->subject}, {"issuer", r->issuer}});
        } else {
            log::info("update: signature verified", {{"version", pkg_->version},
                                                     {"subject", r->subject},
                                                     {"issuer", r->issuer},
                                                     {"identity_fields", r->fields}});
        }
        start_after_jitter();
    });
    Verifier::Request req{hex::encode(pkg_->file->content_hash), pkg_->file->signature,
                          pkg_->version};
    step_ = ports_.verifier.verify(std::move(req), std::move(done));
}

void Installer::verify_artifact() {
    status(Code::installing);
    if (auto why = check_digest(*pkg_->file, artifact_->sha256_hex)) {
        return later(Event::failed, std::move(*why));
    }
    if (pkg_->file->signature.empty()) {
        log::warn("update: installing an unsigned artifact (update.requireSignature is false)",
                  {{"version", pkg_->version}, {"hash", artifact_->sha256_hex}});
    }
    later(Event::done);
}

void Installer::stage() {
    status(Code::installing);
    auto done = bound([this](Result<Stager::Staged> r) {
        // A Stager's errors name the step themselves (`stage: <member>: <rule>`). The volume full
        // in spite of the room checks (another writer, a binary larger than estimated) is
        // transient: the staging is discarded, the active version was never touched.
        if (!r) {
            return post(Event::failed, Why{Failure::stage, r.error().message(),
                                           out_of_room(r.error()) ? FailureClass::transient
                                                                  : FailureClass::deterministic});
        }
        staged_ = std::move(r.value());
        post(Event::done);
    });
    step_ = ports_.stager.stage(artifact_->path, std::move(done));
}

void Installer::preflight() {
    auto done = bound([this](Result<stage::PreflightReport> r) {
        // The preflight's errors name it themselves (`preflight: validate (…) ended with …`).
        if (!r) return fail_with(Failure::preflight, r.error().message());
        post(Event::done);  // its peak memory is in the preflight's own line
    });
    step_ = ports_.preflight.run(preflight_request(*pkg_, *staged_, settings_), std::move(done));
}

void Installer::activate() {
    swapped_ = true;  // even a failed activation may have renamed `current`
    VolumeOps::Activation a{pkg_->version, staged_->id, staged_->sha256_hex, from_};
    auto done = bound([this](Status st) {
        // On an error `current` may already name the new version (a failing directory fsync
        // after the rename): rolling_back switches back either way.
        if (!st) {
            return fail_with(Failure::activation,
                             "activate " + pkg_->version + ": " + st.error().message());
        }
        ledger_.set_active_version(pkg_->version);
        post(Event::done);
    });
    step_ = ports_.volume.activate(std::move(a), std::move(done));
}

// The trial (machine.hpp): Installed is reported and packages.json written now (the version
// serves), but the journal stays (phase trial, with its deadline) and GC waits, so that the
// previous version is still there to go back to until the trial is over.
void Installer::start_trial() {
    if (!trial_on()) return later(Event::done);
    unhealthy_reason_.clear();
    Installed packages = ledger_.installed(*offer_, *pkg_, staged_.has_value());
    auto done = bound([this, packages](Status st) {
        if (!st) return fail_with(Failure::commit, one_line("commit: " + st.error().message()));
        ledger_.commit(*offer_, packages, attempt(Outcome::installed, ""));
        publish();
        log::info("update: on trial", {{"version", pkg_->version},
                                       {"until", format_rfc3339(trial_until_)},
                                       {"previous", from_}});
        // To the journaled deadline, which a restart would go by too.
        auto left = std::chrono::duration_cast<Duration>(trial_until_ - sched_.wall());
        trial_.start(std::max(left, Duration(0)), settings_.trial_max_restarts, pkg_->version,
                     bound([this](Status verdict) {
                         if (verdict) return post(Event::done);
                         fail_with(Failure::trial,
                                   "rolled back after commit: " + verdict.error().message());
                     }));
    });
    VolumeOps::Finish f;
    f.clear_journal = false;
    f.attempt = attempt(Outcome::installed, "");
    f.packages = packages;
    step_ = ports_.volume.finish(std::move(f), std::move(done));
}

void Installer::resume_trial(std::string version, int64_t until) {
    resumed_version_ = std::move(version);
    trial_until_ = from_unix_seconds(until);
    auto left = std::chrono::duration_cast<Duration>(trial_until_ - sched_.wall());
    log::info("update: the trial goes on after a restart",
              {{"version", resumed_version_}, {"until", format_rfc3339(trial_until_)}});
    resumed_deadline_->start(std::max(left, Duration(0)),
                             guard_.bind([this] { end_resumed_trial(); }));
}

// The resumed trial's deadline: what committed does at the end of a trial in one run, without
// the report (packages.json and Installed were written when the trial began).
void Installer::end_resumed_trial() {
    if (state_ != State::idle || resumed_version_.empty()) return;
    VolumeOps::Finish f;
    f.gc = true;
    resumed_end_ = ports_.volume.finish(std::move(f), guard_.bind([this](Status st) {
        if (!st) {
            log::warn("update: the end of the trial not recorded (the next start decides)",
                      {{"version", resumed_version_}, {"error", st.error().message()}});
        } else {
            log::info("update: trial passed", {{"version", resumed_version_}});
        }
        resumed_version_.clear();
        sched_.post(guard_.bind([this] {
            resumed_end_.reset();
            publish();
            if (state_ == State::idle) rest();  // an offer that arrived meanwhile
        }));
    }));
}

std::string Installer::trial_text() const {
    if (state_ != State::trial && resumed_version_.empty()) return "";
    return "trial until " + format_rfc3339(trial_until_);
}

std::string Installer::describe() const {
    if (state_ == State::trial) return pkg_->version + " on " + trial_text();
    if (state_ == State::idle || !pkg_) {
        if (!resumed_version_.empty()) return resumed_version_ + " on " + trial_text();
        return "no install in progress";
    }
    return "installing " + pkg_->version + ": " + to_string(state_);
}

void Installer::commit() {
    unhealthy_reason_.clear();
    // Found installed in Checking, nothing was fetched: the package hash the active version was
    // installed with stays what it was (unknown for the image's version), never the offer's.
    Installed packages = ledger_.installed(*offer_, *pkg_, staged_.has_value());
    auto done = bound([this, packages](Status st) {
        if (!st) return commit_failed(st.error());
        ledger_.commit(*offer_, packages, attempt(Outcome::installed, ""));
        resend_.clear();
        publish();
        // Found installed at Checking, nothing was installed: not an attempt.
        if (record_attempt_) ended(Ending::Kind::installed);
        post(Event::done);
    });
    VolumeOps::Finish f;
    f.attempt = attempt(Outcome::installed, "");
    f.packages = packages;
    f.gc = true;
    step_ = ports_.volume.finish(std::move(f), std::move(done));
}

// The journal may still name the install, so the next start would switch back: Installed would
// be a promise the volume does not keep. A swapped install is undone now (rolling_back writes its
// own journal phase), so that the version that runs, the report and the next start agree; one
// Checking found installed swapped nothing and has nothing to undo.
void Installer::commit_failed(const Error& e) {
    std::string why = one_line("commit: " + e.message());
    log::error("update: commit failed",
               {{"version", pkg_->version},
                {"error", why},
                {"then", swapped_ ? "rolling back to " + from_ : "nothing to undo"}});
    if (!swapped_) {
        status(Code::install_failed, why);  // committed goes to idle: no clean-up step reports it
        return fail_with(Failure::commit, std::move(why));
    }
    post(Event::undo, {Failure::commit, std::move(why)});
}

void Installer::finish_failed() {
    const bool cancelled = why_.code == Failure::cancelled;
    VolumeOps::Finish f;
    if (staged_) f.staged_id = staged_->id;
    if (!cancelled) {
        resend_.failed(Ledger::key_of(*offer_), sched_.now(), random_unit());
        if (record_attempt_) f.attempt = attempt(Outcome::failed, why_.text);
        f.packages = ledger_.fail(why_.text, f.attempt);
        publish();
        ended(Ending::Kind::failed);
    }
    finish(std::move(f), "update: clean-up after a failed install");
}

void Installer::roll_back() {
    rolled_ = {};
    auto done = bound([this](RollbackResult r) {
        r.failure = one_line(std::move(r.failure));
        rolled_ = std::move(r);
        post(rolled_.healthy ? Event::done : Event::failed);
    });
    rollback_.start(
        from_, [this] { ledger_.set_active_version(from_); }, std::move(done));
}

void Installer::finish_rollback() {
    // A healthy rollback proves nothing new about the collector: an earlier verdict stays.
    if (!rolled_.healthy) unhealthy_reason_ = unhealthy_after(from_, rolled_);
    std::string why = one_line(rolled_back_reason(why_.text, from_, rolled_));
    VolumeOps::Finish f;
    // A rollback that did not switch back keeps the journal: the next start's recovery decides
    // from the volume. One that did has GC remove the version that failed, as a commit would
    // (otherwise every failed release stays on the volume until the next successful install).
    f.clear_journal = f.gc = rolled_.switched;
    f.attempt = attempt(Outcome::rolled_back, why);
    f.packages = ledger_.fail(why, f.attempt);
    resend_.failed(Ledger::key_of(*offer_), sched_.now(), random_unit());
    publish();
    ended(Ending::Kind::rolled_back);
    finish(std::move(f), "update: clean-up after a rollback");
}

// The end of a failed install: a clean-up that fails is logged, and idle follows either way.
void Installer::finish(VolumeOps::Finish f, const char* what) {
    step_ = ports_.volume.finish(std::move(f), bound([this, what](Status st) {
                                     if (!st) log::warn(what, {{"error", st.error().message()}});
                                     post(st ? Event::done : Event::failed);
                                 }));
}

void Installer::shutdown() {
    if (shutting_down_) return;
    shutting_down_ = true;
    pending_.reset();
    held_.reset();
    resend_timer_->stop();
    if (critical(state_)) {
        // The install gets the time the pod's grace period is sized for.
        Duration limit = 2 * settings_.stop_timeout + 2 * settings_.health_timeout;
        end_wait_.bound(limit, guard_.bind([this] {
            log::warn("update: shutdown no longer waits for the install",
                      {{"state", to_string(state_)}});
            end_wait_.release(shutting_down_);
        }));
    }
    post(Event::shutdown);
}

Attempt Installer::attempt(Outcome outcome, std::string reason) const {
    // The class goes with the failure: only a deterministic one is quarantined (check.cpp).
    Attempt a{hex::encode(pkg_->hash), pkg_->version, outcome, std::move(reason),
              format_rfc3339(sched_.wall())};
    if (outcome != Outcome::installed) {
        a.cls = why_.cls;
        if (why_.code == Failure::signature) a.trust = refused_under_;
    }
    return a;
}

// Only during an install, whose report always has its package.
void Installer::status(Code code, std::string error) {
    ledger_.set_status(code, std::move(error));
    publish();
}

void Installer::ended(Ending::Kind kind) {
    if (observer_.ended) {
        observer_.ended(Ending{kind, why_.code, refused_by_, why_.cls, crash_loop_});
    }
}

void Installer::log_state(State from, State to) const {
    log::Level level = to == State::failed || to == State::rolling_back || to == State::rolled_back
                           ? log::Level::warn
                           : log::Level::info;
    log::write_kind(level, "update: state", to_string(to),
                    {{"state", to_string(to)},
                     {"from", to_string(from)},
                     {"version", pkg_ ? pkg_->version : std::string()},
                     {"hash", pkg_ ? hex::encode(pkg_->hash) : std::string()},
                     {"reason", to == State::failed || to == State::rolling_back ? why_.text : ""},
                     {"class", to == State::failed ? to_string(why_.cls) : ""}});
}

}  // namespace myr::update
