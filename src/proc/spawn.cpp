#include "proc/spawn.hpp"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/signals.hpp"

extern char** environ;

namespace myr::proc {

int exec_failure_code(int err) {
    return err == ENOENT || err == ENOTDIR ? 127 : 126;
}

std::string describe_status(int st) {
    if (WIFEXITED(st)) return "exit code " + std::to_string(WEXITSTATUS(st));
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        const char* name = ::strsignal(sig);
        return "signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
    }
    return "status " + std::to_string(st);
}

Status make_pipe(int fds[2]) {
#ifdef __linux__
    if (::pipe2(fds, O_CLOEXEC) != 0) return fail_errno("pipe");
#else
    // No fork can happen between the two calls: everything runs on the loop thread.
    if (::pipe(fds) != 0) return fail_errno("pipe");
    ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
#endif
    return {};
}

namespace {

// Runs in the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void report_and_exit(int status_fd, int err) {
    // The status pipe is close-on-exec: bytes on it mean exec failed.
    ssize_t n;
    do {
        n = ::write(status_fd, &err, sizeof err);
    } while (n < 0 && errno == EINTR);
    ::_exit(exec_failure_code(err));
}

[[noreturn]] void child_exec(char* const* argv, char* const* envp, int output_fd,
                             const std::optional<RunAs>& run_as, int status_fd) {
    ::setpgid(0, 0);
    if (run_as) {
        // Supplementary groups first (root's would otherwise stay), then gid, then uid.
        if (::setgroups(1, &run_as->gid) != 0 || ::setgid(run_as->gid) != 0 ||
            ::setuid(run_as->uid) != 0) {
            report_and_exit(status_fd, errno);
        }
    }
    // The updater's handlers and mask are libuv's; the child starts from the defaults.
    sigstate::restore_defaults();
    if (output_fd >= 0) {
        ::dup2(output_fd, 1);
        ::dup2(output_fd, 2);
        if (output_fd > 2) ::close(output_fd);
    }
    ::execvpe(argv[0], argv, envp);
    report_and_exit(status_fd, errno);
}

// Our environment with `overrides` set over it, in the strings `keep` owns.
std::vector<char*> environment(const std::vector<std::string>& overrides,
                               std::vector<std::string>& keep) {
    auto key_of = [](std::string_view e) { return e.substr(0, e.find('=')); };
    for (char** e = environ; *e; e++) {
        std::string_view entry = *e;
        bool replaced = false;
        for (const std::string& o : overrides) replaced |= key_of(o) == key_of(entry);
        if (!replaced) keep.emplace_back(entry);
    }
    for (size_t i = 0; i < overrides.size(); i++) {
        bool later = false;
        for (size_t j = i + 1; j < overrides.size(); j++) {
            later |= key_of(overrides[j]) == key_of(overrides[i]);
        }
        if (!later) keep.push_back(overrides[i]);
    }
    std::vector<char*> out;
    out.reserve(keep.size() + 1);
    for (std::string& e : keep) out.push_back(e.data());
    out.push_back(nullptr);
    return out;
}

}  // namespace

Result<Spawned> spawn(const std::vector<std::string>& args, const SpawnOptions& opts) {
    if (args.empty()) return fail("spawn: empty command");
    // Everything the child needs is prepared before fork: after it only async-signal-safe calls.
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    std::vector<char*> envp =
        opts.env.empty() ? std::vector<char*>{} : environment(opts.env, env_strings);

    int status_pipe[2];
    MYR_TRY(make_pipe(status_pipe), "spawn " + args[0]);

    pid_t pid = ::fork();
    if (pid < 0) {
        int err = errno;
        ::close(status_pipe[0]);
        ::close(status_pipe[1]);
        return fail_errno("spawn " + args[0] + ": fork", err);
    }
    if (pid == 0) {
        child_exec(argv.data(), opts.env.empty() ? environ : envp.data(), opts.output_fd,
                   opts.run_as, status_pipe[1]);
    }

    // Also here: whichever of parent and child runs first, the group exists before anybody signals
    // it. EACCES (the child already exec'd) and ESRCH (it already exited) are fine.
    ::setpgid(pid, pid);
    ::close(status_pipe[1]);
    Spawned s;
    s.pid = pid;
    // Blocks only until the exec (or its failure): the pipe closes on exec.
    int err = 0;
    ssize_t n;
    do {
        n = ::read(status_pipe[0], &err, sizeof err);
    } while (n < 0 && errno == EINTR);
    ::close(status_pipe[0]);
    if (n == static_cast<ssize_t>(sizeof err)) s.exec_errno = err;
    return s;
}

}  // namespace myr::proc
