// The copy core shared by the `copy`/`install-self` commands and the store (image binary →
// staging). Memory is flat: a fixed buffer whatever the file size.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/result.hpp"

namespace myr::fsx {

// Sees every chunk as it is written, in order (the store hashes with hash::Sha256 through it).
using ChunkObserver = std::function<void(const uint8_t* data, size_t len)>;

// Copies `src_fd` from its current offset to its end into `dst_fd` at its current offset. Without
// an observer the kernel copies (copy_file_range on Linux, falling back to read/write where it is
// not supported); with one, read/write through a fixed buffer. Errors name the step: "read:
// Input/output error", "write: No space left on device". Returns the byte count.
[[nodiscard]] Result<uint64_t> copy_fd(int src_fd, int dst_fd, const ChunkObserver& observer = {});

// The whole durable copy: a TempFile in `dst_dirfd`, copy_fd, then commit(mode) over `name`. On any
// failure the old `name` is untouched and no temp file remains. Refuses a `name` that exists and is
// not a regular file. Does not check that source and destination differ: the caller does.
[[nodiscard]] Result<uint64_t> copy_file_atomic(int src_fd, int dst_dirfd, const std::string& name,
                                                mode_t mode, const ChunkObserver& observer = {});

}  // namespace myr::fsx
