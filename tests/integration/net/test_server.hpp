// An in-test HTTP/WebSocket server on 127.0.0.1 (plain or TLS) and a loop fixture, for driving the
// net clients over real sockets. Everything runs on the test's own loop, in the test's thread.
#pragma once

#include <uv.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loop/uv_scheduler.hpp"
#include "net/tls.hpp"
#include "net/ws_frame.hpp"

namespace myr::test {

// A loop that every test closes with uv_loop_close() == 0, and its scheduler.
class TestLoop {
  public:
    TestLoop();
    ~TestLoop();
    uv_loop_t* get() { return &loop_; }
    loop::Scheduler& sched() { return *sched_; }
    // Runs the loop until `pred` holds or `timeout` passes; returns pred().
    bool run_until(const std::function<bool()>& pred,
                   std::chrono::milliseconds timeout = std::chrono::seconds(20));
    // Runs for a while regardless (to show that something does NOT happen).
    void run_for(std::chrono::milliseconds d);
    // Lets pending closes finish; returns uv_loop_close()'s result.
    int close();

  private:
    uv_loop_t loop_;
    uv_timer_t tick_;
    std::unique_ptr<loop::UvScheduler> sched_;
    bool closed_ = false;
};

class TestServer;

// One accepted connection.
class ServerConn {
  public:
    void send_raw(std::string_view bytes);
    void send_http(int status, const std::vector<std::pair<std::string, std::string>>& headers,
                   std::string_view body);
    // Answers the upgrade request with 101 and the right accept key (or `accept_override`).
    void accept_upgrade(const std::string& accept_override = "");
    // An unmasked frame, as a server sends it.
    void send_frame(net::ws::Opcode op, std::string_view payload, bool fin = true);
    void drop();  // closes TCP now

    const std::string& request() const { return request_; }
    std::string path() const;
    std::string header(std::string_view name) const;
    bool upgraded() const { return upgraded_; }
    bool eof() const { return eof_; }
    const std::vector<net::ws::Event>& events() const { return events_; }

  private:
    friend class TestServer;
    void on_bytes(std::string_view ciphertext_or_plain);
    void on_plain(std::string_view plain);
    void flush_tls();
    void write_wire(std::string data);

    TestServer* server_ = nullptr;
    uv_tcp_t* tcp_ = nullptr;
    std::unique_ptr<net::TlsSession> tls_;
    std::string buffer_;
    std::string request_;
    bool have_request_ = false;
    bool upgraded_ = false;
    bool eof_ = false;
    net::ws::Decoder decoder_{net::ws::Role::server, 64u << 20};
    std::vector<net::ws::Event> events_;
};

class TestServer {
  public:
    // With a TLS configuration (TlsConfig::server) connections speak TLS.
    explicit TestServer(uv_loop_t* loop, std::shared_ptr<net::TlsConfig> tls = nullptr);
    ~TestServer();
    int port() const { return port_; }

    // The request head arrived (before any answer).
    std::function<void(ServerConn&)> on_request;
    // A WebSocket event from the client after the upgrade (default: answer pings, echo close).
    std::function<void(ServerConn&, const net::ws::Event&)> on_event;

    size_t accepted() const { return conns_.size(); }
    ServerConn& conn(size_t i) { return *conns_.at(i); }

  private:
    friend class ServerConn;
    uv_loop_t* loop_;
    std::shared_ptr<net::TlsConfig> tls_;
    uv_tcp_t* listener_ = nullptr;
    int port_ = 0;
    std::vector<std::unique_ptr<ServerConn>> conns_;
};

// Test certificates made with openssl in `dir`: ca.pem (+key), other-ca.pem (an unrelated CA),
// server.pem/server.key (SAN IP:127.0.0.1 and DNS:localhost), ip-only.pem/ip-only.key (SAN
// IP:127.0.0.1), expired.pem/expired.key (SAN IP:127.0.0.1, validity in the past).
struct TestPki {
    std::string dir;
    std::string ca, other_ca;
    std::string server_cert, server_key;
    std::string ip_cert, ip_key;
    std::string expired_cert, expired_key;
};
TestPki make_test_pki(const std::string& dir);

}  // namespace myr::test
