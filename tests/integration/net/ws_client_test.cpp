// The WebSocket client against an in-test server over real sockets on 127.0.0.1.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "harness.hpp"
#include "net/websocket.hpp"
#include "test_server.hpp"

using namespace myr;
using namespace myr::net;
using namespace myr::test;
using ws::Event;
using ws::Opcode;

namespace {

struct Closed {
    uint16_t code = 0;
    std::string reason;
    std::optional<WsRejection> rejection;
    std::string error;
};

// A client plus what it saw.
struct Client {
    bool opened = false;
    std::vector<std::string> messages;
    std::optional<Closed> closed;
    int closed_count = 0;
    std::unique_ptr<WebSocketClient> ws;

    Client(TestLoop& loop, WsConnectOptions opts) {
        WebSocketClient::Handlers h;
        h.on_open = [this] { opened = true; };
        h.on_message = [this](std::string_view m) { messages.emplace_back(m); };
        h.on_closed = [this](uint16_t code, std::string reason, std::optional<WsRejection> rej,
                             std::string error) {
            ++closed_count;
            closed = Closed{code, std::move(reason), std::move(rej), std::move(error)};
        };
        ws = std::make_unique<WebSocketClient>(loop.get(), loop.sched(), std::move(opts),
                                               std::move(h));
    }
};

WsConnectOptions options(const std::string& scheme, const std::string& host, int port) {
    WsConnectOptions o;
    o.url = Url{scheme, host, static_cast<uint16_t>(port), "/v1/opamp"};
    o.handshake_timeout = std::chrono::seconds(15);
    return o;
}

// A server that upgrades every request and echoes binary messages.
void make_echo(TestServer& server) {
    server.on_request = [](ServerConn& c) { c.accept_upgrade(); };
    auto base = server.on_event;
    server.on_event = [base](ServerConn& c, const Event& e) {
        if (e.kind == Event::Kind::message) c.send_frame(Opcode::binary, e.data);
        base(c, e);
    };
}

}  // namespace

