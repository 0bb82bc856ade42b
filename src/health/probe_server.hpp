// The probe HTTP server on container.healthListen: the product's only HTTP server, so it is small
// and defensive rather than general. Hostile clients cannot hurt the daemon (docs/pid1.md,
// "Probes"):
// - headers (request line included) are capped (8 KiB: 431 and close);
// - a request must arrive complete within the request timeout (5 s), so a slowloris client only
//   holds its own connection; the same time bounds an answer the client does not read and an idle
//   keep-alive connection;
// - one request at a time per connection: while an answer is unsent the connection is not read,
//   so a client that sends and never reads fills its own socket buffers in the kernel, not PID 1's
//   heap; requests sent ahead (pipelining) wait, up to 16 KiB, beyond which the connection closes;
// - bytes held per connection are bounded (the request target, the bytes read ahead, the one
//   answer in flight: 40 KiB) and so is their sum over all connections (512 KiB): over it, the
//   connection that has waited longest (for its request, or for its client to read) is closed;
// - at most 64 connections; a new one beyond that closes the connection that has waited longest,
//   so a new client is always answered;
// - a body or anything the parser refuses gets 400 and close.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/url.hpp"
#include "health/probes.hpp"
#include "health/request_reader.hpp"
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
    ReaderLimits reader;                  // headers 8 KiB, read ahead 16 KiB
    size_t max_answer_bytes = 16 * 1024;  // one rendered answer (the metrics text is <= 8 KiB)
    size_t max_total_bytes = 512 * 1024;  // held by all connections together
    Duration request_timeout = std::chrono::seconds(5);
    size_t max_connections = 64;
};

// What one connection may hold: the reader's budget and the answer in flight.
inline size_t connection_budget(const ServerLimits& l) {
    return RequestReader::budget(l.reader) + l.max_answer_bytes;
}

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
    // The bytes all connections hold (targets, read-ahead, answers in flight), as counted against
    // max_total_bytes, and the part of it libuv's write queues hold unsent.
    size_t held_bytes() const;
    size_t unsent_bytes() const;

    struct Conn;  // one client connection (probe_server.cpp)

  private:
    static void on_connection(uv_stream_t* server, int status) noexcept;
    // The connection that has waited longest, other than `except`; null when none.
    Conn* longest_waiting(const Conn* except, bool holding_only) const;
    // Closes the longest-waiting holders until the total is within max_total_bytes.
    void enforce_total();

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
