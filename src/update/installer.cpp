#include "update/installer.hpp"

#include <cstdlib>

#include "core/hex.hpp"
#include "core/log.hpp"
#include "version/version.hpp"

namespace myr::update {
namespace {

// Reasons go into one report field and one log line: multi-line output (a preflight's last lines)
// is joined, and a runaway message is cut.
std::string one_line(std::string s) {
    for (char& c : s) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    constexpr size_t kMax = 600;
    if (s.size() > kMax) s = s.substr(0, kMax) + "…";
    return s;
}

std::string substitute_config(const std::string& arg, const std::string& config) {
    std::string out = arg;
    const std::string token = "{config}";
    for (size_t at = out.find(token); at != std::string::npos; at = out.find(token, at)) {
        out.replace(at, token.size(), config);
        at += config.size();
    }
    return out;
}

}  // namespace

const char* to_string(Code c) {
    switch (c) {
        case Code::installed:
            return "installed";
        case Code::install_pending:
            return "install-pending";
        case Code::installing:
            return "installing";
        case Code::install_failed:
            return "install-failed";
        case Code::downloading:
            return "downloading";
    }
    return "?";
}

Installer::Installer(loop::Scheduler& sched, Ports ports, Settings settings,
                     std::function<void()> on_report)
    : sched_(sched),
      ports_(ports),
      settings_(std::move(settings)),
      on_report_(std::move(on_report)),
      round_timer_(sched.timer()),
      deadline_timer_(sched.timer()),
      shutdown_bound_(sched.timer()) {}

Installer::~Installer() = default;

template <class F>
auto Installer::bound(F fn) {
    return guard_.bind([this, g = gen_, fn = std::move(fn)](auto&&... args) mutable {
        if (g != gen_) return;
        fn(std::forward<decltype(args)>(args)...);
    });
}

void Installer::set_active(std::string version, std::string package_hash) {
    active_ = std::move(version);
    active_hash_ = std::move(package_hash);
}

void Installer::set_last_attempt(Attempt a) {
    last_attempt_ = std::move(a);
}

void Installer::restore(Installed in) {
    // The hash stands for "this is installed" only while its version is still the one `current`
    // names: seeding may have activated the image's version since.
    bool still_active = !in.version.empty() && in.version == active_;
    if (!still_active) {
        in.all_packages_hash.clear();
        in.name.clear();
        in.version.clear();
        in.package_hash.clear();
    }
    // A repeat is nothing to do only while the statuses say Installed: after a failed offer the
    // installed one offered again must be answered Installed, so it goes through Checking (which
    // finds it active and intact, without a download).
    bool says_installed =
        in.statuses.empty() || in.statuses[in.top_index].code == Code::installed;
    restored_hash_ = says_installed ? in.all_packages_hash : "";
    if (!in.statuses.empty()) {
        report_.packages = in.statuses;
        report_.all_packages_hash = in.all_packages_hash;
        report_.error.clear();
        restored_top_ = in.top_index;
        // What the collector runs now, which after seeding is not what was reported before.
        PackageReport& top = report_.packages[in.top_index];
        top.agent_has_version = active_;
        top.agent_has_hash = active_hash_;
        log::info("update: statuses of the last offer restored",
                  {{"version", top.offered_version},
                   {"status", to_string(top.code)},
                   {"all_packages_hash", hex::encode(report_.all_packages_hash)}});
    }
    last_installed_ = std::move(in);
}

void Installer::report_interrupted(const Attempt& a, const std::string& package_name) {
    last_attempt_ = a;
    PackageReport p;
    p.name = package_name;
    // The restored entry of our package: its name is the server's, not ours.
    if (!report_.packages.empty()) p.name = report_.packages[restored_top_].name;
    p.offered_version = a.version;
    p.offered_hash.assign(a.package_hash_hex.size() / 2, '\0');
    if (!hex::decode(a.package_hash_hex, reinterpret_cast<uint8_t*>(p.offered_hash.data()),
                     p.offered_hash.size())) {
        p.offered_hash.clear();
    }
    p.agent_has_version = active_;
    p.agent_has_hash = active_hash_;
    p.code = Code::install_failed;
    p.error = a.reason;
    if (report_.packages.empty()) {
        report_.packages.push_back(std::move(p));
        restored_top_ = 0;
    } else {
        report_.packages[restored_top_] = std::move(p);
    }
    // The installed offer again must be answered from the volume, not skipped as unchanged.
    restored_hash_.clear();
}

// packages.json at the end of an offer that failed: its statuses, with the package and the
// all_packages_hash of the last one Installed (the server is told that hash only for what really
// got installed).
Installed Installer::ended_packages() const {
    Installed out = last_installed_.value_or(Installed{});
    out.statuses = report_.packages;
    out.top_index = top_index_;
    return out;
}

std::string Installer::key_of(const Offer& o) const {
    for (const OfferedPackage& p : o.packages) {
        if (!p.top_level) continue;
        std::string k = hex::encode(p.hash) + "/" + p.version;
        if (p.file) k += "/" + hex::encode(p.file->content_hash) + "/" + p.file->url;
        return k;
    }
    return "";
}

void Installer::offer(Offer o) {
    if (shutting_down_) return;
    std::string key = key_of(o);
    if (state_ != State::idle) {
        if (offer_ && key == key_of(*offer_)) {
            // The same offer again: ignored — unless a newer one cancelled it meanwhile (it is
            // wanted again: start it over) or is waiting for the critical section (the latest
            // offer is this one again: the newer one is withdrawn).
            if (cancelled_) {
                pending_ = std::move(o);
            } else if (pending_) {
                log::info("update: newer offer withdrawn", {{"version", pkg_->version}});
                pending_.reset();
            }
            return;
        }
        if (pending_ && key == key_of(*pending_)) return;
        std::string version;
        for (const OfferedPackage& p : o.packages) {
            if (p.top_level) version = p.version;
        }
        log::info("update: newer offer remembered", {{"state", to_string(state_)},
                                                      {"version", version},
                                                      {"running_version", pkg_->version}});
        pending_ = std::move(o);
        post(Event::cancel, "superseded by the offer of " + version);
        return;
    }
    if (!key.empty() && key == done_key_ && o.all_packages_hash == report_.all_packages_hash) {
        return;  // unchanged since it was brought to an end
    }
    // The offer Installed before a restart, offered again: nothing to do (the same rule as above,
    // from packages.json, which has no offer key).
    if (!restored_hash_.empty() && o.all_packages_hash == restored_hash_) {
        log::info("update: offer already installed",
                  {{"version", last_installed_->version},
                   {"all_packages_hash", hex::encode(restored_hash_)}});
        return;
    }
    restored_hash_.clear();
    accept(std::move(o));
    if (!pkg_) {
        publish();  // nothing to install: only the answers for the other packages
        return;
    }
    post(Event::offer);
}

// Makes `o` the install in progress and lays out its report: the TopLevel package (the first
// one) is ours, every other package is answered at once and does not block it.
void Installer::accept(Offer o) {
    offer_ = std::move(o);
    pkg_.reset();
    Report r;
    r.all_packages_hash = offer_->all_packages_hash;
    for (const OfferedPackage& p : offer_->packages) {
        PackageReport pr;
        pr.name = p.name;
        pr.offered_version = p.version;
        pr.offered_hash = p.hash;
        pr.agent_has_version = "";
        if (p.top_level && !pkg_) {
            pkg_ = p;
            top_index_ = r.packages.size();
            pr.agent_has_version = active_;
            pr.agent_has_hash = active_hash_;
            pr.code = Code::install_pending;
        } else {
            pr.code = Code::install_failed;
            pr.error = p.top_level ? "unsupported package: only one top-level package is installed"
                                   : "unsupported package type";
        }
        r.packages.push_back(std::move(pr));
    }
    report_ = std::move(r);
}

void Installer::post(Event ev, std::string reason) {
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
    if (ev == Event::failed) {
        if (state_ == State::rolling_back) {
            rb_failure_ = one_line(std::move(reason));
        } else if (reason_.empty()) {
            reason_ = one_line(std::move(reason));
        }
    } else if (ev == Event::cancel) {
        cancelled_ = true;
        reason_ = std::move(reason);
    }
    State from = state_;
    step_.reset();
    round_timer_->stop();
    deadline_timer_->stop();
    ++gen_;
    state_ = *n;
    log_state(from, state_);
    if (critical(from) && !critical(state_)) {
        end_critical();
        publish();  // the owner learns that the section is over (readiness, a pending crash loop)
    }
    enter(state_);
}

void Installer::later(Event ev, std::string reason) {
    sched_.post(bound([this, ev, reason = std::move(reason)]() mutable {
        post(ev, std::move(reason));
    }));
}

// Journaled states write the journal durably first: a crash during the work then finds a journal
// that names it.
void Installer::enter(State s) {
    if (!journaled(s)) return work(s);
    VolumeOps::JournalEntry e{std::string(phase(s)), from_, pkg_->version, hex::encode(pkg_->hash)};
    step_ = ports_.volume.write_journal(std::move(e), bound([this, s](Status st) {
        if (!st) {
            if (s == State::rolling_back) {
                // Going back to the known-good version is the safe direction even unjournaled.
                log::error("update: journal not written; rolling back anyway",
                           {{"error", st.error().message()}});
                return work(s);
            }
            return post(Event::failed, "journal: " + st.error().message());
        }
        work(s);
    }));
}

// One asynchronous step per state.
void Installer::work(State s) {
    switch (s) {
        case State::idle:
            offer_.reset();
            pkg_.reset();
            artifact_.reset();
            staged_.reset();
            reason_.clear();
            cancelled_ = false;
            record_attempt_ = false;
            if (!shutting_down_ && pending_) {
                Offer o = std::move(*pending_);
                pending_.reset();
                accept(std::move(o));
                if (pkg_) {
                    later(Event::offer);
                } else {
                    publish();
                }
            }
            return;
        case State::checking:
            set_status(Code::installing);
            step_ = ports_.volume.inspect(bound([this](Result<Inspection> r) {
                if (!r) return post(Event::failed, "inspect the volume: " + r.error().message());
                check(*r);
            }));
            return;
        case State::downloading: {
            record_attempt_ = true;
            download::Request req;
            req.url = pkg_->file->url;
            req.headers = pkg_->file->headers;
            req.content_hash_hex = hex::encode(pkg_->file->content_hash);
            req.max_size = settings_.max_artifact_size;
            progress_reported_ = false;
            download::Downloader::Handlers h;
            h.on_progress = bound([this](const download::Progress& p) { download_progress(p); });
            h.on_done = bound([this](Result<download::Artifact> a) {
                if (!a) {
                    return post(Event::failed,
                                "download " + pkg_->file->url + ": " + a.error().message());
                }
                artifact_ = std::move(a.value());
                post(Event::done);
            });
            set_status(Code::downloading);
            step_ = ports_.fetcher.fetch(std::move(req), std::move(h));
            return;
        }
        case State::verifying:
            verify_artifact();
            return;
        case State::staging:
            set_status(Code::installing);
            step_ = ports_.stager.stage(artifact_->path, bound([this](Result<Stager::Staged> r) {
                if (!r) {
                    // Extraction refusals already read `stage: <member>: <rule>`.
                    const std::string& m = r.error().message();
                    return post(Event::failed, m.rfind("stage: ", 0) == 0 ? m : "stage: " + m);
                }
                staged_ = std::move(r.value());
                post(Event::done);
            }));
            return;
        case State::preflight: {
            stage::PreflightRequest req;
            req.binary = staged_->binary_path;
            req.expected_version = version::to_string(*version::parse(pkg_->version));
            for (const std::string& a : settings_.validate_args) {
                req.validate_args.push_back(substitute_config(a, settings_.config_file));
            }
            req.uid = settings_.uid;
            req.gid = settings_.gid;
            step_ = ports_.preflight.run(
                std::move(req), bound([this](Result<stage::PreflightReport> r) {
                    if (!r) return post(Event::failed, "preflight: " + r.error().message());
                    // Its peak memory is in the preflight's own line ("preflight passed").
                    post(Event::done);
                }));
            return;
        }
        case State::stopping:
            publish();  // /readyz and the report say the collector is being replaced
            ports_.service.stop(bound([this](Status st) {
                if (!st) return post(Event::failed, "stop the supervisor: " + st.error().message());
                post(Event::done);
            }));
            return;
        case State::swapping: {
            VolumeOps::Activation a{pkg_->version, staged_->id, staged_->sha256_hex, from_};
            step_ = ports_.volume.activate(std::move(a), bound([this](Status st) {
                // On an error `current` may already name the new version (a failing directory
                // fsync after the rename): rolling_back switches back either way.
                if (!st) {
                    return post(Event::failed,
                                "activate " + pkg_->version + ": " + st.error().message());
                }
                active_ = pkg_->version;
                post(Event::done);
            }));
            return;
        }
        case State::starting:
            ports_.service.start(bound([this](Status st) {
                if (!st) {
                    return post(Event::failed, "start the supervisor on " + pkg_->version + ": " +
                                                   st.error().message());
                }
                post(Event::done);
            }));
            return;
        case State::health_checking:
            start_rounds();
            return;
        case State::committed: {
            active_ = pkg_->version;
            active_hash_ = pkg_->hash;
            unhealthy_reason_.clear();
            Report installed = report_;
            PackageReport& p = installed.packages[top_index_];
            p.code = Code::installed;
            p.error.clear();
            p.percent.reset();
            p.bytes_per_second = 0;
            p.agent_has_version = active_;
            p.agent_has_hash = active_hash_;
            VolumeOps::Finish f;
            f.clear_journal = true;
            f.attempt = attempt("installed", "");
            Installed packages{offer_->all_packages_hash, pkg_->name,         active_,
                               active_hash_,              installed.packages, top_index_};
            f.packages = packages;
            f.gc = true;
            step_ = ports_.volume.finish(
                std::move(f), bound([this, installed, packages](Status st) {
                    if (!st) {
                        // The journal may still name the install: the next start would switch
                        // back, so Installed would be a promise the volume does not keep.
                        set_status(Code::install_failed,
                                   one_line("commit: " + st.error().message()));
                        return post(Event::failed);
                    }
                    last_attempt_ = attempt("installed", "");
                    last_installed_ = packages;
                    report_ = installed;
                    done_key_ = key_of(*offer_);
                    publish();
                    post(Event::done);
                }));
            return;
        }
        case State::failed: {
            if (!cancelled_) {
                set_status(Code::install_failed, reason_);
                done_key_ = key_of(*offer_);
            }
            VolumeOps::Finish f;
            f.clear_journal = true;
            if (staged_) f.staged_id = staged_->id;
            if (record_attempt_ && !cancelled_) {
                f.attempt = attempt("failed", reason_);
                last_attempt_ = f.attempt;
            }
            if (!cancelled_) f.packages = ended_packages();
            step_ = ports_.volume.finish(std::move(f), bound([this](Status st) {
                if (!st) {
                    log::warn("update: clean-up after a failed install",
                              {{"error", st.error().message()}});
                    return post(Event::failed);
                }
                post(Event::done);
            }));
            return;
        }
        case State::rolling_back:
            rb_step_ = RollbackStep::stop;
            rb_switched_ = false;
            rb_healthy_ = false;
            rb_failure_.clear();
            rollback_next();
            return;
        case State::rolled_back: {
            std::string why = reason_;
            if (!rb_switched_) {
                why += "; rollback failed: " + rb_failure_;
                unhealthy_reason_ = "rollback to " + from_ + " failed: " + rb_failure_;
            } else if (!rb_healthy_) {
                why += "; rolled back to " + from_ + ", which fails its health check too: " +
                       rb_failure_;
                unhealthy_reason_ = "rolled back to " + from_ + ", unhealthy: " + rb_failure_;
            } else {
                why += "; rolled back to " + from_;
            }
            why = one_line(why);
            VolumeOps::Finish f;
            // A rollback that did not switch back keeps the journal: the next start's recovery
            // decides from the volume.
            f.clear_journal = rb_switched_;
            // Switched back: the version that failed is neither active nor previous, and GC
            // removes it as it would at a commit (otherwise every failed release stays on the
            // volume until the next successful install).
            f.gc = rb_switched_;
            f.attempt = attempt("rolled-back", why);
            last_attempt_ = f.attempt;
            set_status(Code::install_failed, why);
            done_key_ = key_of(*offer_);
            f.packages = ended_packages();
            step_ = ports_.volume.finish(std::move(f), bound([this](Status st) {
                if (!st) {
                    log::warn("update: clean-up after a rollback",
                              {{"error", st.error().message()}});
                    return post(Event::failed);
                }
                post(Event::done);
            }));
            return;
        }
    }
}

// The Checking rules, in the order of the issue; each refusal names the rule.
void Installer::check(const Inspection& in) {
    from_ = in.active;
    if (in.active_intact) active_ = in.active;
    report_.packages[top_index_].agent_has_version = active_;
    const std::string& v = pkg_->version;
    auto parsed = version::parse(v);
    if (!parsed) return post(Event::failed, "offered version \"" + v + "\" does not parse");
    const std::string canon = version::to_string(*parsed);
    if (settings_.minimum_version &&
        version::compare(canon, *settings_.minimum_version) == version::Order::less) {
        return post(Event::failed, "version " + canon + " is below update.minimumVersion " +
                                       *settings_.minimum_version);
    }
    if (in.active_intact) {
        switch (version::compare(canon, in.active)) {
            case version::Order::equal:
                return post(Event::installed);
            case version::Order::less:
                if (!settings_.allow_downgrade && canon != in.previous) {
                    return post(Event::failed, "version " + canon + " is older than the active " +
                                                   in.active +
                                                   " (update.allowDowngrade is false and it is "
                                                   "not the previous version " +
                                                   (in.previous.empty() ? "(none)" : in.previous) +
                                                   ")");
                }
                break;
            case version::Order::greater:
            case version::Order::not_comparable:
                break;
        }
    }
    if (in.last_attempt && in.last_attempt->outcome != "installed" &&
        !in.last_attempt->package_hash_hex.empty() &&
        in.last_attempt->package_hash_hex == hex::encode(pkg_->hash) &&
        in.last_attempt->version == canon) {
        return post(Event::failed, "failed before, not tried again until the offer changes: " +
                                       in.last_attempt->reason);
    }
    if (!pkg_->file) return post(Event::failed, "the offer has no file to download");
    if (pkg_->file->content_hash.size() != 32) {
        return post(Event::failed, "content_hash is " +
                                       std::to_string(pkg_->file->content_hash.size()) +
                                       " bytes, not a SHA-256");
    }
    if (auto st = ports_.fetcher.check_url(pkg_->file->url); !st) {
        return post(Event::failed, "download URL refused: " + st.error().message());
    }
    post(Event::passed);
}

void Installer::download_progress(const download::Progress& p) {
    MonoTime now = sched_.now();
    // The downloader promises at most every 2 s; the report keeps that promise itself so that a
    // chattier downloader cannot flood the server.
    if (progress_reported_ && now - last_progress_ < settings_.progress_every) return;
    progress_reported_ = true;
    last_progress_ = now;
    PackageReport& r = report_.packages[top_index_];
    r.code = Code::downloading;
    r.percent = p.percent < 0 ? 0.0 : p.percent;
    r.bytes_per_second = p.bytes_per_second;
    publish();
}

void Installer::verify_artifact() {
    set_status(Code::installing);
    const std::string expected = hex::encode(pkg_->file->content_hash);
    if (artifact_->sha256_hex != expected) {
        return later(Event::failed, "content hash mismatch: offered " + expected +
                                        ", downloaded " + artifact_->sha256_hex);
    }
    // A bundle that is there is checked even when not required: a bad signature is a sign of
    // tampering, not a missing feature.
    if (pkg_->file->signature.empty()) {
        if (settings_.require_signature) {
            return later(Event::failed,
                         "signature required (update.requireSignature) but the offer has none");
        }
        log::warn("update: installing an unsigned artifact (update.requireSignature is false)",
                  {{"version", pkg_->version}, {"hash", expected}});
        return later(Event::done);
    }
    Verifier::Request req{artifact_->sha256_hex, pkg_->file->signature};
    step_ = ports_.verifier.verify(std::move(req), bound([this](Result<Verifier::Verified> r) {
        if (!r) return post(Event::failed, "signature: " + r.error().message());
        signer_ = r->subject;
        log::info("update: signature verified",
                  {{"version", pkg_->version}, {"subject", r->subject}, {"issuer", r->issuer}});
        post(Event::done);
    }));
}

// Health rounds, for health_checking and for the last step of rolling_back alike.
void Installer::start_rounds() {
    passes_ = 0;
    last_failure_.clear();
    failure_repeats_ = 0;
    deadline_timer_->start(settings_.health_timeout, bound([this] { health_deadline(); }));
    round_timer_->start(settings_.health_interval, bound([this] { start_round(); }));
}

void Installer::start_round() {
    if (ports_.service.state() != service::State::running) {
        return round_result(false, std::string("supervisor not running (") +
                                       service::to_string(ports_.service.state()) + ")");
    }
    probe_index_ = 0;
    probe_next();
}

void Installer::probe_next() {
    const std::optional<Url>* urls[] = {&settings_.supervisor_health_url,
                                        &settings_.collector_health_url};
    const char* names[] = {"supervisor", "collector"};
    while (probe_index_ < 2 && !urls[probe_index_]->has_value()) ++probe_index_;
    if (probe_index_ >= 2) return round_result(true, "");
    const Url& url = **urls[probe_index_];
    std::string what = std::string(names[probe_index_]) + " " + url.str();
    Duration timeout = std::min(settings_.probe_timeout, settings_.health_interval);
    if (timeout <= Duration::zero()) timeout = settings_.probe_timeout;
    step_ = ports_.health.get(url, timeout, bound([this, what](Result<int> r) {
        // The probe's client is still on the stack that called us: let it go on a later turn.
        sched_.post([done = std::shared_ptr<Step>(std::move(step_))] {});
        if (!r) return round_result(false, what + ": " + r.error().message());
        if (*r < 200 || *r > 299) return round_result(false, what + ": " + std::to_string(*r));
        ++probe_index_;
        probe_next();
    }));
}

void Installer::round_result(bool passed, const std::string& why) {
    if (passed) {
        ++passes_;
        if (passes_ >= settings_.health_successes) {
            round_timer_->stop();
            deadline_timer_->stop();
            if (state_ == State::rolling_back) {
                rb_healthy_ = true;
                rb_step_ = RollbackStep::done;
            }
            return post(Event::done);
        }
    } else {
        passes_ = 0;  // only rounds in a row count
        if (why == last_failure_) {
            ++failure_repeats_;
        } else {
            last_failure_ = why;
            failure_repeats_ = 1;
        }
        // A crash loop is over for good: waiting for the deadline would only delay the rollback.
        if (ports_.service.desired() == service::Desired::gave_up) return health_deadline();
    }
    round_timer_->start(settings_.health_interval, bound([this] { start_round(); }));
}

void Installer::health_deadline() {
    std::string why = "health check failed: ";
    if (!last_failure_.empty()) {
        why += last_failure_ + " x" + std::to_string(failure_repeats_);
    } else {
        why += std::to_string(passes_) + " of " + std::to_string(settings_.health_successes) +
               " rounds passed within " + format_duration(settings_.health_timeout);
    }
    post(Event::failed, why);
}

void Installer::rollback_next() {
    switch (rb_step_) {
        case RollbackStep::stop:
            rb_step_ = RollbackStep::switch_back;
            if (ports_.service.state() == service::State::stopped) return rollback_next();
            ports_.service.stop(bound([this](Status st) {
                // A failed stop is logged; the switch must happen anyway (the child is gone or
                // going: stop() KILLs after stopTimeout).
                if (!st) log::warn("update: rollback: stop", {{"error", st.error().message()}});
                rollback_next();
            }));
            return;
        case RollbackStep::switch_back:
            if (from_.empty()) return post(Event::failed, "nothing was active before");
            step_ = ports_.volume.switch_back(from_, bound([this](Status st) {
                if (!st) {
                    return post(Event::failed,
                                "switch back to " + from_ + ": " + st.error().message());
                }
                rb_switched_ = true;
                active_ = from_;
                rb_step_ = RollbackStep::start;
                rollback_next();
            }));
            return;
        case RollbackStep::start:
            ports_.service.start(bound([this](Status st) {
                if (!st) return post(Event::failed, "start " + from_ + ": " + st.error().message());
                rb_step_ = RollbackStep::health;
                rollback_next();
            }));
            return;
        case RollbackStep::health:
            start_rounds();
            return;
        case RollbackStep::done:
            return;
    }
}

void Installer::shutdown() {
    if (shutting_down_) return;
    shutting_down_ = true;
    pending_.reset();
    if (critical(state_)) {
        // The install gets the time the pod's grace period is sized for; after that the runtime
        // stops the child anyway and the next start's recovery finishes the job.
        Duration bound_for = 2 * settings_.stop_timeout + 2 * settings_.health_timeout;
        shutdown_bound_->start(bound_for, guard_.bind([this] {
            log::warn("update: shutdown no longer waits for the install",
                      {{"state", to_string(state_)}});
            end_critical();
        }));
    }
    post(Event::shutdown);
}

bool Installer::active() const {
    return critical(state_) && !end_waiters_done_;
}

void Installer::on_end(std::function<void()> cb) {
    if (!active()) return cb();
    end_waiters_.push_back(std::move(cb));
}

void Installer::end_critical() {
    shutdown_bound_->stop();
    if (shutting_down_) end_waiters_done_ = true;
    auto waiters = std::move(end_waiters_);
    end_waiters_.clear();
    for (auto& w : waiters) w();
}

std::string Installer::describe() const {
    if (state_ == State::idle || !pkg_) return "no install in progress";
    return "installing " + pkg_->version + ": " + to_string(state_);
}

Attempt Installer::attempt(std::string outcome, std::string reason) const {
    Attempt a;
    a.package_hash_hex = hex::encode(pkg_->hash);
    a.version = pkg_->version;
    a.outcome = std::move(outcome);
    a.reason = std::move(reason);
    a.at = format_rfc3339(sched_.wall());
    return a;
}

void Installer::set_status(Code code, std::string error) {
    if (report_.packages.empty()) return;
    PackageReport& r = report_.packages[top_index_];
    r.code = code;
    r.error = std::move(error);
    r.agent_has_version = active_;
    r.agent_has_hash = active_hash_;
    if (code != Code::downloading) {
        r.percent.reset();
        r.bytes_per_second = 0;
    } else if (!r.percent) {
        r.percent = 0.0;
    }
    publish();
}

void Installer::publish() {
    if (on_report_) on_report_();
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
                {"reason", to == State::failed || to == State::rolling_back ? reason_ : ""}});
}

}  // namespace myr::update
