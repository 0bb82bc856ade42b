#include "statedir/writer_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace myr::statedir {
namespace {

constexpr size_t kMaxHolder = 512;

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "an unknown host";
    return buf;
}

// What the holder wrote, on one line; its own words are the holder's, so they are shown, never
// parsed. Empty while the holder is between taking the lock and writing its line.
std::string holder_of(int fd) {
    std::string text(kMaxHolder, '\0');
    const ssize_t n = ::pread(fd, text.data(), text.size(), 0);
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    for (char& c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text.empty() ? "its holder is still starting" : text;
}

}  // namespace

Result<WriterLock> WriterLock::take(const StateDir& dir, const std::string& since) {
    const std::string path = dir.path_of(entry::lock);
    const int fd = ::openat(dir.fd(), entry::lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return fail_errno("state directory lock " + path);
    WriterLock l;
    l.fd_ = UniqueFd(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fail_errno("state directory lock " + path);
    if (!S_ISREG(st.st_mode)) {
        return fail(Errc::invalid, "state directory lock " + path + ": not a regular file");
    }
    int rc;
    do {
        rc = ::flock(fd, LOCK_EX | LOCK_NB);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0 && errno == EWOULDBLOCK) {
        return fail(Errc::invalid,
                    "state directory " + dir.path() + " is in use by another updater (" +
                        holder_of(fd) +
                        "): one volume takes one updater; stop the other one first (" + path +
                        " is locked while its holder runs)");
    }
    if (rc != 0) return fail_errno("state directory lock " + path + ": flock");
    const std::string line =
        "pid " + std::to_string(::getpid()) + " on " + host_name() + " since " + since + "\n";
    if (::ftruncate(fd, 0) != 0) return fail_errno("state directory lock " + path + ": truncate");
    if (::pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
        return fail_errno("state directory lock " + path + ": write");
    }
    return l;
}

}  // namespace myr::statedir
