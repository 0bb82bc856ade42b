#include "service/child_service.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cstring>

#include "core/log.hpp"

namespace myr::service {

const char* to_string(State s) {
    switch (s) {
        case State::running:
            return "running";
        case State::waiting_to_restart:
            return "waiting_to_restart";
        case State::stopping:
            return "stopping";
        case State::stopped:
            return "stopped";
    }
    return "?";
}

const char* to_string(Desired d) {
    switch (d) {
        case Desired::not_started:
            return "not_started";
        case Desired::running:
            return "running";
        case Desired::stopped:
            return "stopped";
        case Desired::gave_up:
            return "gave_up";
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
      group_poll_(sched.timer()),
      announcer_(sched) {}

ChildService::~ChildService() = default;

void ChildService::on_change(std::function<void()> listener) {
    announcer_.add(std::move(listener));
}

void ChildService::set(State st) {
    state_ = st;
    announcer_.changed();
}

std::string ChildService::describe() const {
    switch (state_) {
        case State::stopped:
            switch (desired_) {
                case Desired::not_started:
                    return "child not running: not started yet";
                case Desired::gave_up:
                    return "child not running: gave up: " + give_up_reason_;
                case Desired::running:
                case Desired::stopped:
                    return "child not running: stopped";
            }
            return "child not running: stopped";
        case State::running:
            return "child running (pid " + std::to_string(pid_) + ")";
        case State::waiting_to_restart: {
            long long ms = restart_timer_->remaining().count();
            return "child not running: restarting in " + std::to_string((ms + 999) / 1000) + "s";
        }
        case State::stopping:
            return "child not running: stopping (pid " + std::to_string(pid_) + ")";
    }
    return "";
}

void ChildService::later(Done done, Status st) {
    if (!done) return;
    sched_.post(guard_.bind([done = std::move(done), st = std::move(st)] { done(st); }));
}

void ChildService::start(Done done) {
    switch (state_) {
        case State::running:
            return later(std::move(done), {});
        case State::stopping:
            return later(std::move(done), fail("start child: it is still stopping"));
        case State::waiting_to_restart:
            restart_timer_->stop();
            break;
        case State::stopped:
            break;
    }
    desired_ = Desired::running;
    give_up_reason_.clear();
    // The crashes of a release that was just rolled back are not the restored one's: each start
    // on purpose gets the whole maxRestarts budget and the first restartDelay again.
    policy_.reset();
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
        pid_ = -1;
        unexpected_end();  // counts as an unexpected end, like an exec failure
        return later(std::move(done), s.fail("start child"));
    }
    ++starts_;
    pid_ = s->pid;
    set(State::running);
    if (s->exec_errno != 0) {
        // The child exits 126/127 and the reaper reports it as an unexpected end.
        log::error("child exec failed", {{"command", what},
                                         {"errno", s->exec_errno},
                                         {"error", std::strerror(s->exec_errno)},
                                         {"exit_code", proc::exec_failure_code(s->exec_errno)}});
        return later(
            std::move(done),
            fail(Error(Errc::process, Error::from_errno("exec " + what, s->exec_errno).message(),
                       s->exec_errno)));
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
    switch (state_) {
        case State::stopping:
            return wait_for_group();
        case State::running:
            return unexpected_end();
        case State::stopped:
        case State::waiting_to_restart:
            return;  // cannot happen: no child exists in these states
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
        desired_ = Desired::gave_up;
        give_up_reason_ = d.reason;
        log::error("crash loop: giving up", {{"reason", d.reason}});
        set(State::stopped);
        return;
    }
    set(State::waiting_to_restart);
    ++restarts_;
    log::info("restart scheduled", {{"delay", format_duration(d.delay)},
                                    {"delay_ms", static_cast<long long>(d.delay.count())},
                                    {"recent_ends", d.recent_ends}});
    restart_timer_->start(d.delay, [this] { launch(nullptr); });
}

void ChildService::stop(Done done) {
    // A child that gave up stays "gave up": the reason is what /readyz shows during the shutdown.
    if (desired_ != Desired::gave_up) desired_ = Desired::stopped;
    switch (state_) {
        case State::stopped:
            return later(std::move(done), {});
        case State::waiting_to_restart:
            restart_timer_->stop();
            log::info("child stopped", {{"reason", "stopped during restart backoff"}});
            set(State::stopped);
            return later(std::move(done), {});
        case State::stopping:
            stop_waiters_.push_back(std::move(done));
            return;
        case State::running:
            break;
    }
    set(State::stopping);
    stop_waiters_.push_back(std::move(done));
    // The whole group: the supervisor and the collector it started get the signal together.
    procs_.signal(-pid_, settings_.stop_signal);
    log::info("stopping child", {{"pid", pid_},
                                 {"signal", settings_.stop_signal == SIGINT ? "INT" : "TERM"},
                                 {"timeout", format_duration(settings_.stop_timeout)}});
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
    log::info("child stopped", {{"pid", pid_}});
    set(State::stopped);
    auto waiters = std::move(stop_waiters_);
    stop_waiters_.clear();
    for (auto& w : waiters) later(std::move(w), {});
}

// A group signal would reach the collector twice: once from us, once from the supervisor.
std::optional<pid_t> ChildService::forward(int sig) {
    if (state_ != State::running && state_ != State::stopping) return std::nullopt;
    if (pid_ <= 0 || !procs_.signal(pid_, sig)) return std::nullopt;
    return pid_;
}

}  // namespace myr::service
