// Processes for tests: spawn() hands out made-up pids and records what was asked, signal() records
// every signal and answers from a model of each process group, and the test decides when a process
// ends (end()), as the reaper would report it. Nothing here forks.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "proc/processes.hpp"

namespace myr::proc {

class FakeProcesses final : public Processes {
  public:
    struct Process {
        std::vector<std::string> argv;
        bool leader_alive = true;
        bool group_alive = true;  // the leader or anything it started in its group
        ExitCallback on_exit;
    };

    Result<Spawned> spawn(const std::vector<std::string>& argv, const SpawnOptions& opts,
                          ExitCallback on_exit) override;
    bool signal(pid_t pid, int sig) override;

    // The leader `pid` ends with `wait_status` (see exited()/killed_by()); with `leftovers`, other
    // processes of its group stay behind until a KILL to the group or end_group().
    void end(pid_t pid, int wait_status, bool leftovers = false);
    void end_group(pid_t pid);

    static int exited(int code) { return (code & 0xff) << 8; }
    static int killed_by(int sig) { return sig & 0x7f; }

    // What spawn() does next: fail as fork would, or "exec" and fail with this errno.
    std::optional<Error> fail_next_spawn;
    int next_exec_errno = 0;

    std::map<pid_t, Process> processes;
    std::vector<std::pair<pid_t, int>> signals;  // every signal() with sig != 0, in order
    pid_t last_pid = 0;
    int spawns = 0;

  private:
    pid_t next_pid_ = 1000;
};

}  // namespace myr::proc
