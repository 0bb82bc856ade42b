// The seam the agent sits on besides the Scheduler: one WebSocket connection (Transport), and the
// jittered exponential backoff. The real transport wraps net::WebSocketClient (ws_transport.hpp);
// the unit tests put a scripted one in its place.
#pragma once

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

namespace myr::opamp {

// Why a connection (or a connection attempt) ended.
struct TransportClosed {
    uint16_t code = 0;                    // WebSocket close code; 0 when there was none
    std::string reason;                   // close reason from the peer
    int http_status = 0;                  // the upgrade was answered with this non-101 status
    std::optional<Duration> retry_after;  // Retry-After of that answer
    std::string error;                    // local error text (connect refused, TLS, oversize, ...)
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// One WebSocket connection. on_closed is called exactly once after connect(), also when the attempt
// fails or after close(); the transport may be destroyed only outside its own callbacks.
class Transport {
  public:
    struct Handlers {
        std::function<void()> on_open;
        std::function<void(std::string_view)> on_message;  // one binary message
        std::function<void(TransportClosed)> on_closed;
    };
    virtual ~Transport() = default;
    virtual void connect() = 0;
    [[nodiscard]] virtual Status send(std::string_view message) = 0;
    virtual void close(uint16_t code, std::string_view reason) = 0;
};

// Makes the transport for one connection attempt, with the upgrade request's extra headers.
using TransportFactory =
    std::function<std::unique_ptr<Transport>(HttpHeaders headers, Transport::Handlers handlers)>;

// Exponential backoff with jitter: the n-th delay is min(initial × factor^n, max), spread uniformly
// by ±jitter around that value and capped at max again. `random01` returns values in [0, 1).
class Backoff {
  public:
    struct Params {
        Duration initial = std::chrono::milliseconds(500);
        double factor = 1.5;
        Duration max = std::chrono::seconds(60);
        double jitter = 0.5;
    };
    explicit Backoff(std::function<double()> random01);
    Backoff(Params p, std::function<double()> random01);

    Duration next();
    void reset() { attempt_ = 0; }
    unsigned attempts() const { return attempt_; }

  private:
    double base_ms(unsigned n) const;

    Params p_;
    std::function<double()> random01_;
    unsigned attempt_ = 0;
};

// Jitter from the kernel's random source (core/random.hpp): agents must not reconnect in lock
// step.
std::function<double()> default_random01();

}  // namespace myr::opamp
