#include "runtime/runtime.hpp"

#include <unistd.h>

#include <csignal>

#include "core/log.hpp"
#include "runtime/agent.hpp"
#include "update/state_files.hpp"

namespace myr::runtime {

namespace {

// The supervisor's systemd unit; its stop is bounded by the unit's TimeoutStopSec=, our wait for
// systemctl by UnitSettings.
service::UnitSettings unit_settings(const config::Host& h) {
    service::UnitSettings s;
    s.name = h.service_name;
    s.poll_interval = h.poll_interval;
    s.stop_timeout = config::kHostUnitJobTimeout;
    s.start_timeout = config::kHostUnitJobTimeout;
    return s;
}

std::unique_ptr<service::ServiceController> make_service(proc::Reaper& reaper,
                                                         loop::Scheduler& sched,
                                                         const config::Config& cfg, Mode mode) {
    if (mode == Mode::host) {
        return std::make_unique<service::SystemdUnit>(service::systemctl_runner(reaper, sched),
                                                      sched, unit_settings(*cfg.host));
    }
    const config::Container& c = *cfg.container;
    service::ChildSettings s;
    s.command = c.supervisor_command;
    s.stop_signal = c.stop_signal == config::StopSignal::interrupt ? SIGINT : SIGTERM;
    s.stop_timeout = c.stop_timeout;
    s.restart = {c.restart_delay, c.max_restarts, c.restart_window};
    return std::make_unique<service::ChildService>(reaper, sched, std::move(s));
}

// The probe server's address and whether it serves /metrics, per mode.
std::pair<std::optional<HostPort>, bool> probe_settings(const config::Config& cfg, Mode mode) {
    if (mode == Mode::host) return {cfg.host->health_listen, cfg.host->metrics};
    return {cfg.container->health_listen, cfg.container->metrics};
}

// `image_version`: in container mode the seed binary's, which is the supervisor's too (the image
// ships the two of one release); "" when `--version` gave nothing usable. In host mode the
// supervisor is installed apart from the collector, so its version is not known here.
update::Settings update_settings(const config::Config& cfg, Mode mode,
                                 const std::string& image_version) {
    update::Settings s;
    if (cfg.update.minimum_version) s.minimum_version = cfg.update.minimum_version->text;
    s.allow_downgrade = cfg.update.allow_downgrade;
    s.max_minor_skew = cfg.update.max_minor_skew;
    s.supervisor_version = mode == Mode::container ? image_version : "";
    if (s.max_minor_skew >= 0 && s.supervisor_version.empty()) {
        log::warn("update: update.maxMinorSkew not applied: the supervisor's version is unknown",
                  {{"mode", to_string(mode)}});
    }
    s.require_signature = cfg.update.require_signature;
    s.max_artifact_size = cfg.update.max_artifact_size;
    s.retry_for = cfg.update.retry_for;
    s.quarantine_for = cfg.update.quarantine_for;
    s.health_timeout = cfg.update.health_timeout;
    s.health_successes = cfg.update.health_successes;
    s.health_interval = cfg.update.health_interval;
    s.supervisor_health_url = cfg.supervisor.health_url;
    s.collector_health_url = cfg.collector.health_url;
    s.validate_args = cfg.update.validate_args;
    s.config_file = cfg.collector.config_file;
    // Container mode: the supervisor is our child and runs as we do; so does its preflight. Host
    // mode: the preflight port sets the unit's account on each request (UnitPreflighter).
    s.uid = ::getuid();
    s.gid = ::getgid();
    s.stop_timeout =
        mode == Mode::container ? cfg.container->stop_timeout : config::kHostUnitJobTimeout;
    s.start_jitter = cfg.update.start_jitter;
    s.trial_period = cfg.update.trial_period;
    s.trial_max_restarts = cfg.update.trial_max_restarts;
    return s;
}

// The downloader's URL rule: below update.allowedDownloadPrefixes (or the endpoint's artifact
// path), http:// only where the endpoint itself may be plain (docs/download.md).
download::UrlPolicy url_policy(const config::Config& cfg) {
    download::UrlPolicy p;
    p.prefixes = config::effective_download_prefixes(cfg);
    p.allow_plain_http = download::plain_http_allowed(
        cfg.server.endpoint ? &*cfg.server.endpoint : nullptr, cfg.server.allow_insecure_transport);
    return p;
}

download::DownloaderOptions downloader_options(const config::Config& cfg,
                                               const statedir::StateDir& state,
                                               std::shared_ptr<const net::ProxyPolicy> proxy) {
    download::DownloaderOptions o;
    o.proxy = std::move(proxy);
    o.state_dir = state;
    o.policy = url_policy(cfg);
    o.ca_file = cfg.server.ca_file;
    o.allow_insecure_transport = cfg.server.allow_insecure_transport;
    o.deadline = config::effective_download_timeout(cfg.update);
    return o;
}

// The proxy for OpAMP and downloads: network.proxy, else the environment (net/proxy.hpp). A
// malformed proxy URL stops the start, named, rather than every connection later.
Result<std::shared_ptr<const net::ProxyPolicy>> proxy_policy(const config::Config& cfg) {
    const config::Proxy& p = cfg.network.proxy;
    net::ProxySettings s{p.url, p.no_proxy, p.credentials_file, p.credentials_env};
    auto policy = net::ProxyPolicy::make(s, net::ProxyEnv::from_process());
    if (!policy) return policy.fail("network.proxy");
    log::info("network: proxy for OpAMP and downloads", {{"proxy", (*policy)->describe()}});
    return policy;
}

// The binary inside an archive may be as large as the archive may be (update.maxArtifactSize);
// decompressing more than 4 x that in all is a bomb (stage/extract.hpp).
stage::ExtractLimits extract_limits(const config::Config& cfg) {
    stage::ExtractLimits l;
    l.max_binary_size = cfg.update.max_artifact_size;
    return l;
}

// The subject and the certificate-field rules stay templates here: each install binds them to the
// version it offers. Identity's managed key stays empty: updater.yaml does not offer one.
verify::Identity signer(const config::Config& cfg) {
    const config::SignerIdentity& si = cfg.update.signer_identity;
    using F = verify::IdentityField;
    verify::Identity id;
    id.subject = si.subject;
    id.subject_regexp = si.subject_regexp;
    id.issuer = si.issuer;
    for (auto [field, value] : {std::pair{F::source_repository_ref, &si.source_repository_ref},
                                {F::build_config_uri, &si.build_config_uri},
                                {F::source_repository_uri, &si.source_repository_uri},
                                {F::github_workflow_name, &si.github_workflow_name},
                                {F::github_workflow_ref, &si.github_workflow_ref},
                                {F::github_workflow_repository, &si.github_workflow_repository}}) {
        if (!value->empty()) id.fields.push_back({field, *value});
    }
    return id;
}

}  // namespace

const char* to_string(Mode m) {
    return m == Mode::host ? "host" : "container";
}

Runtime::Runtime(loop::Loop& loop, const config::Config& cfg, Mode mode, std::string version)
    : loop_(loop),
      cfg_(cfg),
      mode_(mode),
      version_(std::move(version)),
      sched_(loop.get()),
      reaper_(loop),
      heartbeat_(sched_),
      service_(make_service(reaper_, sched_, cfg, mode)),
      // During an install's critical section /readyz is 503 and names the step.
      readiness_(
          [this] {
              return service_->state() == service::State::running &&
                     (!installer_ || installer_->ready());
          },
          [this] {
              if (!installer_) return service_->describe();
              // Idle, unless a trial resumed after a restart runs: it is named too.
              if (installer_->state() == update::State::idle) {
                  std::string trial = installer_->trial_text();
                  return trial.empty() ? service_->describe()
                                       : service_->describe() + "; " + installer_->describe();
              }
              if (!installer_->ready()) return installer_->describe();
              return service_->describe() + "; " + installer_->describe();
          }),
      metrics_(sched_, cfg.collector.install_dir),
      roots_(sched_, cfg.update.trusted_root_file),
      status_(sched_, *service_),
      preflight_(reaper_, sched_),
      verifier_(sched_, roots_, signer(cfg), verify::Options{cfg.update.signature.min_timestamps}),
      health_probe_(loop.get(), sched_),
      lifecycle_(sched_, *service_, steps()) {
    if (mode == Mode::host) {
        unit_ = static_cast<service::SystemdUnit*>(service_.get());
        unit_preflight_ = std::make_unique<UnitPreflighter>(
            service::systemctl_runner(reaper_, sched_), sched_, preflight_,
            UnitPreflightSettings{cfg.host->service_name});
    }
}

Runtime::~Runtime() = default;

Result<int> Runtime::run() {
    if (auto st = start_trusted_root(); !st) return st.fail();
    if (auto st = install_signals(); !st) return st.fail();
    if (auto st = reaper_.start(); !st) return st.fail();
    auto proxy = proxy_policy(cfg_);
    if (!proxy) return proxy.fail();
    proxy_ = std::move(*proxy);
    if (reaper_.subreaper()) log::info("registered as child subreaper", {{"pid", ::getpid()}});
    if (auto st = start_probes(); !st) return st.fail();
    if (auto st = start_host(); !st) return st.fail();
    lifecycle_.start([this](int) { loop_.stop(); });
    loop_.run();
    return lifecycle_.exit_code();
}

// Host mode: systemd's side of things. The updater's own unit hears from it (a NOTIFY_SOCKET
// that cannot be one stops the start, named), and the supervisor's unit is read from now on.
Status Runtime::start_host() {
    if (mode_ != Mode::host) return {};
    auto n = service::Notifier::from_env();
    if (!n) return n.fail("host mode");
    notifier_.emplace(sched_, std::move(*n));
    notifier_->start();
    // `systemctl status myriarch-updater` shows the supervisor's unit as the updater sees it.
    service_->on_change([this] {
        if (lifecycle_.stage() == Stage::running) notifier_->status(service_->describe());
    });
    log::info(
        "host mode: following the supervisor's unit",
        {{"unit", cfg_.host->service_name}, {"poll", format_duration(cfg_.host->poll_interval)}});
    unit_->watch();
    return {};
}

// The trusted root before anything else: with update.requireSignature an updater that could
// verify no offer refuses to start, saying why, before it touches the volume or the supervisor.
// Without it, signed offers are refused until a usable root appears.
Status Runtime::start_trusted_root() {
    roots_.on_change(
        [this](const verify::LoadedRoot& r) { metrics_.trusted_root(r.newest_start); });
    Status st = roots_.start();
    if (st) return {};
    if (cfg_.update.require_signature) {
        return fail(
            "refusing to start: update.requireSignature is true and the trusted root is "
            "unusable: " +
            st.error().message());
    }
    log::info("trusted root unusable: signed offers are refused until it is usable",
              {{"file", cfg_.update.trusted_root_file},
               {"error", st.error().message()},
               {"require_signature", false}});
    return {};
}

Status Runtime::install_signals() {
    // Writes to a probe client that went away must not kill the updater.
    std::signal(SIGPIPE, SIG_IGN);
    auto watch = [this](int sig) -> Status {
        auto w = std::make_unique<loop::SignalWatcher>(loop_);
        auto st = w->start(sig, [this](int s) { lifecycle_.signal(s); });
        if (st) signals_.push_back(std::move(w));
        return st;
    };
    for (int sig : kStopSignals) MYR_TRY(watch(sig), to_string(mode_));
    for (int sig : kForwardedSignals) MYR_TRY(watch(sig), to_string(mode_));
    return {};
}

Status Runtime::start_probes() {
    auto [listen, metrics] = probe_settings(cfg_, mode_);
    if (!listen) {
        log::info("probe server disabled",
                  {{"reason", std::string(to_string(mode_)) + ".healthListen is empty"}});
        return {};
    }
    health::Probes p;
    p.healthz = [this] { return heartbeat_.answer(); };
    p.readyz = [this] { return readiness_.answer(); };
    if (metrics) {
        metrics_.set_sources(
            [this] { return service_->restarts(); },
            [this] { return agent_ && agent_->state() == opamp::Agent::State::connected; });
        p.metrics = [this]() -> const std::string& { return metrics_.render(); };
    }
    probes_ = std::make_unique<health::ProbeServer>(loop_, sched_, std::move(p));
    return probes_->listen(*listen);
}

// The parts of a mode the Lifecycle drives. Each completion is bound to this runtime: a
// step may answer after it is gone.
LifecycleSteps Runtime::steps() {
    LifecycleSteps s;
    s.recovering = [this](auto done) { recovering(std::move(done)); };
    s.probing_image = [this](auto done) { probing_image(std::move(done)); };
    s.seeding = [this](auto done) { seeding(std::move(done)); };
    s.start_installer = [this] { return start_installer(); };
    s.start_agent = [this] {
        status_.follow();
        start_agent();
        if (notifier_) notifier_->ready(service_->describe());
    };
    s.stop_installer = [this] {
        if (notifier_) notifier_->stopping();
        if (installer_) installer_->shutdown();
    };
    s.stop_agent = [this](std::function<void()> done) {
        if (!agent_) return done();
        agent_->stop(std::move(done));
    };
    // Host mode: the supervisor's unit is systemd's; the updater neither stops it on its exit
    // nor exits when systemd gives up on it (Lifecycle).
    s.leave_service_running = mode_ == Mode::host;
    s.exit_on_crash_loop = mode_ == Mode::container;
    return s;
}

void Runtime::recovering(std::function<void(Status)> done) {
    recover_volume(sched_, cfg_, guard_.bind([this, done](Result<SharedVolume> r) {
        if (!r) return done(r.fail());
        volume_ = std::move(r.value());
        done({});
    }));
}

void Runtime::probing_image(std::function<void()> done) {
    probe_image(reaper_, sched_, seed_input(cfg_), guard_.bind([this, done](journal::SeedInput in) {
        seed_input_ = std::move(in);
        done();
    }));
}

void Runtime::seeding(std::function<void(Status)> done) {
    seed_volume(sched_, volume_, seed_input_,
                guard_.bind([this, done](Result<journal::SeedOutcome> r) {
                    if (!r) return done(r.fail());
                    status_.set_versions(
                        {reported_image(r->image_version), r->active_version, r->previous_version});
                    seeded_ = std::move(r.value());
                    stop_unit_if_moved(done);
                }));
}

// Host mode: the supervisor's unit is systemd's and outlived the updater, so after a kill in an
// install's `starting` or `health-checking` it runs the new version while recovery has just put
// `current` back (evidence: integration-host's kill -9 case). When start-up moved `current`, the
// unit is stopped here, and the lifecycle's next step starts it on the new `current`. An
// unchanged `current` leaves a running unit alone: restarting the updater restarts no collector.
void Runtime::stop_unit_if_moved(std::function<void(Status)> done) {
    const std::string& before = volume_->current_before;
    if (mode_ != Mode::host || before == seeded_->active_version) return done({});
    log::warn(
        "host mode: start-up moved current; the supervisor's unit is restarted on it",
        {{"unit", cfg_.host->service_name}, {"was", before}, {"now", seeded_->active_version}});
    service_->stop(guard_.bind([this, done](Status st) {
        // Not fatal: the start that follows runs on the new `current` if the stop did happen,
        // and a unit left on the old version is what the health and the next install see.
        if (!st) {
            log::error("host mode: the supervisor's unit could not be stopped",
                       {{"unit", cfg_.host->service_name}, {"error", st.error().message()}});
        }
        done({});
    }));
}

// What the agent reports as the image's collector version: container mode's seed binary is the
// image's; host mode has no image (docs/host-mode.md), whatever seeded the volume.
std::string Runtime::reported_image(const std::string& seed_version) const {
    return mode_ == Mode::container ? seed_version : "";
}

// The installer works on the recovered, seeded volume; its reports reach the agent and the
// versions the agent describes.
service::CriticalSection* Runtime::start_installer() {
    const journal::SeedOutcome& seeded = *seeded_;
    auto vol = std::shared_ptr<store::Volume>(volume_, &volume_->store);
    auto j = std::shared_ptr<journal::Journal>(volume_, &volume_->journal);
    volume_ops_ =
        std::make_unique<update::StoreVolumeOps>(sched_, vol, j, cfg_.collector.keep_versions);
    stager_ = std::make_unique<ExtractStager>(reaper_, sched_, vol, extract_limits(cfg_));
    downloader_ = std::make_unique<download::HttpDownloader>(
        loop_.get(), sched_, downloader_options(cfg_, volume_->state, proxy_));
    stage::Preflighter& preflight =
        unit_preflight_ ? static_cast<stage::Preflighter&>(*unit_preflight_) : preflight_;
    update::Ports ports{*downloader_, verifier_,    *stager_,     preflight,
                        *service_,    *volume_ops_, health_probe_};
    installer_ = std::make_unique<update::Installer>(
        sched_, ports, update_settings(cfg_, mode_, seeded.image_version),
        [this, image = reported_image(seeded.image_version)] {
            status_.set_versions({image, installer_->active_version(), ""});
            metrics_.collector_version(installer_->active_version());
            status_.set_install_problem(installer_->unhealthy_reason());
            report_updater();
            if (agent_) agent_->state_changed();
        });
    // The package hash goes with the version only while that version is still the active one
    // (seeding may have replaced it by the image's).
    const auto& in = volume_->installed;
    installer_->set_active(seeded.active_version,
                           in && in->version == seeded.active_version ? in->package_hash : "");
    // Every state change reaches the server as the updater's own health (docs/opamp.md). On the
    // next turn: the state is entered before its entry action sets the package's status, and the
    // message must carry both.
    update::Observer observer = metrics_.observer();
    observer.state = [this, counted = std::move(observer.state)](update::State st) {
        if (counted) counted(st);
        sched_.post(guard_.bind([this] {
            report_updater();
            if (agent_) agent_->state_changed();
        }));
    };
    installer_->observe(std::move(observer));
    metrics_.collector_version(seeded.active_version);
    metrics_.volume_ready();
    if (in) installer_->restore(*in);
    // Package names are the server's; the collector's binary name is the usual one.
    if (volume_->interrupted) {
        installer_->report_interrupted(*volume_->interrupted, cfg_.collector.binary);
        metrics_.count(classify_recovered(*volume_->interrupted, volume_->interrupted_swapped));
    }
    // A trial that recovery let go on (the updater restarted within it) runs to its deadline.
    if (volume_->trial && seeded.active_version == volume_->trial->to) {
        installer_->resume_trial(volume_->trial->to, volume_->trial->trial_until);
    }
    packages_ = std::make_unique<PackageAdapter>(*installer_);
    report_updater();
    return installer_.get();
}

// The updater's own OpAMP agent. Versions and health come from seeding and the child (status_).
void Runtime::report_updater() {
    if (installer_) status_.set_updater(updater_health(installer_->view(), installer_->describe()));
}

void Runtime::start_agent() {
    auto agent = make_agent(loop_.get(), sched_, cfg_, volume_->state, version_, to_string(mode_),
                            status_, *packages_, proxy_);
    if (!agent) {
        // The collector keeps running without the fleet server: losing the connection must
        // never cost the site its telemetry.
        log::error("opamp: agent not started", {{"error", agent.error().message()}});
        return;
    }
    agent_ = std::move(agent.value());
    status_.on_change([this] {
        if (agent_) agent_->state_changed();
    });
    agent_->start();
}

// The crash loop's reason is the restart policy's, which only the service knows.
std::string Runtime::exit_reason() const {
    if (lifecycle_.exit_code() == 0) return "";
    if (mode_ == Mode::container && service_->desired() == service::Desired::gave_up) {
        return "crash loop: the supervisor (" + cfg_.container->supervisor_command[0] + ") had " +
               service_->give_up_reason() + "; gave up";
    }
    return lifecycle_.exit_reason();
}

Result<Exit> run_mode(const config::Config& cfg, Mode mode, const std::string& version) {
    loop::Loop loop;
    std::optional<Result<Exit>> exit;
    {
        Runtime runtime(loop, cfg, mode, version);
        auto code = runtime.run();
        if (code) {
            exit.emplace(Exit{*code, runtime.exit_reason()});
        } else {
            exit.emplace(code.fail());
        }
    }
    // Everything is closed; what is still on the work queue finishes here.
    (void)loop.close();
    return std::move(*exit);
}

}  // namespace myr::runtime
