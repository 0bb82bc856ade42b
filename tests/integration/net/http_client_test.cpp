// The HTTP client against an in-test server: framings, redirects, caps, timeouts, streaming.
#include "net/http_client.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <regex>
#include <string>

#include "harness.hpp"
#include "net/stream.hpp"
#include "net/tls.hpp"
#include "test_server.hpp"

using namespace myr;
using namespace myr::net;
using namespace myr::test;

namespace {

struct Done {
    std::optional<Result<net::HttpResponse>> result;
};

std::unique_ptr<HttpClient> get(TestLoop& loop, const std::string& scheme, int port,
                                const std::string& path, HttpOptions opts, Done& done,
                                HttpClient::Handlers h = {}) {
    HttpRequest req;
    req.url = Url{scheme, "127.0.0.1", static_cast<uint16_t>(port), path};
    req.headers = {{"Accept", "application/octet-stream"}};
    h.on_done = [&done](Result<net::HttpResponse> r) { done.result.emplace(std::move(r)); };
    auto c = std::make_unique<HttpClient>(loop.get(), loop.sched(), std::move(req), std::move(opts),
                                          std::move(h));
    c->start();
    return c;
}

void serve(TestServer& server) {
    server.on_request = [](ServerConn& c) {
        const std::string p = c.path();
        if (p == "/length") {
            c.send_http(200, {{"X-Test", "1"}}, "content-length body");
        } else if (p == "/chunked") {
            c.send_raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
            c.send_raw("6\r\nchunke\r\n");
            c.send_raw("6\r\nd body\r\n0\r\n\r\n");
        } else if (p == "/redirect") {
            c.send_http(302, {{"Location", "https://elsewhere.example/file"}}, "");
        } else if (p == "/big") {
            // 8 MiB in 64 KiB chunks.
            c.send_raw("HTTP/1.1 200 OK\r\nContent-Length: 8388608\r\n\r\n");
            const std::string piece(65536, 'b');
            for (int i = 0; i < 128; ++i) c.send_raw(piece);
        } else if (p == "/stall") {
            c.send_raw("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        } else if (p == "/agent") {
            c.send_http(
                200, {},
                c.header("User-Agent") + "|" + c.header("Host") + "|" + c.header("Connection"));
        }
    };
}

// The test server of serve() speaking TLS with the test CA's server certificate.
std::unique_ptr<TestServer> tls_server(TestLoop& loop, const TestPki& pki) {
    auto cfg = TlsConfig::server(pki.server_cert, pki.server_key);
    REQUIRE(cfg.ok());
    auto server = std::make_unique<TestServer>(loop.get(), *cfg);
    serve(*server);
    return server;
}

}  // namespace

TEST_CASE("http client: Content-Length and chunked bodies") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        serve(server);
        Done a, b, d;
        auto ca = get(loop, "http", server.port(), "/length", {}, a);
        auto cb = get(loop, "http", server.port(), "/chunked", {}, b);
        auto cd = get(loop, "http", server.port(), "/agent", {}, d);
        REQUIRE(loop.run_until([&] { return a.result && b.result && d.result; }));
        REQUIRE(a.result->ok());
        CHECK((*a.result)->head.status == 200);
        CHECK((*a.result)->head.header("x-test").value_or("") == "1");
        CHECK((*a.result)->body == "content-length body");
        REQUIRE(b.result->ok());
        CHECK((*b.result)->body == "chunked body");
        REQUIRE(d.result->ok());
        CHECK((*d.result)->body ==
              "myriarch-updater|127.0.0.1:" + std::to_string(server.port()) + "|close");
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("http client: redirects are returned to the caller, not followed") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        serve(server);
        Done r;
        auto c = get(loop, "http", server.port(), "/redirect", {}, r);
        REQUIRE(loop.run_until([&] { return r.result.has_value(); }));
        REQUIRE(r.result->ok());
        CHECK((*r.result)->head.status == 302);
        CHECK((*r.result)->head.header("Location").value_or("") ==
              "https://elsewhere.example/file");
        CHECK(server.accepted() == 1);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("http client: a large body streams in bounded pieces, with pause and resume") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        serve(server);
        Done r;
        uint64_t total = 0;
        size_t largest = 0;
        int pauses = 0;
        HttpClient* client = nullptr;
        auto resume_timer = loop.sched().timer();
        HttpClient::Handlers h;
        h.on_body = [&](std::string_view piece) -> Status {
            total += piece.size();
            largest = std::max(largest, piece.size());
            // Pause every MiB, as a downloader does while its disk writes catch up.
            if (total / (1 << 20) > static_cast<uint64_t>(pauses)) {
                ++pauses;
                client->pause();
                resume_timer->start(std::chrono::milliseconds(5), [&] { client->resume(); });
            }
            return {};
        };
        HttpOptions opts;
        opts.idle_timeout = std::chrono::milliseconds(500);  // suspended while paused
        auto c = get(loop, "http", server.port(), "/big", opts, r, h);
        client = c.get();
        REQUIRE(loop.run_until([&] { return r.result.has_value(); }, std::chrono::seconds(60)));
        REQUIRE(r.result->ok());
        CHECK((*r.result)->body.empty());  // streamed, not collected
        CHECK(total == 8388608);
        CHECK(largest <= 64 * 1024);
        CHECK(pauses >= 7);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("http client: caps on the body, idle and total timeouts, connection refused") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        serve(server);
        HttpOptions capped;
        capped.limits.max_body = 10;
        Done big, idle, total, refused;
        auto c1 = get(loop, "http", server.port(), "/length", capped, big);
        HttpOptions idle_opts;
        idle_opts.idle_timeout = std::chrono::milliseconds(300);
        auto c2 = get(loop, "http", server.port(), "/stall", idle_opts, idle);
        HttpOptions total_opts;
        total_opts.total_timeout = std::chrono::milliseconds(400);
        total_opts.idle_timeout = std::chrono::seconds(30);
        auto c3 = get(loop, "http", server.port(), "/stall", total_opts, total);
        auto c4 = get(loop, "http", refusing_port(), "/", {}, refused);
        REQUIRE(loop.run_until(
            [&] { return big.result && idle.result && total.result && refused.result; }));
        REQUIRE(!big.result->ok());
        CHECK(big.result->error().message().find("exceeds the limit of 10") != std::string::npos);
        REQUIRE(!idle.result->ok());
        CHECK(idle.result->error().message().find("no data received for 300ms") !=
              std::string::npos);
        REQUIRE(!total.result->ok());
        CHECK(total.result->error().message().find("did not complete within 400ms") !=
              std::string::npos);
        REQUIRE(!refused.result->ok());
        CHECK(refused.result->error().message().find("connect 127.0.0.1:") != std::string::npos);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("http client: https with a test CA; http:// off-machine refused") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    TestLoop loop;
    {
        auto tls = tls_server(loop, pki);
        TestServer& server = *tls;
        HttpOptions opts;
        opts.ca_file = pki.ca;
        Done ok, insecure;
        auto c = get(loop, "https", server.port(), "/chunked", opts, ok);

        HttpRequest req;
        req.url = Url{"http", "192.0.2.7", 80, "/artifact"};
        HttpClient::Handlers h;
        h.on_done = [&](Result<net::HttpResponse> r) { insecure.result.emplace(std::move(r)); };
        HttpClient off(loop.get(), loop.sched(), req, {}, h);
        off.start();

        REQUIRE(loop.run_until([&] { return ok.result && insecure.result; }));
        if (!ok.result->ok()) FAIL(ok.result->error().message());
        CHECK((*ok.result)->body == "chunked body");
        REQUIRE(!insecure.result->ok());
        CHECK(insecure.result->error().message().find("refusing a plaintext connection") !=
              std::string::npos);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("http client: a CA bundle loaded once off the loop serves every connection") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    TestLoop loop;
    {
        auto tls = tls_server(loop, pki);
        TestServer& server = *tls;
        std::optional<Result<std::shared_ptr<TlsConfig>>> loaded, missing;
        load_tls_client(loop.sched(), pki.ca, [&](auto r) { loaded.emplace(std::move(r)); });
        load_tls_client(loop.sched(), dir / "absent.pem",
                        [&](auto r) { missing.emplace(std::move(r)); });
        REQUIRE(loop.run_until([&] { return loaded && missing; }));
        REQUIRE(loaded->ok());
        REQUIRE(!missing->ok());
        CHECK(missing->error().message().find("absent.pem") != std::string::npos);

        // ca_file names a file that does not exist: only the preloaded configuration can work.
        HttpOptions opts;
        opts.ca_file = dir / "absent.pem";
        opts.tls_config = **loaded;
        Done first, second;
        auto a = get(loop, "https", server.port(), "/length", opts, first);
        auto b = get(loop, "https", server.port(), "/chunked", opts, second);
        REQUIRE(loop.run_until([&] { return first.result && second.result; }));
        if (!first.result->ok()) FAIL(first.result->error().message());
        if (!second.result->ok()) FAIL(second.result->error().message());
        CHECK((*first.result)->body == "content-length body");
        CHECK((*second.result)->body == "chunked body");
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("http client: header injection is refused before connecting") {
    TestLoop loop;
    {
        Done r;
        HttpRequest req;
        req.url = Url{"http", "127.0.0.1", 9, "/"};
        req.headers = {{"X-Evil", "a\r\nInjected: yes"}};
        HttpClient::Handlers h;
        h.on_done = [&](Result<net::HttpResponse> res) { r.result.emplace(std::move(res)); };
        HttpClient c(loop.get(), loop.sched(), req, {}, h);
        c.start();
        REQUIRE(loop.run_until([&] { return r.result.has_value(); }));
        REQUIRE(!r.result->ok());
        CHECK(r.result->error().message().find("invalid request header") != std::string::npos);
    }
    CHECK(loop.close() == 0);
}

namespace {

// Resident set size of this process in KiB (VmRSS), 0 when unknown.
long rss_kib() {
    const std::string status = read_file("/proc/self/status");
    const size_t at = status.find("VmRSS:");
    if (at == std::string::npos) return 0;
    return std::strtol(status.c_str() + at + 6, nullptr, 10);
}

}  // namespace

TEST_CASE("http client: a 256 MiB download streams with flat memory") {
    // The server is another process (python's http.server on a sparse file), so only the client's
    // memory is measured here.
    TempDir dir;
    const uint64_t size = 256ull << 20;
    REQUIRE(run({"truncate", "-s", std::to_string(size), dir / "artifact.bin"}).exit_code == 0);
    SpawnOptions so;
    so.cwd = dir.path();
    // Port 0: the server picks a free port and names it ("Serving HTTP on 127.0.0.1 port N ...");
    // -u so that the line is not held in python's buffer.
    auto server =
        Process::spawn({"python3", "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"}, so);
    int port = 0;
    REQUIRE_MESSAGE(wait_until(
                        [&] {
                            std::smatch m;
                            std::string out = server.out();
                            if (!std::regex_search(out, m, std::regex(" port ([0-9]+) "))) {
                                return false;
                            }
                            port = std::stoi(m[1]);
                            return true;
                        },
                        std::chrono::seconds(20)),
                    server.err());
    REQUIRE(wait_until([&] { return http_get("127.0.0.1", port, "/").status == 200; },
                       std::chrono::seconds(20)));
    TestLoop loop;
    {
        Done r;
        uint64_t total = 0;
        const long before = rss_kib();
        long peak = before;
        HttpClient::Handlers h;
        h.on_body = [&](std::string_view piece) -> Status {
            total += piece.size();
            if ((total & ((4 << 20) - 1)) < piece.size()) peak = std::max(peak, rss_kib());
            return {};
        };
        auto c = get(loop, "http", port, "/artifact.bin", {}, r, h);
        REQUIRE(loop.run_until([&] { return r.result.has_value(); }, std::chrono::seconds(120)));
        if (!r.result->ok()) FAIL(r.result->error().message());
        CHECK(total == size);
        MESSAGE("RSS before ", before, " KiB, peak during the download ", peak, " KiB");
        CHECK(peak - before < 16 * 1024);
    }
    CHECK(loop.close() == 0);
    server.kill_now();
}
