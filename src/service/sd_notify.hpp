// The updater as a systemd unit itself (host mode, `Type=notify`): the sd_notify protocol without
// libsystemd (there is no static libsystemd.a in Debian): one datagram of `KEY=value` lines to
// the socket named by $NOTIFY_SOCKET, a path or, with a leading '@', an abstract name. READY=1
// once the updater runs, STOPPING=1 when its shutdown begins, WATCHDOG=1 every half of
// $WATCHDOG_USEC when the unit sets WatchdogSec=.
#pragma once

#include <sys/types.h>
#include <sys/un.h>

#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/time.hpp"

namespace myr::service {

// Fills `out` with the address of `name` (a path, or '@' first for an abstract name) and returns
// its length: an abstract name's is exact (no terminating NUL), a path's includes the NUL.
// `name` must fit (Notifier::from checks it).
unsigned unix_address(const std::string& name, sockaddr_un& out);

class Notifier {
  public:
    // What the service manager handed over in the environment (`notify_socket` = $NOTIFY_SOCKET,
    // `watchdog_usec` and `watchdog_pid` = $WATCHDOG_USEC and $WATCHDOG_PID, each "" when unset).
    // Fails on a value that cannot be one (a relative path, a socket name too long, a watchdog
    // period that is not a positive number).
    [[nodiscard]] static Result<Notifier> from(std::string_view notify_socket,
                                               std::string_view watchdog_usec,
                                               std::string_view watchdog_pid, pid_t self);
    // The same from this process's environment.
    [[nodiscard]] static Result<Notifier> from_env();

    // False when no service manager listens (not started by systemd, or not Type=notify): send()
    // then does nothing.
    bool enabled() const { return !socket_.empty(); }
    // Sends one message ("READY=1", "STOPPING=1", "WATCHDOG=1", "STATUS=..."), without blocking:
    // a full socket buffer is an error, not a stall of the loop.
    [[nodiscard]] Status send(std::string_view message) const;
    // How often to send WATCHDOG=1 (half the unit's WatchdogSec, as sd_watchdog_enabled advises);
    // none when the unit has no watchdog or it is meant for another process.
    std::optional<Duration> watchdog_interval() const { return watchdog_; }

  private:
    std::string socket_;  // as given; '@' first for an abstract name
    std::optional<Duration> watchdog_;
};

}  // namespace myr::service
