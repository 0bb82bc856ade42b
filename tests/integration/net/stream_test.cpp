// Streams and TLS over real sockets: certificate checks with the messages people read, the
// plaintext rule on resolved addresses, name resolution.
#include "net/stream.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <optional>
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

std::unique_ptr<Stream> open_stream(TestLoop& loop, StreamOptions o, Outcome& out) {
    Stream::Handlers h;
    h.on_connected = [&out] { out.connected = true; };
    h.on_data = [&out](std::string_view d) { out.data.append(d); };
    h.on_end = [&out](Status st) { out.end = std::move(st); };
    auto s = std::make_unique<Stream>(loop.get(), loop.sched(), std::move(o), std::move(h));
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
        auto s = open_stream(loop, o, out);
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
        // "localhost" is answered in-process (RFC 6761); other names and literals go through
        // getaddrinfo on libuv's work queue. A loopback name from /etc/hosts, when there is one,
        // shows a real lookup.
        std::vector<std::string> hosts = {"localhost", "127.0.0.1"};
        const std::string etc_hosts = read_file("/etc/hosts");
        size_t at = 0;
        while (at < etc_hosts.size()) {
            size_t nl = etc_hosts.find('\n', at);
            if (nl == std::string::npos) nl = etc_hosts.size();
            const std::string line = etc_hosts.substr(at, nl - at);
            at = nl + 1;
            char name[256] = {};
            if (std::sscanf(line.c_str(), "127.0.0.1 %255s", name) == 1 &&
                std::string(name) != "localhost" && std::string(name).find('.') != 0) {
                hosts.push_back(name);
                break;
            }
        }
        if (hosts.size() == 2)
            MESSAGE("no extra loopback name in /etc/hosts; lookup by name skipped");
        for (const std::string& host : hosts) {
            CAPTURE(host);
            StreamOptions o;
            o.host = host;
            o.port = static_cast<uint16_t>(server.port());
            Outcome out;
            auto s = open_stream(loop, o, out);
            REQUIRE(loop.run_until([&] { return out.connected || out.end; }));
            if (out.end) FAIL(out.end->error().message());
            CHECK(s->peer() == "127.0.0.1:" + std::to_string(server.port()));
            s->write("x\r\n\r\n");
            REQUIRE(loop.run_until([&] { return out.data == "hi"; }));
        }
        // A resolution failure is reported, not thrown.
        StreamOptions o;
        o.host = "name.invalid";
        o.port = 80;
        Outcome out;
        auto s = open_stream(loop, o, out);
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
        auto s = open_stream(loop, o, out);
        s.reset();
        loop.run_for(std::chrono::milliseconds(50));
        CHECK(!out.end);
    }
    CHECK(loop.close() == 0);
}
