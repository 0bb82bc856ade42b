#include "service/sd_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>

namespace myr::service {

namespace {

std::string_view env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

template <class T>
bool parse_number(std::string_view s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

unsigned unix_address(const std::string& name, sockaddr_un& out) {
    out = sockaddr_un{};
    out.sun_family = AF_UNIX;
    std::memcpy(out.sun_path, name.data(), std::min(name.size(), sizeof(out.sun_path) - 1));
    if (!name.empty() && name[0] == '@') out.sun_path[0] = '\0';
    return static_cast<unsigned>(offsetof(sockaddr_un, sun_path) + name.size() +
                                 (!name.empty() && name[0] == '@' ? 0 : 1));
}

Result<Notifier> Notifier::from(std::string_view notify_socket, std::string_view watchdog_usec,
                                std::string_view watchdog_pid, pid_t self) {
    Notifier n;
    if (!notify_socket.empty()) {
        if (notify_socket[0] != '/' && notify_socket[0] != '@') {
            return fail(Errc::invalid, "NOTIFY_SOCKET \"" + std::string(notify_socket) +
                                           "\": neither an absolute path nor an @abstract name");
        }
        if (notify_socket.size() >= sizeof(sockaddr_un::sun_path)) {
            return fail(Errc::invalid, "NOTIFY_SOCKET: longer than a socket address can be (" +
                                           std::to_string(notify_socket.size()) + " bytes)");
        }
        n.socket_ = notify_socket;
    }
    if (!watchdog_usec.empty()) {
        uint64_t usec = 0;
        if (!parse_number(watchdog_usec, usec) || usec == 0) {
            return fail(Errc::invalid, "WATCHDOG_USEC \"" + std::string(watchdog_usec) +
                                           "\": not a positive number of microseconds");
        }
        // $WATCHDOG_PID names the process the watchdog is for: a child that inherited the
        // environment must not answer for its parent.
        pid_t pid = 0;
        bool mine = watchdog_pid.empty() || (parse_number(watchdog_pid, pid) && pid == self);
        if (mine) {
            auto half = std::chrono::duration_cast<Duration>(std::chrono::microseconds(usec / 2));
            n.watchdog_ = std::max(half, Duration(1));
        }
    }
    return n;
}

Result<Notifier> Notifier::from_env() {
    return from(env("NOTIFY_SOCKET"), env("WATCHDOG_USEC"), env("WATCHDOG_PID"), ::getpid());
}

Status Notifier::send(std::string_view message) const {
    if (!enabled()) return {};
    sockaddr_un addr;
    socklen_t len = unix_address(socket_, addr);
    int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail_errno("sd_notify: socket");
    ssize_t n = ::sendto(fd, message.data(), message.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                         reinterpret_cast<const sockaddr*>(&addr), len);
    int err = errno;
    ::close(fd);
    if (n < 0) {
        return fail_errno("sd_notify: send " + std::string(message) + " to " + socket_, err);
    }
    return {};
}

}  // namespace myr::service
