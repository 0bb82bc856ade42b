#include "health/probe_server.hpp"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "harness.hpp"
#include "health/probes.hpp"
#include "loop/fake_scheduler.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"

using namespace myr;
using namespace myr::health;
using namespace std::chrono_literals;

namespace {

Probes fixed(bool live, bool ready) {
    return Probes{[live] { return Answer{live, live ? "ok" : "stalled"}; },
                  [ready] { return Answer{ready, ready ? "ready" : "child not running"}; }};
}

int connect_to(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Reads until the peer closes, `until` appears, or the timeout passes.
std::string read_some(int fd, Duration timeout, const std::string& until = "") {
    std::string out;
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        char buf[4096];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
        if (!until.empty() && out.find(until) != std::string::npos) break;
    }
    return out;
}

// Sends `request` on a new connection and returns everything the server sent before closing.
std::string round_trip(int port, const std::string& request) {
    int fd = connect_to(port);
    if (fd < 0) return "connect failed";
    (void)!::write(fd, request.data(), request.size());
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

}  // namespace

TEST_CASE("probe routing: paths, methods and answers") {
    auto p = fixed(true, false);
    CHECK(route("GET", "/healthz", p).status == 200);
    CHECK(route("GET", "/readyz", p).status == 503);
    CHECK(route("GET", "/readyz", p).body == "child not running");
    CHECK(route("HEAD", "/healthz?verbose=1", p).status == 200);
    CHECK(route("GET", "/", p).status == 404);
    CHECK(route("GET", "/healthz/", p).status == 404);
    auto r = route("POST", "/healthz", p);
    CHECK(r.status == 405);
    CHECK(r.allow_header);
    CHECK(render(r, false, false).find("Allow: GET, HEAD\r\n") != std::string::npos);
    CHECK(render(route("HEAD", "/healthz", p), true, true).find("\r\n\r\n") ==
          render(route("HEAD", "/healthz", p), true, true).size() - 4);
}

TEST_CASE("probe server: answers 200 and 503 with a short text, 404 and 405") {
    Fixture f(fixed(true, false));
    int port = f.server->port();
    auto got = with_server(f.loop, [port] {
        return std::vector<std::string>{
            round_trip(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
            round_trip(port, "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
            round_trip(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
            round_trip(port, "DELETE /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")};
    });
    CHECK(got[0].rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    CHECK(got[0].find("\r\n\r\nok\n") != std::string::npos);
    CHECK(got[1].rfind("HTTP/1.1 503 ", 0) == 0);
    CHECK(got[1].find("child not running") != std::string::npos);
    CHECK(got[2].rfind("HTTP/1.1 404 ", 0) == 0);
    CHECK(got[3].rfind("HTTP/1.1 405 ", 0) == 0);
}

TEST_CASE("probe server: malformed, oversize, body and pipelined requests get 400/431 and close") {
    Fixture f(fixed(true, true));
    int port = f.server->port();
    auto got = with_server(f.loop, [port] {
        std::string big =
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(9000, 'a') + "\r\n\r\n";
        return std::vector<std::string>{
            round_trip(port, "this is not http\r\n\r\n"), round_trip(port, big),
            round_trip(port,
                       "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\n"
                       "Host: x\r\n\r\n"),
            round_trip(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")};
    });
    CHECK(got[0].rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(got[1].rfind("HTTP/1.1 431 ", 0) == 0);
    CHECK(got[2].rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(got[2].find("pipelining") != std::string::npos);
    CHECK(got[3].rfind("HTTP/1.1 400 ", 0) == 0);
    for (const auto& g : got) CHECK(g.find("Connection: close") != std::string::npos);
}

TEST_CASE("probe server: a client that half-closes after its request still gets the answer") {
    Fixture f(fixed(true, true));
    int port = f.server->port();
    auto got = with_server(f.loop, [port] {
        int fd = connect_to(port);
        std::string req = "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n";
        (void)!::write(fd, req.data(), req.size());
        ::shutdown(fd, SHUT_WR);
        std::string r = read_some(fd, 5s);
        ::close(fd);
        return r;
    });
    CHECK(got.find("200 OK") != std::string::npos);
    CHECK(got.find("ready\n") != std::string::npos);
}

TEST_CASE("probe server: keep-alive serves one request after the other on one connection") {
    Fixture f(fixed(true, true));
    int port = f.server->port();
    auto got = with_server(f.loop, [port] {
        int fd = connect_to(port);
        std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
        (void)!::write(fd, req.data(), req.size());
        std::string a = read_some(fd, 5s, "ok\n");
        req = "GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n";
        (void)!::write(fd, req.data(), req.size());
        std::string b = read_some(fd, 5s, "ready\n");
        ::close(fd);
        return std::vector<std::string>{a, b};
    });
    CHECK(got[0].find("200 OK") != std::string::npos);
    CHECK(got[0].find("Connection: keep-alive") != std::string::npos);
    CHECK(got[1].find("200 OK") != std::string::npos);
    CHECK(got[1].find("ready\n") != std::string::npos);
}

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
        auto fast_ms = std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - t0);
        std::string slow_end = read_some(slow, 5s);  // "" once the server closes it
        auto slow_ms = std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - t0);
        ::close(slow);
        return std::tuple{other, fast_ms, slow_end, slow_ms};
    });
    auto [other, fast_ms, slow_end, slow_ms] = got;
    CHECK(other.find("200 OK") != std::string::npos);
    CHECK(fast_ms < Duration(500));
    CHECK(slow_end.empty());
    CHECK(slow_ms >= Duration(400));
    CHECK(slow_ms < Duration(4000));
}

TEST_CASE("probe server: at the cap the longest-idle connection makes room for a new client") {
    ServerLimits l;
    l.max_connections = 4;
    l.request_timeout = 60s;  // no idle connection ends on its own during the test
    Fixture f(fixed(true, true), l);
    int port = f.server->port();
    auto got = with_server(f.loop, [port] {
        // Four keep-alive clients, each answered once and now idle, oldest first: once they
        // locked every other client out (the 65th was accepted and closed at once).
        const std::string req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
        std::vector<int> held;
        std::vector<std::string> first;
        for (int i = 0; i < 4; ++i) {
            held.push_back(connect_to(port));
            (void)!::write(held.back(), req.data(), req.size());
            first.push_back(read_some(held.back(), 5s, "ok\n"));
        }
        std::string fresh = round_trip(port, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
        // The oldest idle one was closed (read sees EOF); the others still answer.
        pollfd p{held[0], POLLIN, 0};
        char c;
        const bool oldest_closed = ::poll(&p, 1, 5000) == 1 && ::read(held[0], &c, 1) == 0;
        (void)!::write(held[1], req.data(), req.size());
        std::string second = read_some(held[1], 5s, "ok\n");
        for (int fd : held) ::close(fd);
        return std::tuple{first, fresh, oldest_closed, second};
    });
    auto [first, fresh, oldest_closed, second] = got;
    for (const auto& r : first) CHECK(r.find("200 OK") != std::string::npos);
    CHECK(fresh.find("200 OK") != std::string::npos);
    CHECK(oldest_closed);
    CHECK(second.find("200 OK") != std::string::npos);
}

TEST_CASE("probe server: listens on IPv6 loopback") {
    loop::Loop loop;
    bool skipped = false;
    std::string why;
    {
        loop::UvScheduler sched(loop.get());
        ProbeServer s(loop, sched, fixed(true, true));
        auto st = s.listen(HostPort{"::1", 0});
        if (!st) {
            skipped = true;
            why = st.error().message();
        } else {
            CHECK(s.port() > 0);
        }
    }
    CHECK(loop.close() == 0);
    if (skipped) MYR_SKIP("IPv6 loopback not available here: " << why);
}

TEST_CASE("probe server: a host name is resolved when listening; localhost is 127.0.0.1") {
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        ProbeServer s(loop, sched, fixed(true, true));
        REQUIRE(s.listen(HostPort{"localhost", 0}));
        CHECK(s.port() > 0);
        int fd = connect_to(s.port());  // 127.0.0.1
        CHECK(fd >= 0);
        if (fd >= 0) ::close(fd);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("probe server: refuses a bad listen address, naming it") {
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        ProbeServer bad(loop, sched, fixed(true, true));
        auto b = bad.listen(HostPort{"999.1.1.1", 1});
        CHECK_FALSE(b.ok());
        CHECK(b.error().message().find("999.1.1.1") != std::string::npos);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("heartbeat: green while fresh, 503 text once older than 30s") {
    loop::FakeScheduler sched;
    // A period longer than the test: nothing beats, as when the loop is stuck.
    Heartbeat hb(sched, 1h);
    CHECK(hb.answer().ok);
    sched.advance(29s);
    CHECK(hb.answer().ok);
    sched.advance(2s);
    auto a = hb.answer();
    CHECK_FALSE(a.ok);
    CHECK(a.text.find("31s") != std::string::npos);
    hb.beat();
    CHECK(hb.answer().ok);
}

TEST_CASE("heartbeat: a loop that keeps turning keeps it green") {
    loop::FakeScheduler sched;
    Heartbeat hb(sched);
    sched.advance(10min);
    CHECK(hb.answer().ok);
    CHECK(hb.age() < 1s + Duration(1));
}

TEST_CASE("readiness: a swap in progress or a stopped child is not ready") {
    bool running = true;
    Readiness r([&] { return running; }, [] { return std::string("child running (pid 7)"); });
    CHECK(r.answer().ok);
    r.set_swap_in_progress(true);
    CHECK_FALSE(r.answer().ok);
    CHECK(r.answer().text == "swap in progress");
    r.set_swap_in_progress(false);
    running = false;
    CHECK_FALSE(r.answer().ok);
}
