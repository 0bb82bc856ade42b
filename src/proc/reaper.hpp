// The one place that collects exit statuses.
//
// One SIGCHLD watcher runs a waitpid loop. On Linux it is waitpid(-1, WNOHANG): a pid somebody
// watches goes to its owner, any other pid is an orphan that was re-parented to us (we are PID 1 or
// a registered child subreaper) and is just reaped. (Elsewhere, where there is no subreaper, the
// non-Linux branch asks for each watched pid; no build compiles it today: see docs/architecture.md,
// "Platforms".)
//
// Ordering: spawn() and watch() happen in one loop callback, and SIGCHLD reaches us as a loop
// event, so a child that exits at once is never reaped before its owner is registered.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "loop/loop.hpp"
#include "loop/scheduler.hpp"
#include "proc/processes.hpp"
#include "proc/spawn.hpp"

namespace myr::proc {

class Reaper final : public Processes {
  public:
    explicit Reaper(loop::Loop& loop);
    ~Reaper() override;
    Reaper(const Reaper&) = delete;
    Reaper& operator=(const Reaper&) = delete;

    // Installs the SIGCHLD watcher and, on Linux when we are not PID 1, registers as the child
    // subreaper so orphaned descendants come to us rather than to the host's init.
    [[nodiscard]] Status start();

    // Starts a process and watches it; `on_exit` runs on the loop with its wait status.
    [[nodiscard]] Result<Spawned> spawn(const std::vector<std::string>& argv,
                                        const SpawnOptions& opts, ExitCallback on_exit) override;
    // The same, also handing on the child's resource usage from wait4 (ru_maxrss is its peak
    // resident set in KiB, as Linux counts it): the installer logs a preflight's peak memory.
    using UsageCallback = std::function<void(int wait_status, const struct rusage& usage)>;
    [[nodiscard]] Result<Spawned> spawn_with_usage(const std::vector<std::string>& argv,
                                                   const SpawnOptions& opts, UsageCallback on_exit);
    bool signal(pid_t pid, int sig) override;

    // Collects whatever has ended now (also called by the SIGCHLD watcher).
    void reap();

    bool watching(pid_t pid) const { return watched_.count(pid) != 0; }
    size_t orphans_reaped() const { return orphans_; }
    bool subreaper() const { return subreaper_; }
    loop::Loop& loop() { return loop_; }

  private:
    void deliver(pid_t pid, int status, const struct rusage& usage);

    loop::Loop& loop_;
    loop::SignalWatcher sigchld_;
    std::map<pid_t, UsageCallback> watched_;
    size_t orphans_ = 0;
    bool subreaper_ = false;
};

// Output and status of a short-lived command.
struct Captured {
    int wait_status = 0;
    std::string output;  // stdout and stderr interleaved, at most `max_output` bytes
    bool truncated = false;
    long max_rss_kib = 0;  // the process's peak resident set (wait4's ru_maxrss)
    // Its process group still had members when it ended (a daemon it forked): they were killed.
    bool left_processes = false;
    int exit_code() const;  // -1 when it ended by a signal
};

struct CaptureOptions {
    Duration timeout = std::chrono::seconds(10);
    size_t max_output = 64 * 1024;
    // Past max_output keep the last bytes instead of the first: what a failing command printed
    // last says why it failed.
    bool keep_tail = false;
    std::optional<RunAs> run_as;
    std::vector<std::string> env;  // SpawnOptions::env
};

using CaptureCallback = std::function<void(Result<Captured>)>;

// Runs argv to its end through the Reaper, capturing stdout+stderr through a pipe read on the loop.
// At the timeout its process group gets SIGKILL and the result is an error ("timed out after 10s").
// An exec failure is an error naming errno. A non-zero exit is NOT an error: look at the status.
// When the process ends, whatever is left in its process group gets SIGKILL (and is reaped as an
// orphan): a short command leaves nothing running behind it. A descendant that left the group
// (setsid, setpgid) is not found this way.
// The callback runs exactly once, on the loop, never from inside this call. Returns the process's
// pid (also its process group), or -1 when none was started, so that an owner that gives up early
// can kill the group; the callback still runs once the process has ended.
pid_t run_capture(Reaper& reaper, loop::Scheduler& sched, const std::vector<std::string>& argv,
                  const CaptureOptions& opts, CaptureCallback callback);

}  // namespace myr::proc
