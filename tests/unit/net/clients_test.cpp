// The clients' timers and "answer later" paths on the fake scheduler: a 30 s connect timeout is
// checked without waiting, and without a packet leaving the machine (the loop never runs the
// connection attempt; it is dropped when the timer ends the request).
#include <doctest/doctest.h>

#include <optional>

#include "loop/fake_scheduler.hpp"
#include "loop/loop.hpp"
#include "net/http_client.hpp"
#include "net/websocket.hpp"

using namespace myr;
using namespace myr::net;
using namespace std::chrono_literals;

namespace {

struct WsOutcome {
    bool opened = false;
    std::optional<uint16_t> code;
    std::string error;
};

WebSocketClient::Handlers ws_handlers(WsOutcome& out) {
    WebSocketClient::Handlers h;
    h.on_open = [&out] { out.opened = true; };
    h.on_closed = [&out](uint16_t code, std::string, std::optional<WsRejection>, std::string e) {
        out.code = code;
        out.error = std::move(e);
    };
    return h;
}

}  // namespace

TEST_CASE("http client: a refused request is answered on a later turn, never inside start()") {
    loop::Loop uv;
    {
        loop::FakeScheduler sched;
        HttpRequest req;
        req.url = Url{"ftp", "127.0.0.1", 21, "/x"};
        std::optional<Result<HttpResponse>> got;
        HttpClient::Handlers h;
        h.on_done = [&](Result<HttpResponse> r) { got.emplace(std::move(r)); };
        HttpClient c(uv.get(), sched, req, {}, h);
        c.start();
        CHECK_FALSE(got.has_value());
        sched.run_pending();
        REQUIRE(got.has_value());
        REQUIRE_FALSE(got->ok());
        CHECK(got->error().message().find("not an http:// or https:// URL") != std::string::npos);
        CHECK(got->error().code() == Errc::invalid);
    }
    CHECK(uv.close() == 0);
}

TEST_CASE("http client: cancel() drops an answer already posted") {
    loop::Loop uv;
    {
        loop::FakeScheduler sched;
        HttpRequest req;
        req.url = Url{"ftp", "127.0.0.1", 21, "/x"};
        int done = 0;
        HttpClient::Handlers h;
        h.on_done = [&](Result<HttpResponse>) { ++done; };
        HttpClient c(uv.get(), sched, req, {}, h);
        c.start();
        c.cancel();
        sched.run_pending();
        CHECK(done == 0);
    }
    CHECK(uv.close() == 0);
}

TEST_CASE("http client: the connect timeout ends a request that never connects") {
    loop::Loop uv;
    {
        loop::FakeScheduler sched;
        HttpRequest req;
        req.url = Url{"http", "192.0.2.1", 80, "/artifact"};  // TEST-NET-1
        HttpOptions opts;
        opts.allow_insecure_transport = true;
        std::optional<Result<HttpResponse>> got;
        HttpClient::Handlers h;
        h.on_done = [&](Result<HttpResponse> r) { got.emplace(std::move(r)); };
        HttpClient c(uv.get(), sched, req, opts, h);
        c.start();
        sched.advance(29s);
        CHECK_FALSE(got.has_value());
        sched.advance(1s);
        REQUIRE(got.has_value());
        REQUIRE_FALSE(got->ok());
        CHECK(got->error().message() ==
              "http://192.0.2.1:80/artifact: connect timed out after 30s");
        CHECK(got->error().code() == Errc::timeout);
        CHECK(sched.armed_timers() == 0);
    }
    CHECK(uv.close() == 0);
}

TEST_CASE("http client: the total timeout fires before a longer connect timeout") {
    loop::Loop uv;
    {
        loop::FakeScheduler sched;
        HttpRequest req;
        req.url = Url{"http", "192.0.2.1", 80, "/"};
        HttpOptions opts;
        opts.allow_insecure_transport = true;
        opts.total_timeout = 10s;
        std::optional<Result<HttpResponse>> got;
        HttpClient::Handlers h;
        h.on_done = [&](Result<HttpResponse> r) { got.emplace(std::move(r)); };
        HttpClient c(uv.get(), sched, req, opts, h);
        c.start();
        sched.advance(10s);
        REQUIRE(got.has_value());
        CHECK(got->error().message().find("did not complete within 10s") != std::string::npos);
    }
    CHECK(uv.close() == 0);
}

TEST_CASE("ws client: a bad URL is reported through on_closed on a later turn") {
    loop::Loop uv;
    {
        loop::FakeScheduler sched;
        WsOutcome out;
        WsConnectOptions o;
        o.url = Url{"http", "127.0.0.1", 80, "/"};
        WebSocketClient ws(uv.get(), sched, o, ws_handlers(out));
        ws.connect();
        CHECK_FALSE(out.code.has_value());
        sched.run_pending();
        REQUIRE(out.code.has_value());
        CHECK(*out.code == ws_close::abnormal);
        CHECK(out.error.find("not a ws:// or wss:// URL") != std::string::npos);
    }
    CHECK(uv.close() == 0);
}

TEST_CASE("ws client: the handshake timeout ends an upgrade that never completes") {
    loop::Loop uv;
    {
        loop::FakeScheduler sched;
        WsOutcome out;
        WsConnectOptions o;
        o.url = Url{"ws", "192.0.2.1", 80, "/v1/opamp"};
        o.allow_insecure_transport = true;
        WebSocketClient ws(uv.get(), sched, o, ws_handlers(out));
        ws.connect();
        sched.advance(29s);
        CHECK_FALSE(out.code.has_value());
        sched.advance(1s);
        REQUIRE(out.code.has_value());
        CHECK(*out.code == ws_close::abnormal);
        CHECK(out.error.find("not established within 30s") != std::string::npos);
        CHECK_FALSE(out.opened);
    }
    CHECK(uv.close() == 0);
}

TEST_CASE("ws client: close() while connecting answers on a later turn with the code asked for") {
    loop::Loop uv;
    {
        loop::FakeScheduler sched;
        WsOutcome out;
        WsConnectOptions o;
        o.url = Url{"ws", "192.0.2.1", 80, "/"};
        o.allow_insecure_transport = true;
        WebSocketClient ws(uv.get(), sched, o, ws_handlers(out));
        ws.connect();
        ws.close(ws_close::normal, "bye");
        CHECK_FALSE(out.code.has_value());
        sched.run_pending();
        REQUIRE(out.code.has_value());
        CHECK(*out.code == ws_close::normal);
        CHECK(out.error.empty());
    }
    CHECK(uv.close() == 0);
}
