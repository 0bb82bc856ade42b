// Streams and TLS over real sockets: certificate checks with the messages people read, the
// plaintext rule on resolved addresses, name resolution.
#include "net/stream.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "harness.hpp"
#include "test_server.hpp"

using namespace myr;
using namespace myr::net;
using namespace myr::test;

namespace {

struct Outcome {
    bool connected = false;
    std::string data;
    std::optional<Status> end;
};

std::unique_ptr<Stream> open_stream(uv_loop_t* loop, StreamOptions o, Outcome& out) {
    Stream::Handlers h;
    h.on_connected = [&out] { out.connected = true; };
    h.on_data = [&out](std::string_view d) { out.data.append(d); };
    h.on_end = [&out](Status st) { out.end = std::move(st); };
    auto s = std::make_unique<Stream>(loop, std::move(o), std::move(h));
    s->start();
    return s;
}

// Connects with TLS to a server presenting `cert`; returns the error ("" when it connected).
std::string tls_error(const std::string& cert, const std::string& key, const std::string& ca,
                      const std::string& host, const std::string& server_name) {
    TestLoop loop;
    std::string result;
    {
        auto cfg = TlsConfig::server(cert, key);
        REQUIRE(cfg.ok());
        TestServer server(loop.get(), *cfg);
        server.on_request = [](ServerConn& c) { c.send_raw("pong"); };
        StreamOptions o;
        o.host = host;
        o.port = static_cast<uint16_t>(server.port());
        o.tls = true;
        o.ca_file = ca;
        o.tls_server_name = server_name;
        Outcome out;
        auto s = open_stream(loop.get(), o, out);
        REQUIRE(loop.run_until([&] { return out.connected || out.end; }));
        if (out.connected) {
            s->write("ping\r\n\r\n");
            REQUIRE(loop.run_until([&] { return out.data == "pong"; }));
            s->close();
        } else {
            REQUIRE(!out.end->ok());
            result = out.end->error().message();
        }
    }
    CHECK(loop.close() == 0);
    return result;
}

// Connects to `server` (which answers "hi") by `host`; "" when the connection carried data both
// ways, else what went wrong.
std::string connect_by(TestLoop& loop, TestServer& server, const std::string& host) {
    StreamOptions o;
    o.host = host;
    o.port = static_cast<uint16_t>(server.port());
    Outcome out;
    auto s = open_stream(loop.get(), o, out);
    if (!loop.run_until([&] { return out.connected || out.end; }, std::chrono::seconds(30))) {
        return "neither connected nor failed within 30 s";
    }
    if (out.end) return out.end->ok() ? "ended without connecting" : out.end->error().message();
    const std::string want_peer = "127.0.0.1:" + std::to_string(server.port());
    if (s->peer() != want_peer) return "connected to " + s->peer() + ", not " + want_peer;
    s->write("x\r\n\r\n");
    if (!loop.run_until([&] { return out.data == "hi"; })) return "no answer from the server";
    return "";
}

std::string self_exe() {
    char self[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(n > 0);
    return self;
}

// The re-run of one test case in a prepared environment passed: doctest's summary line.
void check_inner_run(const RunResult& r) {
    INFO(r.out, r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(std::regex_search(r.out, std::regex("test cases: +1 \\| +1 passed \\| +0 failed")));
}

}  // namespace

TEST_CASE("tls: verified chain and host name connect and carry data both ways") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    CHECK(tls_error(pki.server_cert, pki.server_key, pki.ca, "127.0.0.1", "") == "");
    CHECK(tls_error(pki.server_cert, pki.server_key, pki.ca, "127.0.0.1", "localhost") == "");
    CHECK(tls_error(pki.server_cert, pki.server_key, pki.ca, "127.0.0.1", "LOCALHOST") == "");
}

TEST_CASE("tls: a certificate for another host is refused, naming both") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    const std::string err =
        tls_error(pki.ip_cert, pki.ip_key, pki.ca, "127.0.0.1", "wrong.example");
    CHECK(err.find("TLS: certificate for 127.0.0.1 does not match host \"wrong.example\"") !=
          std::string::npos);
    // An IP SAN does not vouch for a name that happens to resolve to it, nor the reverse.
    CHECK(tls_error(pki.ip_cert, pki.ip_key, pki.ca, "127.0.0.1", "localhost") != "");
    CHECK(tls_error(pki.server_cert, pki.server_key, pki.ca, "127.0.0.1", "127.0.0.2") != "");
}

TEST_CASE("tls: a certificate from an untrusted CA is refused, naming the CA file") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    const std::string err =
        tls_error(pki.server_cert, pki.server_key, pki.other_ca, "127.0.0.1", "");
    CHECK(err.find("TLS: certificate not trusted by " + pki.other_ca) != std::string::npos);
}

