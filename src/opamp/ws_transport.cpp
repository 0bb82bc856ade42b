#include "opamp/ws_transport.hpp"

#include "net/websocket.hpp"

namespace myr::opamp {

namespace {

class WsTransport : public Transport {
  public:
    WsTransport(uv_loop_t* loop, loop::Scheduler& sched, const WsTransportOptions& o,
                HttpHeaders headers, Handlers handlers)
        : handlers_(std::move(handlers)) {
        net::WsConnectOptions co;
        co.url = o.url;
        co.headers = std::move(headers);
        co.ca_file = o.ca_file;
        co.allow_insecure_transport = o.allow_insecure_transport;
        co.max_message = o.max_message;
        co.proxy = o.proxy;
        net::WebSocketClient::Handlers h;
        h.on_open = [this] {
            if (handlers_.on_open) handlers_.on_open();
        };
        h.on_message = [this](std::string_view m) {
            if (handlers_.on_message) handlers_.on_message(m);
        };
        h.on_closed = [this](uint16_t code, std::string reason, std::optional<net::WsRejection> rej,
                             std::string error) {
            TransportClosed c;
            c.code = code;
            c.reason = std::move(reason);
            c.error = std::move(error);
            if (rej) {
                c.http_status = rej->http_status;
                c.retry_after = rej->retry_after;
                if (c.error.empty())
                    c.error = "upgrade answered with HTTP " + std::to_string(rej->http_status);
            }
            if (handlers_.on_closed) handlers_.on_closed(std::move(c));
        };
        client_ = std::make_unique<net::WebSocketClient>(loop, sched, std::move(co), std::move(h));
    }
    void connect() override { client_->connect(); }
    Status send(std::string_view message) override { return client_->send_binary(message); }
    void close(uint16_t code, std::string_view reason) override { client_->close(code, reason); }

  private:
    Handlers handlers_;
    std::unique_ptr<net::WebSocketClient> client_;
};

}  // namespace

TransportFactory ws_transport_factory(uv_loop_t* loop, loop::Scheduler& sched,
                                      WsTransportOptions options) {
    return [loop, &sched, options](HttpHeaders headers, Transport::Handlers handlers) {
        return std::unique_ptr<Transport>(
            new WsTransport(loop, sched, options, std::move(headers), std::move(handlers)));
    };
}

}  // namespace myr::opamp
