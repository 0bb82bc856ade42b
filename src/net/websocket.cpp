#include "net/websocket.hpp"

#include <strings.h>

#include <array>
#include <utility>

#include "core/log.hpp"
#include "core/random.hpp"
#include "net/http_response.hpp"
#include "net/stream.hpp"
#include "net/url_text.hpp"
#include "net/ws_frame.hpp"

namespace myr::net {
namespace {

// How long to wait for the peer's answer to our close frame before dropping the connection.
constexpr Duration close_timeout = std::chrono::seconds(5);
// What a rejected upgrade keeps of the answer's body, for logs.
constexpr size_t excerpt_limit = 512;
// Frames decoded in one turn of the loop before it is given back.
constexpr size_t kFramesPerTurn = 64;

}  // namespace

// Lifetime: owned by the WebSocketClient. Its libuv parts (Stream, Timers) free themselves, so
// the Impl can be deleted at any time; `guard_` tells code running inside a handler that it was.
class WebSocketClient::Impl {
  public:
    Impl(uv_loop_t* loop, loop::Scheduler& sched, WsConnectOptions opts, Handlers handlers)
        : loop_(loop),
          sched_(sched),
          opts_(std::move(opts)),
          h_(std::move(handlers)),
          handshake_timer_(sched.timer()),
          close_timer_(sched.timer()),
          decoder_(ws::Role::client, opts_.max_message) {}

    void connect();
    Status send_binary(std::string_view data);
    void close(uint16_t code, std::string_view reason);
    bool is_open() const { return state_ == State::open; }

  private:
    enum class State { idle, connecting, handshaking, open, closing, closed };

    void on_connected();
    void on_data(std::string_view data);
    void on_end(Status st);
    void on_upgrade_head(const HttpHead& head);
    void handle_frames(std::string_view data);
    void resume_frames();
    // False when the frame would pass opts_.max_queued: the connection is then being dropped.
    bool send_frame(ws::Opcode op, std::string_view payload);
    void overflow();
    void protocol_failure(uint16_t code, const std::string& why);
    void finish(uint16_t code, std::string reason, std::optional<WsRejection> rejection,
                std::string error);
    void finish_later(uint16_t code, std::string error);
    void reject();

