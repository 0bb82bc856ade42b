#include "proc/fake_processes.hpp"

#include <signal.h>

namespace myr::proc {

Result<Spawned> FakeProcesses::spawn(const std::vector<std::string>& argv, const SpawnOptions&,
                                     ExitCallback on_exit) {
    if (fail_next_spawn) {
        Error e = std::move(*fail_next_spawn);
        fail_next_spawn.reset();
        return fail(std::move(e));
    }
    ++spawns;
    Spawned s;
    s.pid = ++next_pid_;
    s.exec_errno = next_exec_errno;
    next_exec_errno = 0;
    processes[s.pid] = Process{argv, true, true, std::move(on_exit)};
    last_pid = s.pid;
    return s;
}

bool FakeProcesses::signal(pid_t pid, int sig) {
    const pid_t leader = pid < 0 ? -pid : pid;
    auto it = processes.find(leader);
    if (it == processes.end()) return false;
    Process& p = it->second;
    const bool exists = pid < 0 ? p.group_alive : p.leader_alive;
    if (sig == 0) return exists;
    signals.emplace_back(pid, sig);
    // KILL cannot be ignored: the group is gone at once (its leader's end is still reported
    // through end(), as the reaper reports it later).
    if (exists && sig == SIGKILL && pid < 0) p.group_alive = false;
    return exists;
}

void FakeProcesses::end(pid_t pid, int wait_status, bool leftovers) {
    auto it = processes.find(pid);
    if (it == processes.end() || !it->second.leader_alive) return;
    Process& p = it->second;
    p.leader_alive = false;
    if (!leftovers) p.group_alive = false;
    ExitCallback cb = std::move(p.on_exit);
    if (cb) cb(wait_status);
}

void FakeProcesses::end_group(pid_t pid) {
    auto it = processes.find(pid);
    if (it != processes.end()) it->second.group_alive = false;
}

}  // namespace myr::proc
