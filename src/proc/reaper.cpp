#include "proc/reaper.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "core/log.hpp"

namespace myr::proc {

Reaper::Reaper(loop::Loop& loop) : loop_(loop), sigchld_(loop) {}

Reaper::~Reaper() = default;

Status Reaper::start() {
#ifdef __linux__
    if (::getpid() != 1) {
        if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
            return fail_errno("register as child subreaper");
        }
        subreaper_ = true;
    }
#endif
    MYR_TRY(sigchld_.start(SIGCHLD, [this](int) { reap(); }), "reaper");
    // Children that ended before the watcher existed (or were inherited) are collected now.
    reap();
    return {};
}

Result<Spawned> Reaper::spawn(const std::vector<std::string>& argv, const SpawnOptions& opts,
                              ExitCallback on_exit) {
    return spawn_with_usage(argv, opts,
                            [cb = std::move(on_exit)](int status, const struct rusage&) {
                                if (cb) cb(status);
                            });
}

Result<Spawned> Reaper::spawn_with_usage(const std::vector<std::string>& argv,
                                         const SpawnOptions& opts, UsageCallback on_exit) {
    auto s = proc::spawn(argv, opts);
    if (!s) return s;
    watched_[s->pid] = std::move(on_exit);
    return s;
}

bool Reaper::signal(pid_t pid, int sig) {
    return ::kill(pid, sig) == 0;
}

void Reaper::deliver(pid_t pid, int status, const struct rusage& usage) {
    auto it = watched_.find(pid);
    if (it == watched_.end()) {
        ++orphans_;
        log::debug("orphan reaped", {{"pid", pid}, {"status", describe_status(status)}});
        return;
    }
    UsageCallback cb = std::move(it->second);
    watched_.erase(it);
    if (cb) cb(status, usage);
}

void Reaper::reap() {
#ifdef __linux__
    for (;;) {
        int status = 0;
        struct rusage usage {};
        pid_t pid = ::wait4(-1, &status, WNOHANG, &usage);
        if (pid > 0) {
            deliver(pid, status, usage);
            continue;
        }
        if (pid < 0 && errno == EINTR) continue;
        break;  // 0: children left but none ended; ECHILD: no children at all
    }
#else
    std::vector<pid_t> pids;
    for (const auto& [pid, cb] : watched_) pids.push_back(pid);
    for (pid_t pid : pids) {
        int status = 0;
        struct rusage usage {};
        pid_t r;
        do {
            r = ::wait4(pid, &status, WNOHANG, &usage);
        } while (r < 0 && errno == EINTR);
        if (r == pid) deliver(pid, status, usage);
    }
#endif
}

}  // namespace myr::proc