    uv_loop_t* loop_;
    loop::Scheduler& sched_;
    WsConnectOptions opts_;
    Handlers h_;
    std::string label_;
    State state_ = State::idle;
    std::unique_ptr<Stream> stream_;
    std::unique_ptr<ResponseParser> parser_;
    std::string key_;
    std::unique_ptr<loop::Timer> handshake_timer_;
    std::unique_ptr<loop::Timer> close_timer_;
    ws::Decoder decoder_;
    // The close frame we sent, reported when the peer answers it.
    uint16_t sent_code_ = 0;
    std::string sent_reason_;
    // Bytes read but not yet decoded because this turn's frame budget was spent; reading is
    // paused while there are any.
    std::string backlog_;
    // A non-101 answer being read.
    std::optional<WsRejection> rejection_;
    // Dropped when a connection ends, so an answer posted for it cannot reach the next one;
    // expired also when a handler destroyed the client.
    loop::Guard guard_;
};

void WebSocketClient::Impl::connect() {
    if (state_ != State::idle && state_ != State::closed) {
        log::warn("websocket: connect() while a connection is active; ignored", {{"url", label_}});
        return;
    }
    label_ = url_label(opts_.url);
    decoder_ = ws::Decoder(ws::Role::client, opts_.max_message);
    rejection_.reset();
    backlog_.clear();
    sent_code_ = 0;
    sent_reason_.clear();
    state_ = State::connecting;

    if (opts_.url.scheme != "ws" && opts_.url.scheme != "wss") {
        finish_later(ws_close::abnormal, label_ + ": not a ws:// or wss:// URL");
        return;
    }
    for (const auto& [k, v] : opts_.headers) {
        if (k.empty() || unsafe_header_text(k) || unsafe_header_text(v) ||
            k.find(':') != std::string::npos) {
            finish_later(ws_close::abnormal, label_ + ": invalid request header \"" + k + "\"");
            return;
        }
    }
    if (unsafe_header_text(opts_.url.path) || opts_.url.path.find(' ') != std::string::npos) {
        finish_later(ws_close::abnormal, label_ + ": invalid path");
        return;
    }

    StreamOptions so = stream_to(opts_.url, opts_.ca_file, opts_.allow_insecure_transport);
    if (auto routed = route_through_proxy(so, opts_.url, opts_.proxy.get(), true); !routed) {
        finish_later(ws_close::abnormal, routed.error().message());
        return;
    }
    Stream::Handlers sh;
    sh.on_connected = [this] { on_connected(); };
    sh.on_data = [this](std::string_view d) { on_data(d); };
    sh.on_end = [this](Status st) { on_end(std::move(st)); };
    stream_ = std::make_unique<Stream>(loop_, sched_, std::move(so), std::move(sh));
    if (opts_.handshake_timeout > Duration::zero()) {
        handshake_timer_->start(opts_.handshake_timeout, [this] {
            finish(ws_close::abnormal, "", std::nullopt,
                   label_ + ": WebSocket connection not established within " +
                       format_duration(opts_.handshake_timeout));
        });
    }
    stream_->start();
}

void WebSocketClient::Impl::finish_later(uint16_t code, std::string error) {
    // on_closed never runs from inside connect() or close(): the caller may not expect re-entry.
    sched_.post(guard_.bind([this, code, error = std::move(error)]() mutable {
        finish(code, "", std::nullopt, std::move(error));
    }));
}

void WebSocketClient::Impl::on_connected() {
    state_ = State::handshaking;
    key_ = ws::make_client_key();
    std::string req =
        "GET " + (opts_.url.path.empty() ? std::string("/") : opts_.url.path) + " HTTP/1.1\r\n";
    req += "Host: " + host_header(opts_.url) + "\r\n";
    req += "Upgrade: websocket\r\nConnection: Upgrade\r\n";
    req += "Sec-WebSocket-Key: " + key_ + "\r\n";
    req += "Sec-WebSocket-Version: 13\r\n";
    bool has_agent = false;
    for (const auto& [k, v] : opts_.headers) {
        if (strcasecmp(k.c_str(), "user-agent") == 0) has_agent = true;
    }
    if (!has_agent) req += "User-Agent: myriarch-updater\r\n";
    for (const auto& [k, v] : opts_.headers) req += k + ": " + v + "\r\n";
    req += "\r\n";

    ResponseParser::Handlers ph;
    ph.on_head = [this](const HttpHead& head) -> Status {
        if (head.status != 101) {
            rejection_ = WsRejection{};
            rejection_->http_status = head.status;
            if (auto ra = head.header("Retry-After")) {
                rejection_->retry_after = parse_retry_after(*ra, wall_now());
            }
        }
        return {};
    };
    ph.on_body = [this](std::string_view piece) -> Status {
        if (rejection_ && rejection_->body_excerpt.size() < excerpt_limit) {
            rejection_->body_excerpt.append(
                piece.substr(0, excerpt_limit - rejection_->body_excerpt.size()));
        }
        return {};
    };
    HttpLimits limits;
    limits.max_head = 64u << 10;
    limits.max_body = 1u << 20;  // an error page, not a download
    parser_ = std::make_unique<ResponseParser>(limits, std::move(ph), /*stop_at_upgrade=*/true);
    stream_->write(req);
}

void WebSocketClient::Impl::on_data(std::string_view data) {
    if (state_ == State::handshaking) {
        auto used = parser_->feed(data);
        if (!used) {
            if (rejection_) {
                reject();  // the body of an error answer broke a cap; the status is what counts
                return;
            }
            finish(ws_close::abnormal, "", std::nullopt,
                   label_ + ": WebSocket upgrade: " + used.error().message());
            return;
        }
        if (!parser_->head_done()) return;
        if (rejection_) {
            if (parser_->complete()) reject();
            return;
        }
        const HttpHead& head = parser_->head();
        on_upgrade_head(head);
        if (state_ != State::open) return;
        auto alive = guard_.watch();
        if (h_.on_open) {
            auto cb = h_.on_open;
            cb();
            if (alive.expired() || state_ != State::open) return;
        }
        handle_frames(data.substr(*used));
        return;
    }
    if (!backlog_.empty()) {
        backlog_.append(data);  // what a paused stream still had: after the backlog, in order
        return;
    }
    if (state_ == State::open || state_ == State::closing) handle_frames(data);
}

void WebSocketClient::Impl::resume_frames() {
    std::string rest = std::move(backlog_);
    backlog_.clear();
    if (stream_) stream_->resume_reading();
    if (state_ == State::open || state_ == State::closing) handle_frames(rest);
}

void WebSocketClient::Impl::reject() {
    WsRejection r = rejection_.value_or(WsRejection{});
    std::string error =
        label_ + ": WebSocket upgrade refused with HTTP " + std::to_string(r.http_status);
    if (r.http_status == 401 || r.http_status == 403) {
        error += " (check the enrollment token)";
    }
    finish(ws_close::abnormal, "", std::move(r), std::move(error));
}

void WebSocketClient::Impl::on_upgrade_head(const HttpHead& head) {
    std::string why;
    if (!head.header_has_token("Upgrade", "websocket")) {
        why = "no \"Upgrade: websocket\" in the 101 answer";
    } else if (!head.header_has_token("Connection", "upgrade")) {
        why = "no \"Connection: Upgrade\" in the 101 answer";
    } else if (head.header("Sec-WebSocket-Accept").value_or("") != ws::accept_key(key_)) {
        why = "Sec-WebSocket-Accept does not match the key sent";
    } else if (head.header("Sec-WebSocket-Extensions")) {
        why = "the server chose an extension the client did not offer";
    } else if (head.header("Sec-WebSocket-Protocol")) {
        why = "the server chose a subprotocol the client did not offer";
    }
    if (!why.empty()) {
        finish(ws_close::protocol_error, "", std::nullopt, label_ + ": WebSocket upgrade: " + why);
        return;
    }
    handshake_timer_->stop();
    parser_.reset();
    state_ = State::open;
}

void WebSocketClient::Impl::handle_frames(std::string_view data) {
    auto alive = guard_.watch();
    // RFC 6455 5.5.3: only the most recent ping needs an answer, so a ping flood costs one pong
    // per read, not one per ping.
    std::optional<std::string> pong;
    // A read may carry thousands of small frames; after kFramesPerTurn the loop is given back
    // (probes, signals, timers) and the rest is decoded on a later turn.
    size_t frames = 0;
    for (;;) {
        if (++frames > kFramesPerTurn && !data.empty()) {
            backlog_.assign(data);
            if (stream_) stream_->pause_reading();
            sched_.post(guard_.bind([this] { resume_frames(); }));
            data = {};
        }
        ws::Event ev = decoder_.next(data);
        switch (ev.kind) {
            case ws::Event::Kind::none:
                if (pong && state_ == State::open) send_frame(ws::Opcode::pong, *pong);
                return;
            case ws::Event::Kind::message:
                if (ev.opcode == ws::Opcode::text) {
                    protocol_failure(ws_close::unsupported_data,
                                     "text message received; OpAMP uses binary messages only");
                    return;
                }
                if (state_ == State::open && h_.on_message) {
                    auto cb = h_.on_message;
                    cb(ev.data);
                    if (alive.expired()) return;
                    if (state_ != State::open && state_ != State::closing) return;
                }
                break;
            case ws::Event::Kind::ping:
                pong = std::move(ev.data);
                break;
            case ws::Event::Kind::pong:
                break;
            case ws::Event::Kind::close:
                if (state_ == State::closing) {
                    // The peer answered our close: the handshake is complete.
                    finish(sent_code_, sent_reason_, std::nullopt, "");
                    return;
                }
                // Echo the code (RFC 6455 section 5.5.1), then the server closes TCP.
                send_frame(ws::Opcode::close, ws::close_payload(ev.code, ""));
                finish(ev.code, ev.data, std::nullopt,
                       ev.code == ws_close::normal || ev.code == ws_close::going_away
                           ? ""
                           : label_ + ": closed by the server with code " +
                                 std::to_string(ev.code) + (ev.data.empty() ? "" : ": " + ev.data));
                return;
            case ws::Event::Kind::error:
                protocol_failure(ev.code, ev.data);
                return;
        }
    }
}

void WebSocketClient::Impl::protocol_failure(uint16_t code, const std::string& why) {
    send_frame(ws::Opcode::close, ws::close_payload(code, why));
    finish(code, why, std::nullopt, label_ + ": WebSocket protocol error from the server: " + why);
}

bool WebSocketClient::Impl::send_frame(ws::Opcode op, std::string_view payload) {
    if (!stream_ || state_ == State::closed) return false;
    if (stream_->pending_write_bytes() + payload.size() > opts_.max_queued) {
        overflow();
        return false;
    }
    std::array<uint8_t, 4> mask;
    random_bytes(mask.data(), mask.size());
    std::string frame;
    frame.reserve(payload.size() + 14);
    ws::encode_frame(frame, op, payload, true, mask);
    stream_->write(frame);
    return true;
}

void WebSocketClient::Impl::overflow() {
    // The peer sends and does not read: nothing more is read or queued. A close frame could not
    // reach it either, so the socket is dropped (with what is queued) rather than flushed, and
    // the end is reported as a policy violation on a later turn, outside the caller's send.
    const std::string error = label_ + ": the server does not read what is sent (over " +
                              std::to_string(opts_.max_queued) + " bytes queued); dropped";
    stream_->pause_reading();
    stream_.reset();
    state_ = State::closing;
    sent_code_ = ws_close::policy;
    sched_.post(guard_.bind([this, error] { finish(ws_close::policy, "", std::nullopt, error); }));
}

Status WebSocketClient::Impl::send_binary(std::string_view data) {
    if (state_ != State::open) return fail(label_ + ": WebSocket is not open");
    if (!send_frame(ws::Opcode::binary, data)) {
        return fail(label_ + ": the server does not read what is sent; connection dropped");
    }
    return {};
}

void WebSocketClient::Impl::close(uint16_t code, std::string_view reason) {
    switch (state_) {
        case State::idle:
        case State::closed:
        case State::closing:
            return;
        case State::connecting:
        case State::handshaking:
            handshake_timer_->stop();
            stream_.reset();
            sched_.post(guard_.bind([this, code] { finish(code, "", std::nullopt, ""); }));
            state_ = State::closing;
            return;
        case State::open:
            break;
    }
    sent_code_ = ws::valid_close_code(code) ? code : ws_close::normal;
    sent_reason_ = std::string(reason);
    send_frame(ws::Opcode::close, ws::close_payload(sent_code_, sent_reason_));
    sent_reason_ = ws::close_payload(sent_code_, sent_reason_).substr(2);
    state_ = State::closing;
    close_timer_->start(close_timeout, [this] {
        finish(sent_code_, sent_reason_, std::nullopt,
               label_ + ": the server did not answer the close frame within " +
                   format_duration(close_timeout));
    });
}

void WebSocketClient::Impl::on_end(Status st) {
    switch (state_) {
        case State::idle:
        case State::closed:
            return;
        case State::closing:
            // We asked to close; the peer dropping TCP instead of answering ends it as well.
            finish(sent_code_, sent_reason_, std::nullopt, "");
            return;
        case State::handshaking:
            if (rejection_) {
                reject();
                return;
            }
            [[fallthrough]];
        case State::connecting: {
            std::string error = st ? label_ + ": connection closed during the WebSocket upgrade"
                                   : st.error().message();
            const bool tls = !st && error.find(": TLS") != std::string::npos;
            finish(tls ? ws_close::tls_failure : ws_close::abnormal, "", std::nullopt,
                   std::move(error));
            return;
        }
        case State::open:
            finish(ws_close::abnormal, "", std::nullopt,
                   st ? label_ + ": connection closed by the server without a close frame"
                      : st.error().message());
            return;
    }
}

void WebSocketClient::Impl::finish(uint16_t code, std::string reason,
                                   std::optional<WsRejection> rejection, std::string error) {
    if (state_ == State::closed || state_ == State::idle) return;
    state_ = State::closed;
    handshake_timer_->stop();
    close_timer_->stop();
    guard_.drop();
    parser_.reset();
    backlog_.clear();
    // Let queued frames (our close) go out, then close TCP; the Stream finishes on its own.
    if (stream_) {
        stream_->close();
        stream_.reset();
    }
    if (h_.on_closed) {
        auto cb = h_.on_closed;
        cb(code, std::move(reason), std::move(rejection), std::move(error));
    }
}

WebSocketClient::WebSocketClient(uv_loop_t* loop, loop::Scheduler& sched, WsConnectOptions opts,
                                 Handlers handlers)
    : impl_(new Impl(loop, sched, std::move(opts), std::move(handlers))) {}
WebSocketClient::~WebSocketClient() {
    delete impl_;
}
void WebSocketClient::connect() {
    impl_->connect();
}
Status WebSocketClient::send_binary(std::string_view data) {
    return impl_->send_binary(data);
}
void WebSocketClient::close(uint16_t code, std::string_view reason) {
    impl_->close(code, reason);
}
bool WebSocketClient::is_open() const {
    return impl_->is_open();
}

}  // namespace myr::net
