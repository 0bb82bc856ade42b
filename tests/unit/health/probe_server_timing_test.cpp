// The probe server's timeouts, measured: suite `timing`, which scripts/test.sh runs with nothing
// else beside it, so that a loaded machine does not stretch the durations asserted here.
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <tuple>

#include "health/probe_server.hpp"
#include "probe_client.hpp"

using namespace myr;
using namespace myr::health;
using namespace myr::health::test;
using namespace std::chrono_literals;

namespace {

// libuv's loop clock counts whole milliseconds (and may read a coarse clock), so a timer can
// fire up to about 2 ms before its duration has passed on std::chrono::steady_clock.
constexpr Duration kLoopClockSlack{5};

Duration since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - t0);
}

}  // namespace

TEST_CASE("probe server: a slow client is cut at the request timeout and does not block others") {
    ServerLimits l;
    l.request_timeout = Duration(500);
    Fixture f(fixed(true, true), l);
    int port = f.server->port();
    auto got = with_server(f.loop, [port] {
        int slow = connect_to(port);
        (void)!::write(slow, "GET /hea", 8);
        auto t0 = std::chrono::steady_clock::now();
        std::string other = round_trip(port, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
        auto fast_ms = since(t0);
        Received slow_end = receive(slow, 5s);
        auto slow_ms = since(t0);
        ::close(slow);
        return std::tuple{other, fast_ms, slow_end, slow_ms};
    });
    auto [other, fast_ms, slow_end, slow_ms] = got;
    CHECK(other.find("200 OK") != std::string::npos);
    CHECK(fast_ms < Duration(500));
    CHECK(slow_end.closed);  // by the server, not the end of our read's 5 s
    CHECK(slow_end.bytes.empty());
    CHECK(slow_ms >= Duration(400));
    CHECK(slow_ms < Duration(4000));
}

TEST_CASE("probe server: an idle keep-alive connection is closed 5 s after its last answer") {
    const Duration timeout = ServerLimits{}.request_timeout;
    REQUIRE(timeout == Duration(5000));  // the keep-alive timeout probe_server.hpp documents
    // A second, on a machine that runs this suite alone.
    const Duration margin{1000};
    Fixture f(fixed(true, true));  // the limits as they ship
    int port = f.server->port();
    struct Seen {
        std::string first, second;
        Received end;
        Duration idle{0};
    };
    auto seen = with_server(f.loop, [port] {
        Seen s;
        int fd = connect_to(port);
        send_text(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
        s.first = read_some(fd, 5s, "ok\n");
        // Idle for less than the timeout: the connection must still serve. This wait is what is
        // tested, not a wait for something to happen. It also puts the second answer 3 s after
        // the connection opened, so a timeout counted from the accept would show.
        std::this_thread::sleep_for(3s);
        auto sent = std::chrono::steady_clock::now();
        send_text(fd, "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
        s.second = read_some(fd, 5s, "ready\n");
        s.end = receive(fd, 20s);
        s.idle = since(sent);
        ::close(fd);
        return s;
    });
    CHECK(seen.first.find("200 OK") != std::string::npos);
    CHECK(seen.first.find("Connection: keep-alive") != std::string::npos);
    CHECK(seen.second.find("200 OK") != std::string::npos);
    CHECK(seen.second.find("Connection: keep-alive") != std::string::npos);
    CHECK(seen.end.closed);
    CHECK(seen.end.bytes.empty());
    MESSAGE("keep-alive connection closed " << seen.idle.count() << " ms after its last request");
    CHECK(seen.idle >= timeout - kLoopClockSlack);
    CHECK(seen.idle <= timeout + margin);
}
