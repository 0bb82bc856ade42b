#include "service/sd_notify.hpp"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "harness.hpp"

using namespace myr;
using namespace myr::service;
using namespace std::chrono_literals;

namespace {

// A datagram socket bound where a service manager would listen; `name` starts with '@' for an
// abstract one.
struct Listener {
    int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    explicit Listener(const std::string& name) {
        sockaddr_un a;
        socklen_t len = unix_address(name, a);
        REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0);
    }
    ~Listener() { ::close(fd); }
    std::string receive() {
        char buf[256];
        ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
    }
};

}  // namespace

TEST_CASE("sd_notify: READY and STOPPING reach a path socket and an abstract one") {
    myr::test::TempDir dir;
    const std::string abstract = "@myr-notify-test-" + std::to_string(::getpid());
    for (const std::string& name : {dir / "notify", abstract}) {
        CAPTURE(name);
        Listener l(name);
        auto n = Notifier::from(name, "", "", ::getpid());
        REQUIRE(n.ok());
        CHECK(n->enabled());
        REQUIRE(n->send("READY=1").ok());
        CHECK(l.receive() == "READY=1");
        REQUIRE(n->send("STOPPING=1").ok());
        CHECK(l.receive() == "STOPPING=1");
    }
}

TEST_CASE("sd_notify: without NOTIFY_SOCKET nothing is sent and nothing fails") {
    auto n = Notifier::from("", "", "", ::getpid());
    REQUIRE(n.ok());
    CHECK_FALSE(n->enabled());
    CHECK(n->send("READY=1").ok());
    CHECK_FALSE(n->watchdog_interval().has_value());
}

TEST_CASE("sd_notify: a manager that went away is an error naming the socket") {
    myr::test::TempDir dir;
    auto n = Notifier::from(dir / "gone", "", "", ::getpid());
    REQUIRE(n.ok());
    auto st = n->send("READY=1");
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message().find("sd_notify: send READY=1 to " + dir / "gone") == 0);
}

TEST_CASE("sd_notify: the watchdog is pinged at half its period, only by the process it names") {
    auto n = Notifier::from("/run/systemd/notify", "3000000", "", 42);
    REQUIRE(n.ok());
    CHECK(n->watchdog_interval() == 1500ms);
    CHECK(Notifier::from("/run/systemd/notify", "3000000", "42", 42)->watchdog_interval());
    CHECK_FALSE(Notifier::from("/run/systemd/notify", "3000000", "7", 42)->watchdog_interval());
    auto bad = Notifier::from("/run/systemd/notify", "0", "", 42);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message() == "WATCHDOG_USEC \"0\": not a positive number of microseconds");
    auto rel = Notifier::from("run/notify", "", "", 42);
    REQUIRE_FALSE(rel.ok());
    CHECK(rel.error().message().find("neither an absolute path nor an @abstract name") !=
          std::string::npos);
}
