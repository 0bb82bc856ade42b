#include "metrics/process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <string_view>

namespace myr::metrics {

namespace {

// A small /proc file into `buf` (NUL-terminated); the length read, or 0 when it could not be.
size_t read_small(const char* path, char* buf, size_t cap) {
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = ::read(fd, buf, cap - 1);
    ::close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    return static_cast<size_t>(n);
}

std::optional<double> number(std::string_view s) {
    unsigned long long v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc()) return std::nullopt;
    return static_cast<double>(v);
}

// Field `n` (1-based, as proc(5) numbers them) of /proc/self/stat. The command name (field 2) may
// hold spaces and parentheses, so counting starts after its last ')'.
std::optional<double> stat_field(std::string_view stat, int n) {
    size_t pos = stat.rfind(')');
    if (pos == std::string_view::npos) return std::nullopt;
    std::string_view rest = stat.substr(pos + 1);
    int field = 2;
    size_t i = 0;
    while (i < rest.size()) {
        while (i < rest.size() && rest[i] == ' ') ++i;
        size_t end = rest.find(' ', i);
        if (end == std::string_view::npos) end = rest.size();
        if (++field == n) return number(rest.substr(i, end - i));
        i = end;
    }
    return std::nullopt;
}

std::optional<double> open_fds() {
    DIR* d = ::opendir("/proc/self/fd");
    if (d == nullptr) return std::nullopt;
    double n = 0;
    while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
    return n - 1;  // the directory stream's own descriptor
}

}  // namespace

ProcessReader::ProcessReader() {
    long tck = ::sysconf(_SC_CLK_TCK);
    if (tck > 0) ticks_per_second_ = static_cast<double>(tck);
    long page = ::sysconf(_SC_PAGESIZE);
    if (page > 0) page_size_ = static_cast<double>(page);
    char buf[4096];
    size_t n = read_small("/proc/stat", buf, sizeof buf);
    std::string_view s(buf, n);
    size_t at = s.find("\nbtime ");
    if (at != std::string_view::npos) {
        std::string_view rest = s.substr(at + 7);
        boot_time_ = number(rest.substr(0, rest.find('\n')));
    }
}

ProcessStats ProcessReader::read() const {
    ProcessStats p;
    char buf[1024];
    // The start time from /proc/self/stat; CPU and memory from getrusage and /proc/self/statm,
    // which give the same figures and, unlike stat's fields, are true under qemu-user too (it
    // rewrites the guest's /proc/self/stat with zeros there).
    size_t n = read_small("/proc/self/stat", buf, sizeof buf);
    if (n > 0) {
        auto start = stat_field(std::string_view(buf, n), 22);
        if (start && boot_time_) p.start_time_seconds = *boot_time_ + *start / ticks_per_second_;
    }
    rusage ru{};
    if (::getrusage(RUSAGE_SELF, &ru) == 0) {
        auto secs = [](const timeval& t) {
            return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6;
        };
        p.cpu_seconds = secs(ru.ru_utime) + secs(ru.ru_stime);
    }
    n = read_small("/proc/self/statm", buf, sizeof buf);
    if (n > 0) {
        // "size resident shared text lib data dt", in pages.
        // Read as integers: from_chars for double would link libstdc++'s 24 kB float parser.
        unsigned long long size = 0, resident = 0;
        const char* end = buf + n;
        auto r1 = std::from_chars(buf, end, size);
        if (r1.ec == std::errc() && r1.ptr < end && *r1.ptr == ' ') {
            auto r2 = std::from_chars(r1.ptr + 1, end, resident);
            if (r2.ec == std::errc()) {
                p.virtual_bytes = static_cast<double>(size) * page_size_;
                p.resident_bytes = static_cast<double>(resident) * page_size_;
            }
        }
    }
    p.open_fds = open_fds();
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
        p.max_fds = static_cast<double>(lim.rlim_cur);
    }
    return p;
}

std::optional<uint64_t> free_bytes(const char* path) {
    struct statvfs st {};
    if (::statvfs(path, &st) != 0) return std::nullopt;
    return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace myr::metrics
