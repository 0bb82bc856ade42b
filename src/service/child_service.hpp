// ChildService: container.supervisorCommand as our child, behind ServiceController.
//
// States (service::State in brackets):
//   idle      [stopped]   not started yet, stopped on purpose, or given up
//   running   [running]   the process exists (also while an exec failure is on its way to us)
//   backoff   [starting]  it ended unexpectedly; a timer restarts it per RestartPolicy
//   stopping  [stopping]  TERM went to its process group; KILL follows after stopTimeout
// Invariants: at most one child at a time; a restart happens only from backoff, so nothing restarts
// a child that stop() stopped; a child whose leader ended unexpectedly has what is left of its
// process group killed before the restart (a surviving collector would fight the new one for its
// ports).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loop/scheduler.hpp"
#include "proc/processes.hpp"
#include "service/restart_policy.hpp"
#include "service/service_controller.hpp"

namespace myr::service {

struct ChildSettings {
    std::vector<std::string> command;
    Duration stop_timeout = std::chrono::seconds(30);
    RestartSettings restart;
};

class ChildService : public ServiceController {
  public:
    ChildService(proc::Processes& procs, loop::Scheduler& sched, ChildSettings settings);
    ~ChildService() override;

    bool exists() const override { return true; }
    State state() const override;
    void stop(Done done) override;
    void start(Done done) override;
    std::vector<std::string> environment() const override;

    // Called once when the restart policy gives up (the container then exits 1).
    void on_give_up(std::function<void(const std::string& reason)> cb) { give_up_ = std::move(cb); }
    // Sends `sig` to the child process (not its group: the supervisor forwards to its collector
    // itself, and a group signal would reach the collector twice). False when no child runs.
    bool forward(int sig);
    // One line for /readyz and logs: "running (pid 42)", "restarting in 4s", "stopped".
    std::string describe() const;
    pid_t pid() const { return pid_; }
    uint32_t starts() const { return starts_; }

  private:
    enum class Phase { idle, running, backoff, stopping };

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
    Phase phase_ = Phase::idle;
    pid_t pid_ = -1;
    uint32_t starts_ = 0;
    bool leader_gone_ = false;
    bool killed_ = false;
    std::unique_ptr<loop::Timer> restart_timer_;
    std::unique_ptr<loop::Timer> kill_timer_;
    std::unique_ptr<loop::Timer> group_poll_;
    loop::Guard guard_;
    std::vector<Done> stop_waiters_;
    std::function<void(const std::string&)> give_up_;
};

}  // namespace myr::service
