// The clients' timers and "answer later" paths on the fake scheduler: a 30 s connect timeout is
// checked without waiting, and without a packet leaving the machine (the loop never runs the
// connection attempt; it is dropped when the timer ends the request).
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <optional>
#include <thread>

#include "loop/fake_scheduler.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"
#include "net/http_client.hpp"
#include "net/websocket.hpp"
#include "net/ws_frame.hpp"

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

namespace {

// A server on 127.0.0.1 that completes the upgrade, then sends pings without end and never reads
// again: every pong the client queues stays queued.
// A socket listening on 127.0.0.1 on a free port (written to `port`); `rcvbuf` > 0 sets its
// receive buffer.
int listen_loopback(uint16_t& port, int rcvbuf = 0) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd, 1) == 0);
    socklen_t len = sizeof a;
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port = ntohs(a.sin_port);
    return fd;
}

// What a client sent up to and with its blank line (less when it closed first).
std::string read_head(int fd) {
    std::string req;
    char buf[4096];
    while (req.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
    }
    return req;
}

class PingFlooder {
  public:
    // With `burst`, sends those bytes once after the upgrade instead of pings, then waits.
    explicit PingFlooder(std::string burst = "") : burst_(std::move(burst)) {
        // A small receive buffer, inherited by the accepted socket: the client's writes back up
        // soon.
        lfd_ = listen_loopback(port_, 4096);
        thread_ = std::thread([this] { run(); });
    }
    ~PingFlooder() {
        stop_ = true;
        shutdown(lfd_, SHUT_RDWR);  // wakes accept()
        thread_.join();
        close(lfd_);
    }
    uint16_t port() const { return port_; }
    uint64_t pings_sent() const { return pings_; }

  private:
    void run() {
        const int fd = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;
        const std::string req = read_head(fd);
        if (req.find("\r\n\r\n") == std::string::npos) {
            close(fd);
            return;
        }
        const size_t k = req.find("Sec-WebSocket-Key: ") + 19;
        const std::string key = req.substr(k, req.find("\r\n", k) - k);
        const std::string answer =
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Accept: " +
            ws::accept_key(key) + "\r\n\r\n";
        (void)!write(fd, answer.data(), answer.size());
        if (!burst_.empty()) {
            (void)!write(fd, burst_.data(), burst_.size());
            while (!stop_) poll(nullptr, 0, 20);
            close(fd);
            return;
        }
        std::string pings;
        for (int i = 0; i < 256; ++i) pings += "\x89\x7d" + std::string(125, 'p');
        while (!stop_) {
            pollfd p{fd, POLLOUT, 0};
            if (poll(&p, 1, 50) <= 0) continue;
            const ssize_t n = send(fd, pings.data(), pings.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN) break;  // the client dropped the connection
            if (n > 0) pings_ += static_cast<uint64_t>(n) / 127;
        }
        close(fd);
    }

    std::string burst_;
    int lfd_ = -1;
    uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> pings_{0};
    std::thread thread_;
};

}  // namespace

TEST_CASE("ws client: a server that floods pings and never reads is dropped with 1008") {
    loop::Loop uv;
    {
        loop::UvScheduler sched(uv.get());
        PingFlooder server;
        WsOutcome out;
        WsConnectOptions o;
        o.url = Url{"ws", "127.0.0.1", server.port(), "/v1/opamp"};
        o.max_queued = 64 * 1024;  // small, so the kernel's buffers fill in a moment
        WebSocketClient ws(uv.get(), sched, o, ws_handlers(out));
        ws.connect();
        // Before the cap, each of millions of pings queued its own pong and the process grew
        // without bound; this wait then ran out.
        REQUIRE(uv.run_until([&] { return out.code.has_value(); }, 60s));
        MESSAGE("pings sent before the drop: " << server.pings_sent());
        CHECK(out.opened);
        CHECK(*out.code == ws_close::policy);
        CHECK(out.error.find("does not read") != std::string::npos);
        CHECK_FALSE(ws.is_open());
    }
    CHECK(uv.close() == 0);
}

TEST_CASE("ws client: a read of a thousand messages is delivered 64 frames a turn") {
    loop::Loop uv;
    {
        // FakeScheduler: the continuation a full turn posts runs only when the test says so.
        loop::FakeScheduler sched;
        std::string burst;
        for (int i = 0; i < 1000; ++i) burst += std::string("\x82\x03") + "msg";
        PingFlooder server(burst);
        WsOutcome out;
        size_t messages = 0;
        auto h = ws_handlers(out);
        h.on_message = [&messages](std::string_view) { ++messages; };
        WsConnectOptions o;
        o.url = Url{"ws", "127.0.0.1", server.port(), "/v1/opamp"};
        WebSocketClient ws(uv.get(), sched, o, std::move(h));
        ws.connect();
        REQUIRE(uv.run_until([&] { return messages >= 64 && sched.posted() > 0; }, 20s));
        // Once all thousand were handled inside one read callback, the loop blocked meanwhile.
        CHECK(messages < 1000);
        // The rest follows on later turns (run_pending runs each posted continuation in turn).
        for (int i = 0; i < 100 && messages < 1000; ++i) {
            sched.run_pending();
            if (messages < 1000) uv.run_until([&] { return sched.posted() > 0; }, 1s);
        }
        CHECK(messages == 1000);
        CHECK_FALSE(out.code.has_value());
        ws.close(ws_close::normal, "");
        uv.run_until([&] { return out.code.has_value(); }, 1s);
        sched.run_pending();
    }
    CHECK(uv.close() == 0);
}

