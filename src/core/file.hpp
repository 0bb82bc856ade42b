// Opening and reading a file named by a path the operator gave (the configuration, an enrollment
// token, a trusted root, the image binary, a copy source), the one routine that does it safely:
// symlinks are followed (Kubernetes mounts secrets and config maps through them), and a FIFO or a
// device is never waited on. Files inside the collector volume go through fsx instead, which also
// refuses symlinks.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "core/fd.hpp"
#include "core/result.hpp"

namespace myr {

// "directory", "FIFO", "symlink", "regular file", … for messages.
const char* file_type_name(mode_t mode);

// Opens `path` read-only. The open uses O_NONBLOCK, so a FIFO swapped in after any earlier check
// cannot block it; then the opened fd must be a regular file ("not a regular file (FIFO)", EINVAL)
// and O_NONBLOCK is cleared again.
[[nodiscard]] Result<UniqueFd> open_regular(const std::string& path);
// The check after an open with O_NONBLOCK: a regular file, made blocking again.
[[nodiscard]] Status keep_if_regular(int fd);

// Reads `fd` from its offset to the end. More than `max_size` bytes is refused ("larger than N
// bytes", EFBIG) without reading them all, also when the file grows while it is read.
[[nodiscard]] Result<std::string> read_bounded(int fd, size_t max_size);

}  // namespace myr
