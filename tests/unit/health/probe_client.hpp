// The probe server on a real loop and a raw-socket client, shared by the probe server tests (the
// ones in suite `timing` live in their own executable). The client runs on a thread of its own
// while the test's thread runs the loop.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <future>
#include <memory>
#include <string>

#include "harness.hpp"
#include "health/probe_server.hpp"
#include "health/probes.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"

namespace myr::health::test {

using namespace std::chrono_literals;

inline Probes fixed(bool live, bool ready) {
    return Probes{[live] {
                      return Answer{live, live ? "ok" : "stalled"};
                  },
                  [ready] {
                      return Answer{ready, ready ? "ready" : "child not running"};
                  },
                  {}};
}

// The server side writes with libuv, whose write(2) raises SIGPIPE when a client has gone (a
// case that closes a connection the server is still answering). PID 1 ignores SIGPIPE
// (runtime.cpp); so does every test process that includes this file, from before main().
inline const bool kSigpipeIgnored = [] {
    ::signal(SIGPIPE, SIG_IGN);
    return true;
}();

inline int connect_to(int port) {
    return myr::test::connect_loopback(port);
}

// MSG_NOSIGNAL: a connection the server has closed must fail a check, not kill the test with
// SIGPIPE.
inline void send_text(int fd, const std::string& text) {
    (void)!::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
}

// What a read up to the peer's close brought: the bytes, and whether the peer closed (EOF or
// reset) rather than the timeout passing.
struct Received {
    std::string bytes;
    bool closed = false;
};

// Reads until the peer closes, `until` appears, or the timeout passes.
inline Received receive(int fd, Duration timeout, const std::string& until = "") {
    Received r;
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        char buf[4096];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            r.closed = true;
            break;
        }
        r.bytes.append(buf, static_cast<size_t>(n));
        if (!until.empty() && r.bytes.find(until) != std::string::npos) break;
    }
    return r;
}

inline std::string read_some(int fd, Duration timeout, const std::string& until = "") {
    return receive(fd, timeout, until).bytes;
}

// Sends `request` on a new connection and returns everything the server sent before closing.
inline std::string round_trip(int port, const std::string& request) {
    int fd = connect_to(port);
    if (fd < 0) return "connect failed";
    send_text(fd, request);
    std::string r = read_some(fd, 5s);
    ::close(fd);
    return r;
}

// Runs `client` on a thread while the loop serves.
template <class F>
auto with_server(loop::Loop& loop, F client) {
    auto fut = std::async(std::launch::async, client);
    CHECK(loop.run_until(
        [&] { return fut.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }, 20s));
    return fut.get();
}

struct Fixture {
    loop::Loop loop;
    std::unique_ptr<loop::UvScheduler> sched = std::make_unique<loop::UvScheduler>(loop.get());
    std::unique_ptr<ProbeServer> server;
    explicit Fixture(Probes p, ServerLimits l = {}) {
        server = std::make_unique<ProbeServer>(loop, *sched, std::move(p), l);
        REQUIRE(server->listen(HostPort{"127.0.0.1", 0}));
        REQUIRE(server->port() > 0);
    }
    ~Fixture() {
        server.reset();
        sched.reset();
        CHECK(loop.close() == 0);
    }
};

}  // namespace myr::health::test