TEST_CASE("ws client: ws:// exchange of messages, then a clean close handshake") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        make_echo(server);
        auto opts = options("ws", "127.0.0.1", server.port());
        opts.headers = {{"Authorization", "Bearer secret-token"}};
        Client c(loop, opts);
        c.ws->connect();
        CHECK(!c.ws->send_binary("too early").ok());
        REQUIRE(loop.run_until([&] { return c.opened || c.closed; }));
        REQUIRE(c.opened);
        CHECK(c.ws->is_open());
        REQUIRE(server.accepted() == 1);
        CHECK(server.conn(0).path() == "/v1/opamp");
        CHECK(server.conn(0).header("Authorization") == "Bearer secret-token");
        CHECK(server.conn(0).header("Sec-WebSocket-Version") == "13");

        const std::string big(70000, '\x5a');
        CHECK(c.ws->send_binary(std::string("\0hello", 6)).ok());
        CHECK(c.ws->send_binary("").ok());
        CHECK(c.ws->send_binary(big).ok());
        REQUIRE(loop.run_until([&] { return c.messages.size() == 3; }));
        CHECK(c.messages[0] == std::string("\0hello", 6));
        CHECK(c.messages[1].empty());
        CHECK(c.messages[2] == big);
        // The server's decoder runs in server role: every client frame was masked.
        for (const Event& e : server.conn(0).events()) CHECK(e.kind != Event::Kind::error);

        c.ws->close(1000, "shutdown");
        CHECK(!c.ws->is_open());
        REQUIRE(loop.run_until([&] { return c.closed.has_value(); }));
        CHECK(c.closed->code == 1000);
        CHECK(c.closed->reason == "shutdown");
        CHECK(c.closed->error.empty());
        CHECK(!c.closed->rejection);
        const auto& evs = server.conn(0).events();
        REQUIRE(!evs.empty());
        CHECK(evs.back().kind == Event::Kind::close);
        CHECK(evs.back().code == 1000);
        CHECK(evs.back().data == "shutdown");
        loop.run_for(std::chrono::milliseconds(50));
        CHECK(c.closed_count == 1);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: answers the latest ping, also between the fragments of a message") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) {
            c.accept_upgrade();
            c.send_frame(Opcode::ping, "hb-1");
            c.send_frame(Opcode::binary, "part1-", false);
            c.send_frame(Opcode::ping, "hb-2");
            c.send_frame(Opcode::continuation, "part2-", false);
            c.send_frame(Opcode::pong, "unsolicited");
            c.send_frame(Opcode::continuation, "part3", true);
        };
        Client c(loop, options("ws", "127.0.0.1", server.port()));
        c.ws->connect();
        // Pings read together get one pong, for the latest (RFC 6455 5.5.3): a ping flood must not
        // queue a pong each. Pings read apart get one each.
        REQUIRE(loop.run_until([&] {
            return c.messages.size() == 1 && server.accepted() == 1 &&
                   !server.conn(0).events().empty() &&
                   server.conn(0).events().back().data == "hb-2";
        }));
        CHECK(c.messages[0] == "part1-part2-part3");
        const auto& evs = server.conn(0).events();
        REQUIRE(evs.size() <= 2);
        for (const auto& e : evs) CHECK(e.kind == Event::Kind::pong);
        if (evs.size() == 2) CHECK(evs[0].data == "hb-1");
        CHECK(!c.closed);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: a close from the server is echoed and reported with its code") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) {
            c.accept_upgrade();
            c.send_frame(Opcode::close, ws::close_payload(4001, "go away"));
        };
        server.on_event = [](ServerConn&, const Event&) {};
        Client c(loop, options("ws", "127.0.0.1", server.port()));
        c.ws->connect();
        REQUIRE(loop.run_until([&] { return c.closed.has_value(); }));
        CHECK(c.opened);
        CHECK(c.closed->code == 4001);
        CHECK(c.closed->reason == "go away");
        CHECK(c.closed->error.find("4001") != std::string::npos);
        REQUIRE(loop.run_until([&] { return !server.conn(0).events().empty(); }));
        CHECK(server.conn(0).events().back().kind == Event::Kind::close);
        CHECK(server.conn(0).events().back().code == 4001);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: a message over max_message closes with 1009") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) {
            c.accept_upgrade();
            c.send_frame(Opcode::binary, "small");
            c.send_frame(Opcode::binary, std::string(2000, 'x'));
        };
        server.on_event = [](ServerConn&, const Event&) {};
        auto opts = options("ws", "127.0.0.1", server.port());
        opts.max_message = 1024;
        Client c(loop, opts);
        c.ws->connect();
        REQUIRE(loop.run_until([&] { return c.closed.has_value(); }));
        CHECK(c.messages == std::vector<std::string>{"small"});
        CHECK(c.closed->code == 1009);
        CHECK(c.closed->error.find("larger than 1024") != std::string::npos);
        REQUIRE(loop.run_until([&] { return !server.conn(0).events().empty(); }));
        CHECK(server.conn(0).events().back().kind == Event::Kind::close);
        CHECK(server.conn(0).events().back().code == 1009);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: garbage frames close with 1002, a text message with 1003") {
    struct Case {
        const char* what;
        std::string bytes;
        uint16_t code;
    };
    const Case cases[] = {
        {"reserved bits", std::string("\xC2\x01x", 3), 1002},
        {"unknown opcode", std::string("\x83\x01x", 3), 1002},
        {"masked server frame", std::string("\x82\x81\x01\x02\x03\x04x", 7), 1002},
        {"long ping", std::string("\x89\x7E\x00\x80", 4) + std::string(128, 'p'), 1002},
        {"bad close code", std::string("\x88\x02\x03\xED", 4), 1002},
        {"text message", std::string("\x81\x02hi", 4), 1003},
    };
    for (const Case& k : cases) {
        const std::string what = k.what;
        CAPTURE(what);
        TestLoop loop;
        {
            TestServer server(loop.get());
            const std::string bytes = k.bytes;
            server.on_request = [bytes](ServerConn& c) {
                c.accept_upgrade();
                c.send_raw(bytes);
            };
            server.on_event = [](ServerConn&, const Event&) {};
            Client c(loop, options("ws", "127.0.0.1", server.port()));
            c.ws->connect();
            REQUIRE(loop.run_until([&] { return c.closed.has_value(); }));
            CHECK(c.closed->code == k.code);
            CHECK(!c.closed->error.empty());
            REQUIRE(loop.run_until([&] { return !server.conn(0).events().empty(); }));
            CHECK(server.conn(0).events().back().kind == Event::Kind::close);
            CHECK(server.conn(0).events().back().code == k.code);
        }
        CHECK(loop.close() == 0);
    }
}

