// Preflight of a staged collector binary, before anything is stopped: `<staged> --version` must
// name the offered version, and `<staged> <validateArgs>` must exit 0 (design/update.md,
// "Staging and Preflight"). Both run as the supervisor's user, with timeouts, on the loop.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/time.hpp"

namespace myr::stage {

struct PreflightRequest {
    std::string binary;                     // absolute path of the staged binary
    std::string expected_version;           // canonical, as offered
    std::vector<std::string> validate_args;  // collector.validateArgs with {config} substituted
    uid_t uid = 0;                          // run as (the supervisor's user)
    gid_t gid = 0;
    Duration version_timeout = std::chrono::seconds(10);
    Duration validate_timeout = std::chrono::seconds(60);
};

struct PreflightReport {
    std::string version;     // what --version printed, parsed
    long peak_rss_kib = 0;   // of the validate run (getrusage of the child), for the log
    Duration validate_time{};
};

class Preflight {
  public:
    // Destroying a running preflight kills its process group; no callback runs afterwards.
    virtual ~Preflight() = default;
};

// Errors: Errc::process with the last lines of output ("validate exited 1: ...last lines..."),
// Errc::timeout, Errc::invalid when --version names another version. `done` runs exactly once on
// a later loop turn unless the Preflight is destroyed first.
using PreflightDone = std::function<void(Result<PreflightReport>)>;

}  // namespace myr::stage

namespace myr::proc {
class Reaper;
}
namespace myr::loop {
class Scheduler;
}

namespace myr::stage {

// Runs `--version`, then the validate command. The real Reaper runs them (peak memory comes from
// the child's rusage).
[[nodiscard]] std::unique_ptr<Preflight> start_preflight(proc::Reaper& reaper,
                                                         loop::Scheduler& sched,
                                                         PreflightRequest request,
                                                         PreflightDone done);

}  // namespace myr::stage
