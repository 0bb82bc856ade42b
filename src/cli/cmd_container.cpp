// `container --config F`: PID 1 of a container (spec "Process model"; docs/pid1.md).
//
// The story, in order: load the configuration → recover and seed the collector volume (on the work
// queue, the loop keeps beating) → serve the probes → start the supervisor as our child → connect
// to the OpAMP server → run the loop → on TERM/INT let an install finish its critical section,
// stop the child (TERM to its group, KILL after stopTimeout) and exit 0. A crash loop exits 1.
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "core/log.hpp"

#if defined(__linux__) || defined(__APPLE__)
#include <unistd.h>

#include "cli/build_info.hpp"
#include "cli/container_status.hpp"
#include "cli/container_volume.hpp"
#include "health/probe_server.hpp"
#include "health/probes.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"
#include "opamp/ws_transport.hpp"
#include "proc/reaper.hpp"
#include "service/child_service.hpp"
#endif

namespace myr::cli {

#if defined(__linux__) || defined(__APPLE__)

namespace {

service::ChildSettings child_settings(const config::Container& c) {
    service::ChildSettings s;
    s.command = c.supervisor_command;
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

// A start-up step that fails ends the command with exit 1 and a message for people.
#define MYR_TRY_EXIT(expr)                                 \
    do {                                                   \
        auto myr_r_ = (expr);                              \
        if (!myr_r_) return runtime_error(myr_r_.error()); \
    } while (0)

// The process: every long-lived object of the container command, torn down in reverse order
// before the loop is closed.
class ContainerProcess {
  public:
    ContainerProcess(loop::Loop& loop, const config::Config& cfg)
        : loop_(loop),
          cfg_(cfg),
          sched_(loop.get()),
          reaper_(loop),
          heartbeat_(sched_),
          child_(reaper_, sched_, child_settings(*cfg.container)),
          readiness_([this] { return child_.state() == service::State::running; },
                     [this] { return child_.describe(); }),
          status_(sched_, child_) {
        child_.on_change([this] {
            if (child_.desired() != service::Desired::gave_up || shutting_down_) return;
            exit_code_ = 1;
            shut_down("crash loop");
        });
    }

    int run() {
        MYR_TRY_EXIT(install_signals());
        MYR_TRY_EXIT(reaper_.start());
        if (reaper_.subreaper()) log::info("registered as child subreaper", {{"pid", ::getpid()}});
        MYR_TRY_EXIT(start_probes());
        // The work may still be running when a TERM ends the loop; its completion then runs while
        // the loop is closed, after this object is gone, and must not touch it.
        std::weak_ptr<bool> alive = alive_;
        prepare_volume(sched_, reaper_, cfg_, alive, [this, alive](Result<VolumeState> vol) {
            if (alive.expired() || shutting_down_) return;
            if (!vol) {
                log::error("volume preparation failed", {{"error", vol.error().message()}});
                exit_code_ = 1;
                return shut_down("start-up failed");
            }
            status_.set_volume(*vol);
            child_.start([](Status) {});  // failures are logged and count as unexpected ends
            status_.follow();
            connect_opamp();
        });
        loop_.run();
        return exit_code_;
    }

  private:
    Status install_signals() {
        // Writes to a probe client that went away must not kill PID 1.
        std::signal(SIGPIPE, SIG_IGN);
        for (int sig : {SIGTERM, SIGINT}) {
            auto w = std::make_unique<loop::SignalWatcher>(loop_);
            MYR_TRY(w->start(sig,
                             [this](int s) { shut_down(std::string("signal ") + signal_name(s)); }),
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

    Status start_probes() {
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

    // The updater's own OpAMP agent. Packages are answered by UnavailableInstaller until the
    // update pipeline lands; versions and health come from seeding and the child (status_).
    void connect_opamp() {
        auto agent = opamp::make_agent(loop_.get(), sched_, cfg_, build_info::version(), status_,
                                       installer_);
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

    void forward(int sig) {
        bool ok = child_.forward(sig);
        log::info(ok ? "signal forwarded" : "signal not forwarded: no child",
                  {{"signal", signal_name(sig)}, {"pid", child_.pid()}});
    }

    // TERM/INT, a crash loop or a failed start. A second request while the first runs changes
    // nothing: the stop sequence always runs to its end.
    void shut_down(const std::string& why) {
        if (shutting_down_) {
            log::info("shutdown already in progress", {{"reason", why}});
            return;
        }
        shutting_down_ = true;
        log::info("shutdown: begin", {{"reason", why}});
        if (critical_->active()) {
            log::info("shutdown: waiting for the install's critical section to end");
        }
        critical_->on_end([this] {
            log::info("shutdown: stopping child", {{"state", service::to_string(child_.state())}});
            // The child and the OpAMP connection stop side by side; the loop ends when both did.
            pending_stops_ = agent_ ? 2 : 1;
            auto one_done = [this] {
                if (--pending_stops_ > 0) return;
                log::info("shutdown: complete", {{"exit_code", exit_code_}});
                loop_.stop();
            };
            child_.stop([one_done](Status) { one_done(); });
            if (agent_) agent_->stop(one_done);
        });
    }

    loop::Loop& loop_;
    const config::Config& cfg_;
    loop::UvScheduler sched_;
    proc::Reaper reaper_;
    health::Heartbeat heartbeat_;
    service::ChildService child_;
    health::Readiness readiness_;
    ContainerStatus status_;
    opamp::UnavailableInstaller installer_;
    std::unique_ptr<opamp::Agent> agent_;
    std::unique_ptr<health::ProbeServer> probes_;
    // The installer replaces this with its own when it lands.
    std::unique_ptr<service::CriticalSection> critical_ =
        std::make_unique<service::NoCriticalSection>();
    std::vector<std::unique_ptr<loop::SignalWatcher>> signals_;
    bool shutting_down_ = false;
    int pending_stops_ = 0;
    int exit_code_ = 0;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
#undef MYR_TRY_EXIT
};

int run_container(const config::Config& cfg) {
    loop::Loop loop;
    int code;
    {
        ContainerProcess process(loop, cfg);
        code = process.run();
    }
    // Everything is closed; what is still pending (a work-queue job) finishes here.
    (void)loop.close();
    return code;
}

}  // namespace

#endif

int cmd_container(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, {{"config"}, {}, {}});
    if (!args) return usage_error("container", args.error().message());
    if (args->flag("help")) return print_help("container");
    if (!args->positional().empty()) {
        return usage_error("container", "unexpected argument " + args->positional()[0]);
    }
    auto path = args->get("config");
    if (!path || path->empty()) return usage_error("container", "--config FILE is required");
#if !defined(__linux__) && !defined(__APPLE__)
    return runtime_error(Error(
        "container: needs Linux or macOS (process groups, POSIX signals and reaping); use `run` "
        "on this platform"));
#else
    config::LoadResult r = config::load_file(*path, config::Mode::container);
    if (!r.config) {
        for (const config::Problem& p : r.problems) {
            bool whole_file = p.line == 0 && p.key.empty();
            std::fprintf(stderr, "%s%s\n", whole_file ? "myriarch-updater: " : "", p.str().c_str());
        }
        return 1;
    }
    log::configure(r.config->log.level, r.config->log.format);
    log::info("container: starting", {{"config", *path}, {"pid", ::getpid()}});
    return run_container(*r.config);
#endif
}

}  // namespace myr::cli
