#include "runtime/container.hpp"

#include <unistd.h>

#include <csignal>

#include "core/log.hpp"
#include "runtime/agent.hpp"
#include "update/state_files.hpp"

namespace myr::runtime {

namespace {

service::ChildSettings child_settings(const config::Container& c) {
    service::ChildSettings s;
    s.command = c.supervisor_command;
    s.stop_signal = c.stop_signal == config::StopSignal::interrupt ? SIGINT : SIGTERM;
    s.stop_timeout = c.stop_timeout;
    s.restart = {c.restart_delay, c.max_restarts, c.restart_window};
    return s;
}

update::Settings update_settings(const config::Config& cfg) {
    update::Settings s;
    if (cfg.update.minimum_version) s.minimum_version = cfg.update.minimum_version->text;
    s.allow_downgrade = cfg.update.allow_downgrade;
    s.require_signature = cfg.update.require_signature;
    s.max_artifact_size = cfg.update.max_artifact_size;
    s.health_timeout = cfg.update.health_timeout;
    s.health_successes = cfg.update.health_successes;
    s.health_interval = cfg.update.health_interval;
    s.supervisor_health_url = cfg.supervisor.health_url;
    s.collector_health_url = cfg.collector.health_url;
    s.validate_args = cfg.update.validate_args;
    s.config_file = cfg.collector.config_file;
    // The supervisor is our child and runs as we do; so does its preflight.
    s.uid = ::getuid();
    s.gid = ::getgid();
    s.stop_timeout = cfg.container->stop_timeout;
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
                                               const statedir::StateDir& state) {
    download::DownloaderOptions o;
    o.state_dir = state;
    o.policy = url_policy(cfg);
    o.ca_file = cfg.server.ca_file;
    o.allow_insecure_transport = cfg.server.allow_insecure_transport;
    return o;
}

// The binary inside an archive may be as large as the archive may be (update.maxArtifactSize);
// decompressing more than 4 x that in all is a bomb (stage/extract.hpp).
stage::ExtractLimits extract_limits(const config::Config& cfg) {
    stage::ExtractLimits l;
    l.max_binary_size = cfg.update.max_artifact_size;
    return l;
}

verify::Identity signer(const config::Config& cfg) {
    return {cfg.update.signer_identity.subject, cfg.update.signer_identity.subject_regexp,
            cfg.update.signer_identity.issuer};
}

const char* signal_name(int sig) {
    switch (sig) {
        case SIGTERM:
            return "TERM";
        case SIGINT:
            return "INT";
        case SIGHUP:
            return "HUP";
        case SIGUSR1:
            return "USR1";
        case SIGUSR2:
            return "USR2";
        default:
            return "?";
    }
}

}  // namespace

ContainerRuntime::ContainerRuntime(loop::Loop& loop, const config::Config& cfg, std::string version)
    : loop_(loop),
      cfg_(cfg),
      version_(std::move(version)),
      sched_(loop.get()),
      reaper_(loop),
      heartbeat_(sched_),
      child_(reaper_, sched_, child_settings(*cfg.container)),
      // During an install's critical section /readyz is 503 and names the step.
      readiness_(
          [this] {
              return child_.state() == service::State::running &&
                     (!installer_ || installer_->ready());
          },
          [this] {
              if (!installer_ || installer_->state() == update::State::idle) {
                  return child_.describe();
              }
              if (!installer_->ready()) return installer_->describe();
              return child_.describe() + "; " + installer_->describe();
          }),
      status_(sched_, child_),
      preflight_(reaper_, sched_),
      verifier_(sched_, cfg.update.trusted_root_file, signer(cfg)),
      health_probe_(loop.get(), sched_) {
    child_.on_change([this] {
        if (stage_ != Stage::running || child_.desired() != service::Desired::gave_up) return;
        // A new version that crash-loops is the installer's to roll back, not a reason to exit.
        if (installer_ && installer_->active()) return;
        exit_code_ = 1;
        shut_down("crash loop");
    });
}

ContainerRuntime::~ContainerRuntime() = default;

Result<int> ContainerRuntime::run() {
    if (auto st = install_signals(); !st) return st.fail();
    if (auto st = reaper_.start(); !st) return st.fail();
    if (reaper_.subreaper()) log::info("registered as child subreaper", {{"pid", ::getpid()}});
    if (auto st = start_probes(); !st) return st.fail();
    enter(Stage::recovering);
    loop_.run();
    return exit_code_;
}

Status ContainerRuntime::install_signals() {
    // Writes to a probe client that went away must not kill PID 1.
    std::signal(SIGPIPE, SIG_IGN);
    for (int sig : {SIGTERM, SIGINT}) {
        auto w = std::make_unique<loop::SignalWatcher>(loop_);
        MYR_TRY(
            w->start(sig, [this](int s) { shut_down(std::string("signal ") + signal_name(s)); }),
            "container");
        signals_.push_back(std::move(w));
    }
    for (int sig : {SIGHUP, SIGUSR1, SIGUSR2}) {
        auto w = std::make_unique<loop::SignalWatcher>(loop_);
        MYR_TRY(w->start(sig, [this](int s) { forward(s); }), "container");
        signals_.push_back(std::move(w));
    }
    return {};
}

Status ContainerRuntime::start_probes() {
    const auto& listen = cfg_.container->health_listen;
    if (!listen) {
        log::info("probe server disabled", {{"reason", "container.healthListen is empty"}});
        return {};
    }
    health::Probes p{[this] { return heartbeat_.answer(); },
                     [this] { return readiness_.answer(); }};
    probes_ = std::make_unique<health::ProbeServer>(loop_, sched_, std::move(p));
    return probes_->listen(*listen);
}

// Each stage starts one asynchronous step; its completion, bound to this runtime, moves on.
void ContainerRuntime::enter(Stage s) {
    stage_ = s;
    switch (s) {
        case Stage::recovering:
            recover(sched_, cfg_,
                    guard_.bind([this](Result<SharedVolume> r) { recovered(std::move(r)); }));
            return;
        case Stage::probing_image:
            probe_image(reaper_, sched_, cfg_,
                        guard_.bind([this](journal::SeedInput in) { probed(std::move(in)); }));
            return;
        case Stage::seeding:
            seed(sched_, volume_, seed_input_,
                 guard_.bind([this](Result<journal::SeedOutcome> r) { seeded(std::move(r)); }));
            return;
        case Stage::running:
            child_.start([](Status) {});  // failures are logged and count as unexpected ends
            status_.follow();
            start_agent();
            return;
        case Stage::stopping:
            if (installer_) installer_->shutdown();
            if (critical().active()) {
                log::info("shutdown: waiting for the install's critical section to end");
            }
            critical().on_end([this] {
                log::info("shutdown: stopping child",
                          {{"state", service::to_string(child_.state())}});
                // The child and the OpAMP connection stop side by side; the loop ends when both
                // did.
                pending_stops_ = agent_ ? 2 : 1;
                auto one_done = [this] {
                    if (--pending_stops_ > 0) return;
                    log::info("shutdown: complete", {{"exit_code", exit_code_}});
                    loop_.stop();
                };
                child_.stop([one_done](Status) { one_done(); });
                if (agent_) agent_->stop(one_done);
            });
            return;
    }
}

void ContainerRuntime::recovered(Result<SharedVolume> r) {
    if (stage_ != Stage::recovering) return;
    if (!r) return fail_start(r.error());
    volume_ = std::move(r.value());
    enter(Stage::probing_image);
}

void ContainerRuntime::probed(journal::SeedInput in) {
    if (stage_ != Stage::probing_image) return;
    seed_input_ = std::move(in);
    enter(Stage::seeding);
}

void ContainerRuntime::seeded(Result<journal::SeedOutcome> r) {
    if (stage_ != Stage::seeding) return;
    if (!r) return fail_start(r.error());
    status_.set_versions({r->image_version, r->active_version, r->previous_version});
    start_installer(*r);
    enter(Stage::running);
}

service::CriticalSection& ContainerRuntime::critical() {
    if (installer_) return *installer_;
    return no_critical_;
}

// The installer works on the recovered, seeded volume; its reports reach the agent and the
// versions the agent describes.
void ContainerRuntime::start_installer(const journal::SeedOutcome& seeded) {
    auto vol = std::shared_ptr<store::Volume>(volume_, &volume_->store);
    auto j = std::shared_ptr<journal::Journal>(volume_, &volume_->journal);
    volume_ops_ = std::make_unique<update::StoreVolumeOps>(sched_, vol, j,
                                                           cfg_.collector.keep_versions);
    stager_ = std::make_unique<ExtractStager>(sched_, vol, extract_limits(cfg_));
    downloader_ = std::make_unique<download::HttpDownloader>(
        loop_.get(), sched_, downloader_options(cfg_, volume_->state));
    update::Ports ports{*downloader_, verifier_,    *stager_,     preflight_,
                        child_,       *volume_ops_, health_probe_};
    installer_ = std::make_unique<update::Installer>(
        sched_, ports, update_settings(cfg_), [this, image = seeded.image_version] {
            status_.set_versions({image, installer_->active_version(), ""});
            status_.set_install_problem(installer_->unhealthy_reason());
            if (agent_) agent_->state_changed();
            // A crash loop that began inside the critical section was left to the installer;
            // once it is over and the child still gave up, it ends the container as usual.
            if (stage_ == Stage::running && !installer_->active() &&
                child_.desired() == service::Desired::gave_up) {
                exit_code_ = 1;
                shut_down("crash loop");
            }
        });
    // The package hash goes with the version only while that version is still the active one
    // (seeding may have replaced it by the image's).
    const auto& in = volume_->installed;
    installer_->set_active(seeded.active_version,
                           in && in->version == seeded.active_version ? in->package_hash : "");
    if (in) installer_->restore(*in);
    // Package names are the server's; the collector's binary name is the usual one.
    if (volume_->interrupted) {
        installer_->report_interrupted(*volume_->interrupted, cfg_.collector.binary);
    }
    packages_ = std::make_unique<PackageAdapter>(*installer_);
}

void ContainerRuntime::fail_start(const Error& e) {
    log::error("volume preparation failed", {{"error", e.message()}});
    exit_code_ = 1;
    shut_down("start-up failed");
}

// The updater's own OpAMP agent. Versions and health come from seeding and the child (status_).
void ContainerRuntime::start_agent() {
    auto agent =
        make_agent(loop_.get(), sched_, cfg_, volume_->state, version_, status_, *packages_);
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

void ContainerRuntime::forward(int sig) {
    bool ok = child_.forward(sig);
    log::info(ok ? "signal forwarded" : "signal not forwarded: no child",
              {{"signal", signal_name(sig)}, {"pid", child_.pid()}});
}

// TERM/INT, a crash loop or a failed start. A second request while the first runs changes
// nothing: the stop sequence always runs to its end.
void ContainerRuntime::shut_down(const std::string& why) {
    if (stage_ == Stage::stopping) {
        log::info("shutdown already in progress", {{"reason", why}});
        return;
    }
    log::info("shutdown: begin", {{"reason", why}});
    enter(Stage::stopping);
}

Result<int> run_container(const config::Config& cfg, const std::string& version) {
    loop::Loop loop;
    std::optional<Result<int>> code;
    {
        ContainerRuntime runtime(loop, cfg, version);
        code.emplace(runtime.run());
    }
    // Everything is closed; what is still on the work queue finishes here.
    (void)loop.close();
    return std::move(*code);
}

}  // namespace myr::runtime
