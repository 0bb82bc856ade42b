#include "fsx/copy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "core/fault.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"

namespace myr::fsx {

namespace {

// 128 KiB: large enough that syscall overhead is negligible, small enough to keep RSS flat.
constexpr size_t kBufferSize = 128 * 1024;
// Bytes per copy_file_range call: one fault-injection pass per chunk, and a bounded time in the
// kernel per call.
constexpr size_t kKernelChunk = 8 * 1024 * 1024;

Result<uint64_t> copy_read_write(int src_fd, int dst_fd, const ChunkObserver& observer,
                                 uint64_t already) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[kBufferSize]);
    uint64_t total = already;
    for (;;) {
        ssize_t n = ::read(src_fd, buf.get(), kBufferSize);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail_errno("read");
        }
        if (n == 0) return total;
        MYR_TRY(fault::point("fsx.write"), "write");
        size_t off = 0;
        while (off < static_cast<size_t>(n)) {
            ssize_t w = ::write(dst_fd, buf.get() + off, static_cast<size_t>(n) - off);
            if (w < 0) {
                if (errno == EINTR) continue;
                return fail_errno("write");
            }
            off += static_cast<size_t>(w);
        }
        if (observer) observer(buf.get(), static_cast<size_t>(n));
        total += static_cast<uint64_t>(n);
    }
}

#ifdef __linux__
// In-kernel copy: no data through user space. Returns nullopt-like "unsupported" through `fallback`
// when the file systems cannot do it, before anything was copied.
Result<uint64_t> copy_kernel(int src_fd, int dst_fd, bool* fallback) {
    uint64_t total = 0;
    for (;;) {
        MYR_TRY(fault::point("fsx.write"), "write");
        ssize_t n = ::copy_file_range(src_fd, nullptr, dst_fd, nullptr, kKernelChunk, 0);
        if (n < 0) {
            int err = errno;
            if (err == EINTR) continue;
            if (total == 0 &&
                (err == EXDEV || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP ||
                 err == ENOTSUP || err == EPERM || err == EBADF)) {
                *fallback = true;
                return total;
            }
            return fail_errno("write", err);
        }
        if (n == 0) {
            // Some pseudo file systems report 0 at once although the file has data: read instead.
            if (total == 0) *fallback = true;
            return total;
        }
        total += static_cast<uint64_t>(n);
    }
}
#endif

}  // namespace

Result<uint64_t> copy_fd(int src_fd, int dst_fd, const ChunkObserver& observer) {
#ifdef __linux__
    if (!observer) {
        bool fallback = false;
        auto copied = copy_kernel(src_fd, dst_fd, &fallback);
        if (!copied || !fallback) return copied;
    }
#endif
    return copy_read_write(src_fd, dst_fd, observer, 0);
}

Result<uint64_t> copy_file_atomic(int src_fd, int dst_dirfd, const std::string& name, mode_t mode,
                                  const ChunkObserver& observer) {
    // Refuse a planted symlink or directory before spending time on the copy (commit checks again).
    auto st = stat_at(dst_dirfd, name);
    if (!st) return st.fail();
    if (st->has_value() && !S_ISREG((*st)->st_mode)) {
        return fail(
            Error(std::string("refusing to replace a ") + file_type_name((*st)->st_mode), EEXIST));
    }
    auto tmp = TempFile::create(dst_dirfd, name);
    if (!tmp) return tmp.fail();
    auto copied = copy_fd(src_fd, tmp->fd(), observer);
    if (!copied) return copied.fail();
    Status committed = tmp->commit(mode);
    if (!committed) return committed.fail();
    return *copied;
}

}  // namespace myr::fsx