TEST_CASE("ws client: 401 and 503 with Retry-After are rejections with status and delay") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) {
            if (c.header("Authorization") == "Bearer bad") {
                c.send_http(401, {{"Content-Type", "text/plain"}}, "invalid token");
            } else {
                c.send_http(503, {{"Retry-After", "7"}}, "busy");
            }
        };
        auto opts = options("ws", "127.0.0.1", server.port());
        opts.headers = {{"Authorization", "Bearer bad"}};
        Client bad(loop, opts);
        bad.ws->connect();
        Client busy(loop, options("ws", "127.0.0.1", server.port()));
        busy.ws->connect();
        REQUIRE(loop.run_until([&] { return bad.closed && busy.closed; }));
        CHECK(!bad.opened);
        REQUIRE(bad.closed->rejection);
        CHECK(bad.closed->rejection->http_status == 401);
        CHECK(bad.closed->rejection->body_excerpt == "invalid token");
        CHECK(!bad.closed->rejection->retry_after);
        CHECK(bad.closed->error.find("HTTP 401") != std::string::npos);
        REQUIRE(busy.closed->rejection);
        CHECK(busy.closed->rejection->http_status == 503);
        REQUIRE(busy.closed->rejection->retry_after);
        CHECK(*busy.closed->rejection->retry_after == std::chrono::seconds(7));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: a wrong Sec-WebSocket-Accept fails the handshake") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) { c.accept_upgrade("AAAAAAAAAAAAAAAAAAAAAAAAAAA="); };
        Client c(loop, options("ws", "127.0.0.1", server.port()));
        c.ws->connect();
        REQUIRE(loop.run_until([&] { return c.closed.has_value(); }));
        CHECK(!c.opened);
        CHECK(c.closed->code == 1002);
        CHECK(c.closed->error.find("Sec-WebSocket-Accept") != std::string::npos);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: wss:// with a test CA, by IP literal and by the name localhost") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    TestLoop loop;
    {
        auto tls = TlsConfig::server(pki.server_cert, pki.server_key);
        REQUIRE(tls.ok());
        TestServer server(loop.get(), *tls);
        make_echo(server);
        for (const char* host : {"127.0.0.1", "localhost"}) {
            CAPTURE(std::string(host));
            auto opts = options("wss", host, server.port());
            opts.ca_file = pki.ca;
            Client c(loop, opts);
            c.ws->connect();
            REQUIRE(loop.run_until([&] { return c.opened || c.closed; }));
            if (c.closed) FAIL(c.closed->error);
            CHECK(c.ws->send_binary("over tls").ok());
            REQUIRE(loop.run_until([&] { return !c.messages.empty(); }));
            CHECK(c.messages[0] == "over tls");
            c.ws->close(1000, "");
            REQUIRE(loop.run_until([&] { return c.closed.has_value(); }));
            CHECK(c.closed->code == 1000);
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: wss:// refuses a certificate for another host and an untrusted CA") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    TestLoop loop;
    {
        auto ip_only = TlsConfig::server(pki.ip_cert, pki.ip_key);
        REQUIRE(ip_only.ok());
        TestServer server(loop.get(), *ip_only);
        make_echo(server);

        auto opts = options("wss", "localhost", server.port());
        opts.ca_file = pki.ca;
        Client wrong_host(loop, opts);
        wrong_host.ws->connect();
        opts = options("wss", "127.0.0.1", server.port());
        opts.ca_file = pki.other_ca;
        Client untrusted(loop, opts);
        untrusted.ws->connect();
        REQUIRE(loop.run_until([&] { return wrong_host.closed && untrusted.closed; }));
        CHECK(!wrong_host.opened);
        CHECK(wrong_host.closed->code == 1015);
        CHECK(wrong_host.closed->error.find(
                  "TLS: certificate for 127.0.0.1 does not match host \"localhost\"") !=
              std::string::npos);
        CHECK(!untrusted.opened);
        CHECK(untrusted.closed->code == 1015);
        CHECK(untrusted.closed->error.find("TLS: certificate not trusted by " + pki.other_ca) !=
              std::string::npos);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: ws:// to a non-loopback address is refused before connecting") {
    TestLoop loop;
    {
        // Documentation addresses (RFC 5737, RFC 3849): nothing is ever sent there.
        for (const char* host : {"192.0.2.1", "2001:db8::1", "10.1.2.3"}) {
            CAPTURE(std::string(host));
            Client c(loop, options("ws", host, 80));
            c.ws->connect();
            CHECK(!c.closed);  // reported from the loop, not from inside connect()
            REQUIRE(loop.run_until([&] { return c.closed.has_value(); }, std::chrono::seconds(5)));
            CHECK(!c.opened);
            CHECK(c.closed->code == 1006);
            CHECK(c.closed->error.find("refusing a plaintext connection to") != std::string::npos);
            CHECK(c.closed->error.find("allowInsecureTransport") != std::string::npos);
        }
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: ws:// to loopback needs no permission; wss:// is never refused by the rule") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        make_echo(server);
        Client c(loop, options("ws", "localhost", server.port()));
        c.ws->connect();
        REQUIRE(loop.run_until([&] { return c.opened || c.closed; }));
        CHECK(c.opened);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: connection refused and handshake timeout are reported once") {
    TestLoop loop;
    {
        const int port = refusing_port();
        Client refused(loop, options("ws", "127.0.0.1", port));
        refused.ws->connect();

        TestServer silent(loop.get());
        silent.on_request = [](ServerConn&) {};  // never answers the upgrade
        auto opts = options("ws", "127.0.0.1", silent.port());
        opts.handshake_timeout = std::chrono::milliseconds(300);
        Client slow(loop, opts);
        slow.ws->connect();

        REQUIRE(loop.run_until([&] { return refused.closed && slow.closed; }));
        CHECK(refused.closed->code == 1006);
        CHECK(refused.closed->error.find("connect 127.0.0.1:" + std::to_string(port)) !=
              std::string::npos);
        CHECK(slow.closed->code == 1006);
        CHECK(slow.closed->error.find("not established within 300ms") != std::string::npos);
        loop.run_for(std::chrono::milliseconds(100));
        CHECK(refused.closed_count == 1);
        CHECK(slow.closed_count == 1);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: the server dropping TCP is 1006; connect() again reconnects") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) { c.accept_upgrade(); };
        server.on_event = [](ServerConn& c, const Event& e) {
            if (e.kind == Event::Kind::message && e.data == "drop me") c.drop();
            if (e.kind == Event::Kind::message && e.data == "echo") {
                c.send_frame(Opcode::binary, "echoed");
            }
        };
        Client c(loop, options("ws", "127.0.0.1", server.port()));
        c.ws->connect();
        REQUIRE(loop.run_until([&] { return c.opened; }));
        CHECK(c.ws->send_binary("drop me").ok());
        REQUIRE(loop.run_until([&] { return c.closed.has_value(); }));
        CHECK(c.closed->code == 1006);
        CHECK(c.closed->error.find("without a close frame") != std::string::npos);

        c.opened = false;
        c.closed.reset();
        c.ws->connect();
        REQUIRE(loop.run_until([&] { return c.opened || c.closed; }));
        REQUIRE(c.opened);
        CHECK(server.accepted() == 2);
        CHECK(c.ws->send_binary("echo").ok());
        REQUIRE(loop.run_until([&] { return !c.messages.empty(); }));
        CHECK(c.messages[0] == "echoed");
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: may be destroyed inside its own handlers") {
    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) {
            c.accept_upgrade();
            c.send_frame(Opcode::binary, "first");
            c.send_frame(Opcode::binary, "second");
        };
        std::unique_ptr<WebSocketClient> ws;
        int messages = 0;
        WebSocketClient::Handlers h;
        h.on_message = [&](std::string_view) {
            ++messages;
            ws.reset();  // the second message in the same read must not be delivered
        };
        h.on_closed = [&](uint16_t, std::string, std::optional<WsRejection>, std::string) {
            FAIL("on_closed after destruction");
        };
        ws = std::make_unique<WebSocketClient>(loop.get(), loop.sched(),
                                               options("ws", "127.0.0.1", server.port()), h);
        ws->connect();
        REQUIRE(loop.run_until([&] { return ws == nullptr; }));
        loop.run_for(std::chrono::milliseconds(100));
        CHECK(messages == 1);

        // And from on_closed.
        std::unique_ptr<WebSocketClient> ws2;
        bool closed = false;
        WebSocketClient::Handlers h2;
        h2.on_closed = [&](uint16_t, std::string, std::optional<WsRejection>, std::string) {
            closed = true;
            ws2.reset();
        };
        ws2 = std::make_unique<WebSocketClient>(loop.get(), loop.sched(),
                                                options("ws", "127.0.0.1", refusing_port()), h2);
        ws2->connect();
        REQUIRE(loop.run_until([&] { return closed; }));
        CHECK(ws2 == nullptr);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: close() before the connection is open aborts the attempt") {
    TestLoop loop;
    {
        TestServer silent(loop.get());
        silent.on_request = [](ServerConn&) {};
        Client c(loop, options("ws", "127.0.0.1", silent.port()));
        c.ws->connect();
        c.ws->close(1000, "");
        CHECK(!c.closed);
        REQUIRE(loop.run_until([&] { return c.closed.has_value(); }));
        CHECK(c.closed->code == 1000);
        CHECK(c.closed->error.empty());
        loop.run_for(std::chrono::milliseconds(50));
        CHECK(c.closed_count == 1);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("ws client: a name that resolves to a non-loopback address is refused for ws://") {
    // The name must come from the real resolver, so this case re-runs itself in a private mount
    // namespace where /etc/hosts says evil.test is 192.0.2.9 (a documentation address).
    if (std::getenv("MYR_NET_EVIL_HOSTS") == nullptr) {
        if (!is_root()) {
            MYR_SKIP("needs root for a private mount namespace");
        }
        TempDir dir;
        write_file(dir / "hosts", "192.0.2.9 evil.test\n127.0.0.1 localhost\n");
        char self[4096] = {};
        const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        REQUIRE(n > 0);
        SpawnOptions so;
        so.env["MYR_NET_EVIL_HOSTS"] = "1";
        RunResult r =
            run({"unshare", "--mount", "sh", "-c",
                 "mount --bind '" + (dir / "hosts") + "' /etc/hosts && exec '" + std::string(self) +
                     "' -tc='ws client: a name that resolves to a non-loopback*'"},
                std::chrono::seconds(60), so);
        INFO(r.out, r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("1 passed") != std::string::npos);
        return;
    }
    TestLoop loop;
    {
        Client c(loop, options("ws", "evil.test", 80));
        c.ws->connect();
        REQUIRE(loop.run_until([&] { return c.closed.has_value(); }, std::chrono::seconds(10)));
        CHECK(!c.opened);
        CHECK(c.closed->error.find("refusing a plaintext connection to 192.0.2.9") !=
              std::string::npos);
    }
    CHECK(loop.close() == 0);
}
