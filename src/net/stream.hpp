// A client byte stream on the loop: name resolution (uv_getaddrinfo, on libuv's work queue), the
// plaintext-transport rule, TCP connect over each resolved address in turn, then optionally TLS.
// The owner sees plaintext only. Shared by the HTTP and WebSocket clients.
//
// Lifetime: destroying the Stream (even from inside a handler) drops the connection at once and no
// handler runs afterwards; libuv memory is released in close callbacks. Sockets and name lookups
// run on `loop`; what is answered "later" goes through `sched`.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/url.hpp"
#include "loop/scheduler.hpp"
#include "net/proxy.hpp"

namespace myr::net {

class TlsConfig;

struct StreamOptions {
    std::string host;  // a name, an IPv4 literal or an IPv6 literal without brackets
    uint16_t port = 0;
    bool tls = false;
    std::string ca_file;  // "" = system store
    // When set, used instead of reading ca_file: the CA bundle parsed once (off the loop, by
    // load_tls_client) and shared by every connection of one configuration.
    std::shared_ptr<TlsConfig> tls_config;
    std::string tls_server_name;  // "" = host; the name the certificate must carry
    // Plaintext to a resolved address outside 127.0.0.0/8 and ::1 is refused unless this is set.
    bool allow_insecure_transport = false;
    // Names the URL in messages, e.g. "ws://example.com:80" (default "host:port").
    std::string label;
    // Through an HTTP proxy (net/proxy.hpp): the TCP connection goes to the proxy. With `tunnel`
    // the stream first asks for `CONNECT host:port` and runs TLS (when `tls`) to the origin
    // through it, checking the origin's name; without, the caller speaks to the proxy itself (an
    // absolute-form HTTP request).
    std::optional<ProxyHop> proxy;
    bool tunnel = true;
};

class Stream {
  public:
    struct Handlers {
        std::function<void()> on_connected;             // TCP (and TLS) established
        std::function<void(std::string_view)> on_data;  // plaintext from the peer
        // Once, unless close() was called first: ok when the peer closed the connection
        // (EOF / close_notify), else what failed ("connect 127.0.0.1:9: connection refused").
        std::function<void(Status)> on_end;
    };

    Stream(uv_loop_t* loop, loop::Scheduler& sched, StreamOptions opts, Handlers handlers);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    // Starts resolving and connecting. Failures, even immediate ones, come through on_end later.
    void start();
    // Queues plaintext for sending (only after on_connected).
    void write(std::string_view data);
    // Bytes queued in the kernel-facing write path and not yet written, for backpressure.
    size_t pending_write_bytes() const;
    // Stop / restart reading from the socket (backpressure for slow consumers).
    void pause_reading();
    void resume_reading();
    // Flushes queued writes (and a TLS close_notify), then closes. No handler runs afterwards.
    void close();
    // The address connected to, e.g. "127.0.0.1:8443" ("" before connecting).
    std::string peer() const;

    class Impl;

  private:
    Impl* impl_;
};

// The stream to a URL's host: its port (or the scheme's default), TLS for https:// and wss://,
// labelled with the URL for messages.
StreamOptions stream_to(const Url& url, std::string ca_file, bool allow_insecure_transport,
                        std::shared_ptr<TlsConfig> tls_config = nullptr);

// Routes `so` (made by stream_to for `url`) through the proxy `policy` picks for `url`; null or
// no proxy for that host: direct. `tunnel`: CONNECT (https://, ws://, wss://) rather than an
// absolute-form request the caller writes (http://). Fails when the credentials cannot be read.
[[nodiscard]] Status route_through_proxy(StreamOptions& so, const Url& url,
                                         const ProxyPolicy* policy, bool tunnel);

// Parses a client TLS configuration (the CA bundle in `ca_file`, "" = system store) on the work
// queue, since reading and parsing ~200 KB of PEM must not hold the loop, and hands it to `done` on
// the loop. Meant to run once per configuration; the result goes into StreamOptions::tls_config.
// `done` may run after its requester is gone: tie it to the owner with a loop::Guard.
void load_tls_client(loop::Scheduler& sched, std::string ca_file,
                     std::function<void(Result<std::shared_ptr<TlsConfig>>)> done);

// Whether a numeric address is loopback (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104).
bool is_loopback_address(const std::string& numeric);

}  // namespace myr::net
