#include "core/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace myr {

const char* file_type_name(mode_t mode) {
    switch (mode & S_IFMT) {
        case S_IFLNK:
            return "symlink";
        case S_IFDIR:
            return "directory";
        case S_IFREG:
            return "regular file";
        case S_IFCHR:
            return "character device";
        case S_IFBLK:
            return "block device";
        case S_IFIFO:
            return "FIFO";
        case S_IFSOCK:
            return "socket";
        default:
            return "file of unknown type";
    }
}

Status keep_if_regular(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fail_errno("fstat");
    if (!S_ISREG(st.st_mode)) {
        return fail(
            Error(std::string("not a regular file (") + file_type_name(st.st_mode) + ")", EINVAL));
    }
    int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) return fail_errno("fcntl");
    return {};
}

Result<UniqueFd> open_regular(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    if (!fd) return fail_errno("open " + path);
    if (auto st = keep_if_regular(fd.get()); !st) return st.fail(path);
    return fd;
}

Result<std::string> read_bounded(int fd, size_t max_size) {
    const std::string too_large = "larger than " + std::to_string(max_size) + " bytes";
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fail_errno("fstat");
    if (static_cast<uint64_t>(st.st_size) > max_size) return fail(Error(too_large, EFBIG));
    std::string out;
    out.resize(static_cast<size_t>(st.st_size) + 1);
    size_t got = 0;
    // Until EOF, but never more than max_size + 1 bytes, in case the file grows meanwhile.
    for (;;) {
        if (got == out.size()) {
            if (out.size() > max_size) return fail(Error(too_large, EFBIG));
            out.resize(std::min(max_size + 1, out.size() * 2 + 4096));
        }
        ssize_t n = ::read(fd, out.data() + got, out.size() - got);
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail_errno("read");
        }
        if (n == 0) break;
        got += static_cast<size_t>(n);
    }
    if (got > max_size) return fail(Error(too_large, EFBIG));
    out.resize(got);
    return out;
}

}  // namespace myr
