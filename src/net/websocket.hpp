// A WebSocket client (RFC 6455) for the OpAMP transport: one connection on the caller's libuv loop.
//
// connect() resolves the host off the loop, refuses ws:// to a non-loopback resolved address unless
// allowed, opens TCP (and TLS for wss://), performs the upgrade handshake, then delivers whole
// binary messages. Text messages are refused with close 1003 (OpAMP is binary only; RFC 6455
// 7.4.1 names 1003 for a data type the endpoint cannot accept). Everything
// happens on the loop passed in; no threads besides libuv's work queue (name resolution).
//
// Lifetime: the object may be destroyed at any time, including from inside one of its own
// handlers; the socket is then dropped without a close handshake and no further handler runs.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/time.hpp"
#include "core/url.hpp"
#include "loop/scheduler.hpp"
#include "net/proxy.hpp"

namespace myr::net {

struct WsConnectOptions {
    Url url;                                                   // ws:// or wss://
    std::vector<std::pair<std::string, std::string>> headers;  // e.g. Authorization: Bearer …
    std::string ca_file;                    // "" = /etc/ssl/certs/ca-certificates.crt
    bool allow_insecure_transport = false;  // ws:// to a non-loopback address
    size_t max_message = 16u << 20;         // above → close 1009
    // Which proxy the connection goes through (null = direct), always by CONNECT.
    std::shared_ptr<const ProxyPolicy> proxy;
    // Bytes we may have queued and not yet written (the peer is not reading). Above: stop reading
    // and drop the connection, reported as 1008. Pongs are coalesced to one per read.
    size_t max_queued = 1u << 20;
    Duration handshake_timeout = std::chrono::seconds(30);  // resolve + connect + TLS + upgrade
};

// The upgrade was answered with a status other than 101.
struct WsRejection {
    int http_status = 0;
    std::optional<Duration> retry_after;  // from Retry-After (seconds or HTTP-date)
    std::string body_excerpt;             // the first bytes of the body, for logs
};

// Close codes used by the client (RFC 6455 section 7.4.1).
namespace ws_close {
inline constexpr uint16_t normal = 1000;
inline constexpr uint16_t going_away = 1001;
inline constexpr uint16_t protocol_error = 1002;
inline constexpr uint16_t unsupported_data = 1003;
inline constexpr uint16_t no_status = 1005;  // never sent: the peer's close carried no code
inline constexpr uint16_t abnormal = 1006;   // never sent: the connection ended without a close
inline constexpr uint16_t invalid_payload = 1007;
inline constexpr uint16_t policy = 1008;
inline constexpr uint16_t too_big = 1009;
inline constexpr uint16_t internal_error = 1011;
inline constexpr uint16_t tls_failure = 1015;  // never sent: the TLS handshake failed
}  // namespace ws_close

class WebSocketClient {
  public:
    struct Handlers {
        std::function<void()> on_open;
        // A whole (reassembled) binary message.
        std::function<void(std::string_view message)> on_message;
        // Exactly once per connect(): after a close handshake, a protocol error, a network error,
        // a TLS failure or a rejected upgrade. `code` is the peer's close code, the code we sent on
        // a protocol error (1002/1009), 1006 for a connection lost without close, 1015 for TLS.
        // `rejection` is set when the upgrade got a non-101 answer. `error` says what happened,
        // for logs ("" after a clean close we asked for).
        std::function<void(uint16_t code, std::string reason, std::optional<WsRejection> rejection,
                           std::string error)>
            on_closed;
    };

    WebSocketClient(uv_loop_t* loop, loop::Scheduler& sched, WsConnectOptions opts,
                    Handlers handlers);
    ~WebSocketClient();
    WebSocketClient(const WebSocketClient&) = delete;
    WebSocketClient& operator=(const WebSocketClient&) = delete;

    // Starts a connection. Also valid again after on_closed ran (a reconnect with the same
    // options). Any failure, even an immediate one (bad URL, refused transport), is reported
    // through on_closed, later on the loop, never from inside connect().
    void connect();
    // Queues one binary message (masked, unfragmented). Fails when the connection is not open.
    [[nodiscard]] Status send_binary(std::string_view data);
    // Starts the close handshake; on_closed follows when the peer answers or after a short timeout.
    // Before the connection is open, aborts the attempt (on_closed with 1000 and error "").
    void close(uint16_t code, std::string_view reason);
    // True between on_open and the start of closing.
    bool is_open() const;

    class Impl;

  private:
    Impl* impl_;  // owned; its libuv parts free themselves once their handles are closed
};

}  // namespace myr::net
