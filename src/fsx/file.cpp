#include "fsx/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>

#include "core/fault.hpp"
#include "fsx/dir.hpp"
#include "fsx/names.hpp"

namespace myr::fsx {

namespace {

// The entry `name` may be replaced only when it is absent or a regular file: a planted symlink,
// directory or device must not be swapped out from under its owner or used to redirect the write.
Status check_replaceable(int dirfd, const std::string& name) {
    auto st = stat_at(dirfd, name);
    if (!st) return st.fail();
    if (st->has_value() && !S_ISREG((*st)->st_mode)) {
        return fail(Error(std::string("refusing to replace a ") + file_type_name((*st)->st_mode),
                          S_ISDIR((*st)->st_mode) ? EISDIR : EEXIST));
    }
    return {};
}

}  // namespace

TempFile::TempFile(int dirfd, std::string final_name, std::string name, UniqueFd fd)
    : dirfd_(dirfd),
      final_name_(std::move(final_name)),
      name_(std::move(name)),
      fd_(std::move(fd)) {}

TempFile::TempFile(TempFile&& o) noexcept
    : dirfd_(o.dirfd_),
      final_name_(std::move(o.final_name_)),
      name_(std::move(o.name_)),
      fd_(std::move(o.fd_)),
      done_(std::exchange(o.done_, true)) {}

TempFile::~TempFile() {
    discard();
}

void TempFile::discard() {
    if (done_) return;
    done_ = true;
    fd_.reset();
    ::unlinkat(dirfd_, name_.c_str(), 0);
}

Result<TempFile> TempFile::create(int dirfd, const std::string& final_name) {
    MYR_TRY(detail::check_name(final_name), "create temporary file");
    MYR_TRY(fault::point("fsx.create"), "create temporary file");
    for (int attempt = 0;; ++attempt) {
        std::string name = detail::temp_name_for(final_name);
        int fd = ::openat(dirfd, name.c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd >= 0) return TempFile(dirfd, final_name, std::move(name), UniqueFd(fd));
        if (errno != EEXIST || attempt >= 100) return fail_errno("create temporary file");
    }
}

Status TempFile::write(std::string_view data) {
    if (done_) return fail("write: temporary file already closed");
    MYR_TRY(fault::point("fsx.write"), "write");
    while (!data.empty()) {
        ssize_t n = ::write(fd_.get(), data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail_errno("write");
        }
        data.remove_prefix(static_cast<size_t>(n));
    }
    return {};
}

Status TempFile::commit(mode_t mode) {
    if (done_) return fail("commit: temporary file already closed");
    Status s = fault::point("fsx.fsync");
    if (s && ::fsync(fd_.get()) != 0) s = fail_errno("fsync");
    if (s) s = fault::point("fsx.fchmod");
    if (s && ::fchmod(fd_.get(), mode) != 0) s = fail_errno("chmod");
    // Checked again right before the rename: the entry may have changed while the data was copied.
    if (s) s = check_replaceable(dirfd_, final_name_);
    if (s) s = fault::point("fsx.rename");
    if (s && ::renameat(dirfd_, name_.c_str(), dirfd_, final_name_.c_str()) != 0) {
        s = fail_errno("rename");
    }
    if (!s) {
        discard();
        return s;
    }
    done_ = true;
    fd_.reset();
    // The new file is in place; a failure here only means its entry may not survive a power loss.
    return fsync_dir(dirfd_);
}

Status write_file_atomic(int dirfd, const std::string& name, std::string_view data, mode_t mode) {
    MYR_TRY(detail::check_name(name), "write file");
    MYR_TRY(check_replaceable(dirfd, name), "write file");
    auto tmp = TempFile::create(dirfd, name);
    if (!tmp) return tmp.fail();
    Status written = tmp->write(data);
    if (!written) return written;
    return tmp->commit(mode);
}

Result<UniqueFd> open_regular_at(int dirfd, const std::string& name) {
    MYR_TRY(detail::check_name(name), "open");
    // Type first, so a device or FIFO is never opened at all (opening can have side effects).
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return fail_errno("open");
    if (S_ISLNK(st.st_mode)) return fail(Error("refusing symlink", ELOOP));
    if (!S_ISREG(st.st_mode)) {
        return fail(
            Error(std::string("not a regular file (") + file_type_name(st.st_mode) + ")", EINVAL));
    }
    // O_NONBLOCK: should a FIFO be swapped in after the check, the open does not wait for a writer.
    UniqueFd fd(
        ::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (!fd) return fail_errno("open");
    if (auto st = keep_if_regular(fd.get()); !st) return st.fail();
    return fd;
}

Result<std::string> read_file_at(int dirfd, const std::string& name, size_t max_size) {
    auto fd = open_regular_at(dirfd, name);
    if (!fd) return fd.fail();
    return read_bounded(fd->get(), max_size);
}

Result<Space> space_of(int dirfd) {
    struct statvfs vfs {};
    if (::fstatvfs(dirfd, &vfs) != 0) return fail_errno("statvfs");
    struct stat st {};
    if (::fstat(dirfd, &st) != 0) return fail_errno("stat");
    return Space{static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize,
                 static_cast<uint64_t>(st.st_dev)};
}

}  // namespace myr::fsx