namespace {

// A proxy that takes one connection, keeps the request head it got and answers with `answer`
// ("" = closes without a word), then holds the connection until the test ends.
class ScriptedProxy {
  public:
    explicit ScriptedProxy(std::string answer) : answer_(std::move(answer)) {
        lfd_ = listen_loopback(port_);
        thread_ = std::thread([this] { run(); });
    }
    ~ScriptedProxy() {
        stop_ = true;
        shutdown(lfd_, SHUT_RDWR);
        thread_.join();
        close(lfd_);
    }
    std::shared_ptr<const ProxyPolicy> policy(const std::string& userinfo = "") const {
        ProxySettings s;
        s.url = "http://" + userinfo + "127.0.0.1:" + std::to_string(port_);
        auto p = ProxyPolicy::make(s, {});
        REQUIRE(p);
        return *p;
    }
    std::string label() const { return "http://127.0.0.1:" + std::to_string(port_); }
    // The head the client sent, once complete.
    std::string request() const {
        std::lock_guard<std::mutex> l(mu_);
        return request_;
    }

  private:
    void run() {
        const int fd = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;
        const std::string req = read_head(fd);
        {
            std::lock_guard<std::mutex> l(mu_);
            request_ = req;
        }
        if (!answer_.empty()) (void)!write(fd, answer_.data(), answer_.size());
        if (!answer_.empty()) {
            while (!stop_) poll(nullptr, 0, 20);
        }
        close(fd);
    }

    std::string answer_;
    int lfd_ = -1;
    uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    mutable std::mutex mu_;
    std::string request_;
    std::thread thread_;
};

// The outcome of one request through `proxy` to `url`.
Result<HttpResponse> through(const ScriptedProxy& proxy, const char* url,
                             const std::string& userinfo = "") {
    loop::Loop uv;
    std::optional<Result<HttpResponse>> got;
    {
        loop::UvScheduler sched(uv.get());
        HttpRequest rq;
        rq.url = *parse_url(url);
        HttpOptions o;
        o.proxy = proxy.policy(userinfo);
        o.allow_insecure_transport = true;  // http:// to a name through the proxy
        HttpClient::Handlers h;
        h.on_done = [&](Result<HttpResponse> r) { got.emplace(std::move(r)); };
        HttpClient c(uv.get(), sched, rq, o, h);
        c.start();
        REQUIRE(uv.run_until([&] { return got.has_value(); }, 20s));
    }
    CHECK(uv.close() == 0);
    return std::move(*got);
}

}  // namespace

TEST_CASE("proxy client: a refusal names the proxy and its status, never its page") {
    ScriptedProxy proxy(
        "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"x\"\r\n"
        "Content-Length: 22\r\n\r\n<html>secret page</htm");
    auto r = through(proxy, "https://a.example/x.tar.gz", "u:p%40ss@");
    REQUIRE_FALSE(r);
    CHECK(r.error().code() == Errc::refused);
    // The proxy's URL carried credentials: shown as ***.
    CHECK(r.error().message() == "https://a.example:443/x.tar.gz: proxy http://***@" +
                                     proxy.label().substr(7) +
                                     " refused CONNECT a.example:443: 407 Proxy Authentication "
                                     "Required");
    // CONNECT with the origin's authority and the credentials, decoded then encoded again.
    CHECK(proxy.request().rfind("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n", 0) ==
          0);
    CHECK(proxy.request().find("Proxy-Authorization: Basic dTpwQHNz\r\n") != std::string::npos);
}

TEST_CASE("proxy client: bytes after the 200 to CONNECT, or no answer at all, are refused") {
    {
        ScriptedProxy proxy("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK\r\n");
        auto r = through(proxy, "https://a.example/x");
        REQUIRE_FALSE(r);
        CHECK(r.error().message().find("sent data after its 200 to CONNECT a.example:443") !=
              std::string::npos);
    }
    {
        ScriptedProxy proxy("");
        auto r = through(proxy, "https://a.example/x");
        REQUIRE_FALSE(r);
        CHECK(r.error().message().find("closed the connection before answering CONNECT") !=
              std::string::npos);
    }
}

TEST_CASE("proxy client: http:// goes to the proxy in absolute form") {
    ScriptedProxy proxy("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
    auto r = through(proxy, "http://a.example:8080/x?y=1", "u:p@");
    REQUIRE_MESSAGE(r, r.error().message());
    CHECK(r->body == "ok");
    CHECK(proxy.request().rfind("GET http://a.example:8080/x?y=1 HTTP/1.1\r\n", 0) == 0);
    CHECK(proxy.request().find("Proxy-Authorization: Basic dTpw\r\n") != std::string::npos);
}
