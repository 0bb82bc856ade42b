// Kubernetes' termination message (docs/container-mode.md "Termination message"): the reason a
// fatal exit gives, written where the kubelet reads it, so `kubectl describe pod` shows why the
// updater ended after its container, and its log, are gone.
//
// The kubelet bind-mounts a regular file at the container's terminationMessagePath
// (/dev/termination-log by default) before the container starts. The file is written only when it
// is already there: a container without it (podman, docker, a local run) gets nothing created,
// least of all in /dev. Anything but a regular file at that path (a symlink, a FIFO, a device) is
// refused, so a planted entry can neither redirect the write nor block PID 1 on its way out.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace myr::runtime {

// The kubelet reads at most 4096 bytes of the message (and all messages of a pod together at most
// 12 KiB); a longer reason is cut at a UTF-8 boundary and ends in "…".
inline constexpr size_t kTerminationMessageMax = 4096;

// What written_termination_message() did: nothing to do (no path, no file) is not an error.
enum class TerminationWrite { written, no_path, no_file };

// Replaces the contents of the existing regular file `path` by `reason` (as valid UTF-8, at most
// kTerminationMessageMax bytes, with a final newline). "" or a missing file: nothing is written.
[[nodiscard]] Result<TerminationWrite> write_termination_message(const std::string& path,
                                                                 std::string_view reason);

// write_termination_message(), with the outcome logged: the caller is on its way out and has
// nothing else to do with a failure.
void leave_termination_message(const std::string& path, std::string_view reason);

}  // namespace myr::runtime
