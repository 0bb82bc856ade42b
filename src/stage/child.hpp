// The extraction in a child process, where the kernel holds it to a budget (docs/stage.md,
// "Budgets"). extract_binary bounds what it knows of (members, the zip directory, windows, unpacked
// bytes), but it runs libarchive, liblzma, libzstd and zlib over hostile bytes: should one of them
// allocate beyond those bounds, it must not be PID 1 that grows (a pod's memory limit would
// OOM-kill the updater and the collector with it). So PID 1 re-executes itself (/proc/self/exe,
// which needs nothing else in the image) as `myriarch-updater internal-extract`, under RLIMIT_AS,
// RLIMIT_CPU and RLIMIT_FSIZE; the child writes the binary into the staging directory and prints
// one line with the result. Whatever it allocated goes when it exits.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/time.hpp"
#include "loop/step.hpp"
#include "stage/extract.hpp"

namespace myr::proc {
class Reaper;
}

namespace myr::stage {

// The hidden command's name (not in --help: only the updater starts it).
inline constexpr const char* kExtractCommand = "internal-extract";

// The child's kernel limits: address space (the largest decoder window, 64 MiB, libarchive's
// directory of at most 16 MiB, buffers, and the binary's own mappings, with room to spare), CPU
// seconds (4 GiB unpacked at zlib's speed takes well under a minute), and the wall-clock time PID 1
// waits before it kills the group.
inline constexpr uint64_t kChildAddressSpace = 512ull << 20;
inline constexpr unsigned kChildCpuSeconds = 600;
inline constexpr Duration kChildTimeout = std::chrono::minutes(15);

struct ChildRequest {
    std::string archive;      // the verified artifact
    std::string staging_dir;  // an empty directory of the store's staging, written by PID 1 only
    std::string binary;       // the member's name (collector.binary)
    ExtractLimits limits;
    std::string exe = "/proc/self/exe";  // what to start (tests start the built binary)
    Duration timeout = kChildTimeout;
};

// The child's argv for a request (exe, the command, then flags and paths).
std::vector<std::string> child_argv(const ChildRequest& r);

// The child's side, run by the hidden command with the arguments after its name: sets the
// limits, opens the archive and the directory (O_NOFOLLOW), extracts, prints the result line.
// Returns the exit code: 0 extracted, 1 refused or failed, 2 bad arguments.
int child_main(const std::vector<std::string>& args);

// The result line's parse; an error when the child printed none (killed, crashed) names its end
// and its last output. Exposed for the unit tests.
Result<Extracted> parse_child_output(const std::string& output, const std::string& how_ended);

// PID 1's side, on the loop: starts the child through the Reaper and calls `done` once with what
// it extracted or why not. Destroying the Step kills the child's process group (the Reaper still
// collects it) and no callback runs; what it had written stays in the staging directory for its
// owner to remove.
using ChildDone = std::function<void(Result<Extracted>)>;
[[nodiscard]] std::unique_ptr<loop::Step> extract_in_child(proc::Reaper& reaper,
                                                           loop::Scheduler& sched,
                                                           ChildRequest request, ChildDone done);

}  // namespace myr::stage
