#include "runtime/container.hpp"

#include <unistd.h>

#include <csignal>

#include "core/log.hpp"
#include "runtime/agent.hpp"

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
      readiness_([this] { return child_.state() == service::State::running; },
                 [this] { return child_.describe(); }),
      status_(sched_, child_) {
    child_.on_change([this] {
        if (stage_ != Stage::running || child_.desired() != service::Desired::gave_up) return;
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
            if (critical_->active()) {
                log::info("shutdown: waiting for the install's critical section to end");
            }
            critical_->on_end([this] {
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
    enter(Stage::running);
}

void ContainerRuntime::fail_start(const Error& e) {
    log::error("volume preparation failed", {{"error", e.message()}});
    exit_code_ = 1;
    shut_down("start-up failed");
}

// The updater's own OpAMP agent. Versions and health come from seeding and the child (status_).
void ContainerRuntime::start_agent() {
    auto agent = make_agent(loop_.get(), sched_, cfg_, version_, status_, installer_);
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
