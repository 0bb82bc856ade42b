#include "service/child_service.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cstring>

#include "core/log.hpp"

extern char** environ;

namespace myr::service {

const char* to_string(State s) {
    switch (s) {
        case State::running:
            return "running";
        case State::starting:
            return "starting";
        case State::stopping:
            return "stopping";
        case State::stopped:
            return "stopped";
    }
    return "?";
}

ChildService::ChildService(proc::Processes& procs, loop::Scheduler& sched, ChildSettings settings)
    : procs_(procs),
      sched_(sched),
      settings_(std::move(settings)),
      policy_(settings_.restart, sched),
      restart_timer_(sched.timer()),
      kill_timer_(sched.timer()),
      group_poll_(sched.timer()) {}

ChildService::~ChildService() = default;

State ChildService::state() const {
    switch (phase_) {
        case Phase::idle:
            return State::stopped;
        case Phase::running:
            return State::running;
        case Phase::backoff:
            return State::starting;
        case Phase::stopping:
            return State::stopping;
    }
    return State::stopped;
}

std::vector<std::string> ChildService::environment() const {
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
    return env;
}

std::string ChildService::describe() const {
    switch (phase_) {
        case Phase::idle:
            return "child not running: stopped";
        case Phase::running:
            return "child running (pid " + std::to_string(pid_) + ")";
        case Phase::backoff: {
            long long ms = restart_timer_->remaining().count();
            return "child not running: restarting in " + std::to_string((ms + 999) / 1000) + "s";
        }
        case Phase::stopping:
            return "child not running: stopping (pid " + std::to_string(pid_) + ")";
    }
    return "";
}

void ChildService::later(Done done, Status st) {
    if (!done) return;
    sched_.post(guard_.bind([done = std::move(done), st = std::move(st)] { done(st); }));
}

void ChildService::start(Done done) {
    switch (phase_) {
        case Phase::running:
            return later(std::move(done), {});
        case Phase::stopping:
            return later(std::move(done), fail("start child: it is still stopping"));
        case Phase::backoff:
            restart_timer_->stop();
            break;
        case Phase::idle:
            break;
    }
    launch(std::move(done));
}

void ChildService::launch(Done done) {
    const std::string& what = settings_.command.empty() ? std::string() : settings_.command[0];
    leader_gone_ = false;
    killed_ = false;
    policy_.started();
    auto s = procs_.spawn(settings_.command, {}, [this](int status) { on_exit(pid_, status); });
    if (!s) {
        log::error("child start failed", {{"command", what}, {"error", s.error().message()}});
        phase_ = Phase::running;  // so that the end below counts as an unexpected one
        pid_ = -1;
        unexpected_end();
        return later(std::move(done), s.fail("start child"));
    }
    ++starts_;
    pid_ = s->pid;
    phase_ = Phase::running;
    if (s->exec_errno != 0) {
        // The child exits 126/127 and the reaper reports it as an unexpected end.
        log::error("child exec failed", {{"command", what},
                                         {"errno", s->exec_errno},
                                         {"error", std::strerror(s->exec_errno)},
                                         {"exit_code", proc::exec_failure_code(s->exec_errno)}});
        return later(std::move(done), fail(Error::from_errno("exec " + what, s->exec_errno)));
    }
    log::info("child started", {{"pid", pid_}, {"command", what}});
    later(std::move(done), {});
}

void ChildService::on_exit(pid_t pid, int status) {
    leader_gone_ = true;
    bool by_signal = WIFSIGNALED(status);
    if (by_signal) {
        log::info("child exited", {{"pid", pid},
                                   {"signal", WTERMSIG(status)},
                                   {"status", proc::describe_status(status)}});
    } else {
        log::info("child exited", {{"pid", pid}, {"code", WEXITSTATUS(status)}});
    }
    switch (phase_) {
        case Phase::stopping:
            return wait_for_group();
        case Phase::running:
            return unexpected_end();
        case Phase::idle:
        case Phase::backoff:
            return;  // cannot happen: no child exists in these phases
    }
}

void ChildService::unexpected_end() {
    // Leftovers of the crashed child's group (its collector) would clash with the next start.
    if (pid_ > 0 && procs_.signal(-pid_, 0)) {
        procs_.signal(-pid_, SIGKILL);
        log::warn("killed leftover processes of the child's group", {{"pgid", pid_}});
    }
    RestartDecision d = policy_.ended_unexpectedly();
    if (d.give_up) {
        phase_ = Phase::idle;
        log::error("crash loop: giving up", {{"reason", d.reason}});
        if (give_up_) give_up_(d.reason);
        return;
    }
    phase_ = Phase::backoff;
    log::info("restart scheduled", {{"delay", format_duration(d.delay)},
                                    {"delay_ms", static_cast<long long>(d.delay.count())},
                                    {"recent_ends", d.recent_ends}});
    restart_timer_->start(d.delay, [this] { launch(nullptr); });
}

void ChildService::stop(Done done) {
    switch (phase_) {
        case Phase::idle:
            return later(std::move(done), {});
        case Phase::backoff:
            restart_timer_->stop();
            phase_ = Phase::idle;
            log::info("child stopped", {{"reason", "stopped during restart backoff"}});
            return later(std::move(done), {});
        case Phase::stopping:
            stop_waiters_.push_back(std::move(done));
            return;
        case Phase::running:
            break;
    }
    phase_ = Phase::stopping;
    stop_waiters_.push_back(std::move(done));
    // The whole group: the supervisor and the collector it started get TERM together.
    procs_.signal(-pid_, SIGTERM);
    log::info(
        "stopping child",
        {{"pid", pid_}, {"signal", "TERM"}, {"timeout", format_duration(settings_.stop_timeout)}});
    kill_timer_->start(settings_.stop_timeout, [this] {
        killed_ = true;
        procs_.signal(-pid_, SIGKILL);
        log::warn("child did not stop in time, killed", {{"pid", pid_}, {"signal", "KILL"}});
        if (leader_gone_) wait_for_group();
    });
}

void ChildService::wait_for_group() {
    // The leader is gone; the stop is complete when no process of its group is left (or they were
    // KILLed: then the reaper collects them shortly).
    bool group_left = procs_.signal(-pid_, 0);
    if (!group_left || killed_) return finish_stop();
    group_poll_->start(Duration(50), [this] { wait_for_group(); });
}

void ChildService::finish_stop() {
    kill_timer_->stop();
    group_poll_->stop();
    phase_ = Phase::idle;
    log::info("child stopped", {{"pid", pid_}});
    auto waiters = std::move(stop_waiters_);
    stop_waiters_.clear();
    for (auto& w : waiters) later(std::move(w), {});
}

bool ChildService::forward(int sig) {
    if (phase_ != Phase::running && phase_ != Phase::stopping) return false;
    if (pid_ <= 0) return false;
    return procs_.signal(pid_, sig);
}

}  // namespace myr::service
