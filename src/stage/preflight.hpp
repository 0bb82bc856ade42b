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
#include "loop/step.hpp"

namespace myr::proc {
class Reaper;
}
namespace myr::loop {
class Scheduler;
}

namespace myr::stage {

struct PreflightRequest {
    std::string binary;                      // absolute path of the staged binary
    std::string expected_version;            // canonical, as offered
    std::vector<std::string> validate_args;  // collector.validateArgs with {config} substituted
    uid_t uid = 0;                           // run as (the supervisor's user)
    gid_t gid = 0;
    std::vector<std::string> env;  // "KEY=value" over ours (the supervisor unit's)
    Duration version_timeout = std::chrono::seconds(10);
    Duration validate_timeout = std::chrono::seconds(60);
};

struct PreflightReport {
    std::string version;    // what --version printed, parsed
    long peak_rss_kib = 0;  // of the validate run (getrusage of the child), for the log
    Duration validate_time{};
};

// Errors: Errc::process with the last lines of output ("validate exited 1: ...last lines..."),
// Errc::timeout, Errc::invalid when --version names another version. `done` runs exactly once on
// a later loop turn unless the Step is destroyed first.
using PreflightDone = std::function<void(Result<PreflightReport>)>;

// The port the installer runs a staged binary through (its `preflight`). Destroying the returned
// Step kills the running process group; no callback runs afterwards.
class Preflighter {
  public:
    virtual ~Preflighter() = default;
    [[nodiscard]] virtual std::unique_ptr<loop::Step> run(PreflightRequest request,
                                                          PreflightDone done) = 0;
};

// The real one: `--version`, then the validate command, through the Reaper (peak memory comes
// from the child's rusage), on the loop.
class ReaperPreflighter final : public Preflighter {
  public:
    ReaperPreflighter(proc::Reaper& reaper, loop::Scheduler& sched)
        : reaper_(reaper), sched_(sched) {}
    [[nodiscard]] std::unique_ptr<loop::Step> run(PreflightRequest request,
                                                  PreflightDone done) override;

  private:
    proc::Reaper& reaper_;
    loop::Scheduler& sched_;
};

}  // namespace myr::stage
