// The real binary's `container` command as a test starts it: as PID 1 of a new PID namespace
// (`unshare --pid --fork --mount-proc`), or directly, where it makes itself a child subreaper.
//
// unshare forks: the updater is unshare's only child, and a signal sent to unshare is not passed
// on. The updater's pid as seen from here is found in /proc/<unshare>/task/*/children and signals
// go to it directly (a PID 1 receives signals from an ancestor namespace for the handlers it set).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace myr::test {

enum class Launch { pid1, subreaper };

// False, with the skip reported (harness.hpp), where a PID 1 cannot be started: it needs root and
// `unshare --pid --fork --mount-proc`. A case calls `if (!can_run_pid1()) return;`.
bool can_run_pid1();

// The direct children of `pid` (every thread's list).
std::vector<pid_t> children_of(pid_t pid);

// One running `myriarch-updater container --config <config>`; killed with its process group when
// it is still running at destruction.
class Updater {
  public:
    explicit Updater(const std::string& config, Launch how = Launch::pid1,
                     const SpawnOptions& opts = {});
    ~Updater();
    Updater(const Updater&) = delete;
    Updater& operator=(const Updater&) = delete;

    // The updater's pid as seen from here; -1 when it exited before it could be found (a crash
    // point early in the start).
    pid_t pid() const { return pid_; }
    void signal(int sig);
    // The raw wait status, or nullopt when still running after `t`.
    std::optional<int> wait(Millis t);
    // The exit code (-1: killed by a signal, -2: still running after `t`).
    int wait_exit(Millis t = 30s);
    // TERM and the exit code.
    int stop(Millis t = 30s);

    std::string log() const;                        // the updater's log (its stderr)
    std::string out() const;                        // its stdout, where the child's output goes too
    bool log_has(const std::string& needle) const;  // in the log now
    bool wait_for_log(const std::string& needle, Millis t = 15s) const;
    int count(const std::string& needle) const;  // occurrences in the log

  private:
    std::optional<Process> proc_;
    pid_t pid_ = -1;
};

}  // namespace myr::test
