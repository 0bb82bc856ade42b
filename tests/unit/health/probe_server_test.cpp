// The probe server's behaviour that does not depend on how fast the machine is. Cases that assert
// durations are in probe_server_timing_test.cpp (suite `timing`).
#include "health/probe_server.hpp"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "health/probes.hpp"
#include "loop/fake_scheduler.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"
#include "probe_client.hpp"

using namespace myr;
using namespace myr::health;
using namespace myr::health::test;
using namespace std::chrono_literals;

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

TEST_CASE("probe routing: /metrics answers the text as is with its content type; off is 404") {
    auto p = fixed(true, true);
    CHECK(route("GET", "/metrics", p).status == 404);
    CHECK(route("GET", "/metrics", p).body.find("container.metrics") != std::string::npos);
    std::string text = "# TYPE a counter\na 1\n";
    p.metrics = [&text]() -> const std::string& { return text; };
    auto r = route("GET", "/metrics?x=1", p);
    CHECK(r.status == 200);
    CHECK(r.metrics);
    std::string bytes = render(r, false, false);
    CHECK(bytes.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n") !=
          std::string::npos);
    CHECK(bytes.find("Content-Length: " + std::to_string(text.size()) + "\r\n") !=
          std::string::npos);
    CHECK(bytes.substr(bytes.size() - text.size()) == text);
    std::string head = render(route("HEAD", "/metrics", p), true, true);
    CHECK(head.find("Content-Length: " + std::to_string(text.size()) + "\r\n") !=
          std::string::npos);
    CHECK(head.substr(head.size() - 4) == "\r\n\r\n");
    CHECK(route("POST", "/metrics", p).status == 405);
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

TEST_CASE("probe server: malformed, oversize and body requests get 400/431 and close") {
    Fixture f(fixed(true, true));
    int port = f.server->port();
    auto got = with_server(f.loop, [port] {
        std::string big =
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + std::string(9000, 'a') + "\r\n\r\n";
        return std::vector<std::string>{
            round_trip(port, "this is not http\r\n\r\n"), round_trip(port, big),
            round_trip(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")};
    });
    CHECK(got[0].rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(got[1].rfind("HTTP/1.1 431 ", 0) == 0);
    CHECK(got[2].rfind("HTTP/1.1 400 ", 0) == 0);
    for (const auto& g : got) CHECK(g.find("Connection: close") != std::string::npos);
}

TEST_CASE("probe server: pipelined requests wait for the answer before them, then are answered") {
    Fixture f(fixed(true, false));
    int port = f.server->port();
    auto got = with_server(f.loop, [port] {
        return round_trip(port,
                          "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\n"
                          "Host: x\r\n\r\nHEAD /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
    });
    const size_t first = got.find("HTTP/1.1 200 OK");
    const size_t second = got.find("HTTP/1.1 503 ");
    const size_t third = got.find("HTTP/1.1 200 OK", first + 1);
    CHECK(first == 0);
    CHECK(second != std::string::npos);
    CHECK(third != std::string::npos);
    CHECK(first < second);
    CHECK(second < third);
    CHECK(got.find("child not running\n") != std::string::npos);
    // HEAD: the last answer ends with its head.
    CHECK(got.substr(got.size() - 4) == "\r\n\r\n");
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

TEST_CASE("probe server: at the default cap of 64 the longest-idle connection makes room") {
    ServerLimits l;
    REQUIRE(l.max_connections == 64);  // the cap probe_server.hpp documents, tested as it ships
    // No held connection may time out meanwhile: then a close can come from the cap alone.
    l.request_timeout = 60s;
    Fixture f(fixed(true, true), l);
    int port = f.server->port();
    const std::string keep_alive = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    struct Seen {
        int held_answered = 0;
        std::string fresh;
        bool oldest_closed = false;
        bool newest_still_served = false;
    };
    auto seen = with_server(f.loop, [&] {
        Seen s;
        // 64 keep-alive clients, each answered once and then idle, oldest first: once they kept
        // every other client (the kubelet) out, the 65th accepted and closed at once.
        std::vector<int> held;
        for (int i = 0; i < 64; ++i) {
            int fd = connect_to(port);
            send_text(fd, keep_alive);
            if (read_some(fd, 5s, "ok\n").find("200 OK") != std::string::npos) ++s.held_answered;
            held.push_back(fd);
        }
        s.fresh = round_trip(port, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
        // The oldest idle connection made room: the server closed it (a read sees EOF).
        Received oldest = receive(held.front(), 5s);
        s.oldest_closed = oldest.closed && oldest.bytes.empty();
        send_text(held.back(), keep_alive);
        s.newest_still_served =
            read_some(held.back(), 5s, "ok\n").find("200 OK") != std::string::npos;
        for (int fd : held) ::close(fd);
        return s;
    });
    CHECK(seen.held_answered == 64);
    CHECK(seen.fresh.find("200 OK") != std::string::npos);
    CHECK(seen.oldest_closed);
    CHECK(seen.newest_still_served);
}

namespace {

// Clients with a small receive buffer that send `request` over and over and never read, on
// `clients` connections for `for_how_long`; a connection the server closes is opened again.
struct Flooded {
    size_t peak_held = 0;    // the server's held_bytes(), sampled on the loop
    size_t peak_unsent = 0;  // the part of it in libuv's write queues
    int reconnects = 0;
    long sent = 0;
};

Flooded flood(Fixture& f, int clients, const std::string& request, Duration for_how_long) {
    const int port = f.server->port();
    Flooded out;
    auto reconnects = std::async(std::launch::async, [&] {
        std::vector<int> fds(static_cast<size_t>(clients), -1);
        int again = 0;
        auto end = std::chrono::steady_clock::now() + for_how_long;
        while (std::chrono::steady_clock::now() < end) {
            for (int& fd : fds) {
                if (fd < 0) fd = myr::test::connect_loopback(port, 4096);
                if (fd < 0) continue;
                ssize_t n = ::send(fd, request.data(), request.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n > 0) ++out.sent;
                if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                    ::close(fd);
                    fd = -1;
                    ++again;
                }
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        for (int fd : fds) ::close(fd);
        return again;
    });
    // The loop serves; between its turns the server's accounting is sampled.
    CHECK(f.loop.run_until(
        [&] {
            out.peak_held = std::max(out.peak_held, f.server->held_bytes());
            out.peak_unsent = std::max(out.peak_unsent, f.server->unsent_bytes());
            return reconnects.wait_for(0s) == std::future_status::ready;
        },
        for_how_long + 20s));
    out.reconnects = reconnects.get();
    return out;
}

Probes with_metrics(const std::string& text) {
    Probes p = fixed(true, true);
    p.metrics = [&text]() -> const std::string& { return text; };
    return p;
}

}  // namespace

TEST_CASE("probe server: clients that send and never read hold one answer each, within budget") {
    const std::string text(5000, '#');  // the size of a full metrics text
    ServerLimits l;
    l.request_timeout = 60s;  // nothing closes for slowness meanwhile: the bound holds by itself
    Fixture f(with_metrics(text), l);
    Flooded got = flood(f, 16, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 1500ms);
    MESSAGE("16 non-reading clients: " << got.sent << " requests taken, peak held " << got.peak_held
                                       << " B, unsent " << got.peak_unsent << " B");
    CHECK(got.sent > 16);
    CHECK(got.peak_held > 0);
    CHECK(got.peak_held <= 16 * connection_budget(l));
    CHECK(got.peak_held <= l.max_total_bytes);
    // At most one answer per connection is ever queued.
    CHECK(got.peak_unsent <= 16 * (text.size() + 200));
    CHECK(got.reconnects == 0);  // under the total, nobody is closed
    // Once they are gone, nothing is held.
    CHECK(f.loop.run_until([&] { return f.server->connections() == 0; }, 5s));
    CHECK(f.server->held_bytes() == 0);
}

TEST_CASE("probe server: over the total budget the connection waiting longest is closed") {
    const std::string text(5000, '#');
    ServerLimits l;
    l.request_timeout = 60s;
    l.max_total_bytes = 20 * 1024;  // room for about four answers in flight
    Fixture f(with_metrics(text), l);
    Flooded got = flood(f, 16, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 1500ms);
    MESSAGE("total budget 20 KiB: peak held " << got.peak_held << " B, " << got.reconnects
                                              << " reconnects");
    CHECK(got.peak_held <= l.max_total_bytes);
    CHECK(got.reconnects > 0);
    // A fresh client is still answered.
    auto fresh = with_server(f.loop, [port = f.server->port()] {
        return round_trip(port, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
    });
    CHECK(fresh.find("200 OK") != std::string::npos);
}

TEST_CASE("probe server: at the cap, a connection whose answer sits unread makes room too") {
    const std::string text(12 * 1024, '#');
    ServerLimits l;
    REQUIRE(l.max_connections == 64);
    l.request_timeout = 60s;
    l.max_total_bytes = 8 * 1024 * 1024;  // only the connection cap is at work here
    Fixture f(with_metrics(text), l);
    const int port = f.server->port();
    std::atomic<bool> stuck{false};
    auto fresh = std::async(std::launch::async, [&] {
        std::vector<int> fds;
        for (int i = 0; i < 64; ++i) fds.push_back(myr::test::connect_loopback(port, 4096));
        std::string burst;
        for (int i = 0; i < 32; ++i) burst += "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
        auto end = std::chrono::steady_clock::now() + 15s;
        while (!stuck && std::chrono::steady_clock::now() < end) {
            for (int fd : fds)
                (void)!::send(fd, burst.data(), burst.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            std::this_thread::sleep_for(1ms);
        }
        std::string r = stuck
                            ? round_trip(port, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n")
                            : "the 64 answers never stayed unread";
        for (int fd : fds) ::close(fd);
        return r;
    });
    // Stuck: all 64 hold an answer, turn after turn, for 300 ms.
    std::optional<std::chrono::steady_clock::time_point> since;
    CHECK(f.loop.run_until(
        [&] {
            const bool all =
                f.server->connections() == 64 && f.server->held_bytes() >= 64 * text.size();
            if (!all) since.reset();
            if (all && !since) since = std::chrono::steady_clock::now();
            if (since && std::chrono::steady_clock::now() - *since >= 300ms) stuck = true;
            return fresh.wait_for(0s) == std::future_status::ready;
        },
        40s));
    const std::string got = fresh.get();
    CHECK(got.find("200 OK") != std::string::npos);
}

TEST_CASE("probe server: an answer over its budget closes the connection without it") {
    const std::string text(20 * 1024, '#');  // over max_answer_bytes (16 KiB)
    Fixture f(with_metrics(text));
    auto got = with_server(f.loop, [port = f.server->port()] {
        int fd = connect_to(port);
        send_text(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        Received r = receive(fd, 5s);
        ::close(fd);
        return r;
    });
    CHECK(got.closed);
    CHECK(got.bytes.empty());
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

TEST_CASE("readiness: ready says so before the text; not ready is the text alone") {
    bool ready = true;
    std::string text = "child running (pid 7)";
    Readiness r([&] { return ready; }, [&] { return text; });
    CHECK(r.answer().ok);
    CHECK(r.answer().text == "ready: child running (pid 7)");
    ready = false;
    text = "installing 0.117.0: swapping";
    CHECK_FALSE(r.answer().ok);
    CHECK(r.answer().text == "installing 0.117.0: swapping");
}
