// The process seam (dinit's system-call layer): starting a process, signalling it or its group,
// and hearing of its end. The Reaper is the real one; FakeProcesses stands in for it in tests, so
// the child service's restarts, stops and kills are checked without processes and without sleeps.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "proc/spawn.hpp"

namespace myr::proc {

class Processes {
  public:
    using ExitCallback = std::function<void(int wait_status)>;

    virtual ~Processes() = default;
    // Starts argv in its own process group; `on_exit` runs later, on the loop, with its wait
    // status. Fails only when no process could be made (an exec failure is part of Spawned).
    [[nodiscard]] virtual Result<Spawned> spawn(const std::vector<std::string>& argv,
                                                const SpawnOptions& opts, ExitCallback on_exit) = 0;
    // kill(2): `pid` > 0 is one process, < 0 a process group; signal 0 only asks whether any
    // process of it is left. False when there is none (or it may not be signalled).
    virtual bool signal(pid_t pid, int sig) = 0;
};

}  // namespace myr::proc
