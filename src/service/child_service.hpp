// ChildService: container.supervisorCommand as our child, behind ServiceController.
//
// States (service::State), with what moves between them:
// clang-format off
//   stopped             start()                          running
//   running             the leader ends, not asked to    waiting_to_restart (or stopped: gave up)
//   waiting_to_restart  the restart delay is over        running
//   waiting_to_restart  start() / stop()                 running / stopped
//   running             stop()                           stopping: TERM to the group
//   stopping            the group is gone (or KILLed)    stopped; KILL after stopTimeout
// clang-format on
// Desired (service::Desired) records why a stopped child is stopped: not started yet, stopped on
// request, or given up. Invariants: at most one child at a time; a restart happens only from
// waiting_to_restart, so nothing restarts a child that stop() stopped; a child whose leader ended
// unexpectedly has what is left of its process group killed before the restart (a surviving
// collector would fight the new one for its ports).
#pragma once

#include <sys/types.h>

#include <csignal>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loop/scheduler.hpp"
#include "proc/processes.hpp"
#include "service/announcer.hpp"
#include "service/restart_policy.hpp"
#include "service/service_controller.hpp"

namespace myr::service {

struct ChildSettings {
    std::vector<std::string> command;
    // The signal a stop sends to the child's process group first; KILL follows after stop_timeout.
    int stop_signal = SIGTERM;
    Duration stop_timeout = std::chrono::seconds(30);
    RestartSettings restart;
};

class ChildService : public ServiceController {
  public:
    ChildService(proc::Processes& procs, loop::Scheduler& sched, ChildSettings settings);
    ~ChildService() override;

    State state() const override { return state_; }
    Desired desired() const override { return desired_; }
    void on_change(std::function<void()> listener) override;
    void stop(Done done) override;
    void start(Done done) override;
    std::optional<pid_t> forward(int sig) override;

    // Why the restart policy gave up ("" unless desired() is gave_up).
    std::string give_up_reason() const override { return give_up_reason_; }
    // "child running (pid 42)", "child not running: restarting in 4s", "child not running: gave
    // up: 6 unexpected ends within 10m (maxRestarts 5)".
    std::string describe() const override;
    pid_t pid() const override { return pid_; }
    uint32_t starts() const { return starts_; }
    // Restarts after an unexpected end, since the process began (myriarch_child_restarts_total).
    uint64_t restarts() const override { return restarts_; }

  private:
    void set(State s);
    void launch(Done done);
    void on_exit(pid_t pid, int status);
    void unexpected_end();
    void wait_for_group();
    void finish_stop();
    void later(Done done, Status st);

    proc::Processes& procs_;
    loop::Scheduler& sched_;
    ChildSettings settings_;
    RestartPolicy policy_;
    State state_ = State::stopped;
    Desired desired_ = Desired::not_started;
    std::string give_up_reason_;
    pid_t pid_ = -1;
    uint32_t starts_ = 0;
    uint64_t restarts_ = 0;
    bool leader_gone_ = false;
    bool killed_ = false;
    std::unique_ptr<loop::Timer> restart_timer_;
    std::unique_ptr<loop::Timer> kill_timer_;
    std::unique_ptr<loop::Timer> group_poll_;
    std::vector<Done> stop_waiters_;
    Announcer announcer_;
    loop::Guard guard_;
};

}  // namespace myr::service