TEST_CASE("tls: an expired certificate is refused with its end date") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    const std::string err = tls_error(pki.expired_cert, pki.expired_key, pki.ca, "127.0.0.1", "");
    CHECK(err.find("TLS: certificate for 127.0.0.1 expired at 2020-01-02T00:00:00Z") !=
          std::string::npos);
}

TEST_CASE("tls: a missing CA file is a clear error") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    const std::string err =
        tls_error(pki.server_cert, pki.server_key, dir / "missing.pem", "127.0.0.1", "");
    CHECK(err.find("TLS: load CA file " + (dir / "missing.pem")) != std::string::npos);
}

TEST_CASE("tls: the session refuses anything below TLS 1.2") {
    // openssl s_client speaks the server side of the test here: a TLS 1.1-only client must fail.
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    TestLoop loop;
    {
        auto cfg = TlsConfig::server(pki.server_cert, pki.server_key);
        REQUIRE(cfg.ok());
        TestServer server(loop.get(), *cfg);
        const std::string port = std::to_string(server.port());
        auto p = Process::spawn({"/bin/sh", "-c",
                                 "echo | openssl s_client -connect 127.0.0.1:" + port +
                                     " -tls1_1 -cipher DEFAULT@SECLEVEL=0 2>&1; echo rc=$?"});
        REQUIRE(loop.run_until([&] { return !p.running(); }, std::chrono::seconds(30)));
        const std::string out = p.out();
        INFO(out);
        CHECK(out.find("rc=0") == std::string::npos);
        CHECK(out.find("alert protocol version") != std::string::npos);
        CHECK(out.find("Cipher is (NONE)") != std::string::npos);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("stream: localhost and numeric hosts resolve; plaintext rule uses resolved addresses") {
    CHECK(is_loopback_address("127.0.0.1"));
    CHECK(is_loopback_address("127.255.0.9"));
    CHECK(is_loopback_address("::1"));
    CHECK(is_loopback_address("::ffff:127.0.0.1"));
    CHECK_FALSE(is_loopback_address("10.0.0.1"));
    CHECK_FALSE(is_loopback_address("::ffff:10.0.0.1"));
    CHECK_FALSE(is_loopback_address("::"));
    CHECK_FALSE(is_loopback_address("0.0.0.0"));
    CHECK_FALSE(is_loopback_address("localhost"));  // names are judged after resolution

    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) { c.send_raw("hi"); };
        // "localhost" is answered in-process (RFC 6761); literals go through getaddrinfo on
        // libuv's work queue. A name from /etc/hosts is the next test case.
        for (const char* host : {"localhost", "127.0.0.1"}) {
            CAPTURE(host);
            CHECK(connect_by(loop, server, host) == "");
        }
        // A resolution failure is reported, not thrown.
        StreamOptions o;
        o.host = "name.invalid";
        o.port = 80;
        Outcome out;
        auto s = open_stream(loop.get(), o, out);
        REQUIRE(loop.run_until([&] { return out.end.has_value(); }, std::chrono::seconds(30)));
        CHECK(!out.end->ok());
        CHECK(out.end->error().message().find("resolve name.invalid") != std::string::npos);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("stream: destroying a stream while its name lookup runs leaves nothing behind") {
    TestLoop loop;
    {
        StreamOptions o;
        o.host = "name.invalid";
        o.port = 80;
        Outcome out;
        auto s = open_stream(loop.get(), o, out);
        s.reset();
        loop.run_for(std::chrono::milliseconds(50));
        CHECK(!out.end);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("stream: a name listed in /etc/hosts is looked up by the system resolver") {
    // The name must come from the real getaddrinfo, not from a list the test hopes the machine
    // has, so the case re-runs itself in a private mount namespace whose /etc/hosts it writes.
    if (std::getenv("MYR_NET_STREAM_HOSTS") == nullptr) {
        if (!is_root()) {
            MYR_SKIP("needs root for a private mount namespace with its own /etc/hosts");
        }
        TempDir dir;
        write_file(dir / "hosts", "127.0.0.1 localhost\n127.0.0.1 myr-stream.test\n");
        SpawnOptions so;
        so.env["MYR_NET_STREAM_HOSTS"] = "1";
        check_inner_run(
            run({"unshare", "--mount", "sh", "-c",
                 "mount --bind '" + (dir / "hosts") + "' /etc/hosts && exec '" + self_exe() +
                     "' -tc='stream: a name listed in /etc/hosts is looked up*'"},
                std::chrono::seconds(60), so));
        return;
    }
    REQUIRE(read_file("/etc/hosts").find("myr-stream.test") != std::string::npos);
    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) { c.send_raw("hi"); };
        CHECK(connect_by(loop, server, "myr-stream.test") == "");
        // Only the listed name: a neighbour of it is not made up by anything.
        const std::string other = connect_by(loop, server, "myr-other.test");
        CHECK(other.find("resolve myr-other.test") != std::string::npos);
    }
    CHECK(loop.close() == 0);
}
