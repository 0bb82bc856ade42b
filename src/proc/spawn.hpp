// Starting a process ourselves, not with uv_spawn: libuv reaps only its own children with
// waitpid(pid), and a PID 1 that calls waitpid(-1) steals those exits (libuv#4179). Every process
// the updater starts goes through spawn() and is collected by the one Reaper.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace myr::proc {

// A user to run as: the child sets its groups to `gid` alone, then its gid, then its uid (in that
// order: once the uid is not root, it may no longer change the others). A failure is an exec
// failure (Spawned::exec_errno, exit 126).
struct RunAs {
    uid_t uid = 0;
    gid_t gid = 0;
};

struct SpawnOptions {
    // Where the child's stdout and stderr go: -1 keeps ours (pass-through, the supervisor's case),
    // else this fd is dup'ed onto both (run_capture's pipe). Stdin is always ours.
    int output_fd = -1;
    // Unset: the child keeps our user.
    std::optional<RunAs> run_as;
    // "KEY=value" entries set in the child's environment over ours (a key given twice: the last
    // wins); empty: our environment as it is.
    std::vector<std::string> env;
};

struct Spawned {
    pid_t pid = -1;
    // 0 when exec succeeded; else the errno of the failed exec. The child then exits with 126
    // (found but not executable) or 127 (not found), like a shell, and must still be reaped.
    int exec_errno = 0;
};

// fork + exec of argv[0] (looked up in $PATH when it has no '/'), in its own process group
// (setpgid in the child and in the parent, so neither order of scheduling leaves a window),
// with the environment of the updater (plus opts.env), an empty signal mask and default
// dispositions. Fails only when fork itself fails (the exec failure is part of Spawned).
[[nodiscard]] Result<Spawned> spawn(const std::vector<std::string>& argv,
                                    const SpawnOptions& opts = {});

// pipe() with both ends close-on-exec (pipe2; the non-Linux branch is not built, see
// docs/architecture.md "Platforms").
[[nodiscard]] Status make_pipe(int fds[2]);

// The exit code a shell would give for an exec failure with this errno.
int exec_failure_code(int err);

// "exit code 3", "signal 9 (Killed)" for a wait status.
std::string describe_status(int wait_status);

}  // namespace myr::proc
