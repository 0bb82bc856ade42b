// The probe HTTP server on container.healthListen: the product's only HTTP server, so it is small
// and defensive rather than general. Hostile clients cannot hurt the daemon:
// - headers (request line included) are capped (8 KiB: 431 and close);
// - a request must arrive complete within the request timeout (5 s), so a slowloris client only
//   holds its own connection, and an idle keep-alive connection is closed after the same time;
// - at most 64 connections; a new one beyond that closes the connection that has waited longest
//   for a request (idle keep-alive, silent since accepted, or slowest to send), so a new client is
//   always answered; only when every other slot is writing an answer is it closed at once;
// - one request at a time: bytes after a complete request (pipelining), a body, or anything the
//   parser refuses get 400 and close.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/url.hpp"
#include "health/probes.hpp"
#include "loop/handle.hpp"
#include "loop/loop.hpp"
#include "loop/scheduler.hpp"

namespace myr::health {

struct Response {
    int status = 200;
    std::string body;
    bool allow_header = false;  // 405 carries "Allow: GET, HEAD"
    bool metrics = false;       // the Prometheus text format: its content type, the body as is
};

// The Prometheus text format's content type (exposition format 0.0.4).
inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// The routing, pure: GET|HEAD /healthz, /readyz and (when on) /metrics; other paths 404, other
// methods 405.
Response route(std::string_view method, std::string_view target, const Probes& probes);

// The bytes of a response; HEAD leaves the body out but keeps its length.
std::string render(const Response& r, bool head, bool keep_alive);

struct ServerLimits {
    size_t max_header_bytes = 8 * 1024;
    Duration request_timeout = std::chrono::seconds(5);
    size_t max_connections = 64;
};

class ProbeServer {
  public:
    ProbeServer(loop::Loop& loop, loop::Scheduler& sched, Probes probes, ServerLimits limits = {});
    ~ProbeServer();
    ProbeServer(const ProbeServer&) = delete;
    ProbeServer& operator=(const ProbeServer&) = delete;

    // Binds and listens: an IPv4 or IPv6 literal, or a name resolved now (localhost is 127.0.0.1);
    // port 0 picks a free one, see port().
    [[nodiscard]] Status listen(const HostPort& where);
    int port() const { return port_; }
    size_t connections() const { return conns_.size(); }

    struct Conn;  // one client connection (probe_server.cpp)

  private:
    static void on_connection(uv_stream_t* server, int status) noexcept;

    loop::Loop& loop_;
    loop::Scheduler& sched_;
    Probes probes_;
    ServerLimits limits_;
    loop::Handle<uv_tcp_t> listener_;
    int port_ = 0;
    std::set<Conn*> conns_;

    friend struct Conn;
};

}  // namespace myr::health
