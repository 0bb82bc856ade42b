#include "net/http_client.hpp"

#include <strings.h>

#include <memory>
#include <optional>
#include <utility>

#include "net/stream.hpp"
#include "net/url_text.hpp"

namespace myr::net {

class HttpClient::Impl {
  public:
    Impl(uv_loop_t* loop, loop::Scheduler& sched, HttpRequest request, HttpOptions options,
         Handlers handlers)
        : loop_(loop),
          sched_(sched),
          req_(std::move(request)),
          opts_(std::move(options)),
          h_(std::move(handlers)),
          connect_timer_(sched.timer()),
          idle_timer_(sched.timer()),
          total_timer_(sched.timer()) {}

    void start();
    void cancel();
    void pause();
    void resume();

  private:
    void on_connected();
    void on_data(std::string_view data);
    void on_end(Status st);
    void arm_idle();
    void finish(Result<HttpResponse> r);
    std::string request_text() const;

    uv_loop_t* loop_;
    loop::Scheduler& sched_;
    HttpRequest req_;
    HttpOptions opts_;
    Handlers h_;
    std::string label_;
    std::optional<ProxyHop> forward_;  // an http:// request goes to this proxy in absolute form
    std::unique_ptr<Stream> stream_;
    std::unique_ptr<ResponseParser> parser_;
    HttpResponse resp_;
    std::unique_ptr<loop::Timer> connect_timer_;
    std::unique_ptr<loop::Timer> idle_timer_;
    std::unique_ptr<loop::Timer> total_timer_;
    bool running_ = false;
    bool paused_ = false;
    // Dropped when a request ends, so an answer posted for it cannot reach the next one; expired
    // also when a handler destroyed the client.
    loop::Guard guard_;
};

std::string HttpClient::Impl::request_text() const {
    const std::string path = req_.url.path.empty() ? "/" : req_.url.path;
    // Through a proxy without a tunnel the request names the whole URL (RFC 9112 section 3.2.2).
    const std::string target =
        forward_ ? req_.url.scheme + "://" + host_header(req_.url) + path : path;
    std::string out = req_.method + " " + target + " HTTP/1.1\r\n";
    out += "Host: " + host_header(req_.url) + "\r\n";
    if (forward_ && !forward_->authorization.empty()) {
        out += "Proxy-Authorization: " + forward_->authorization + "\r\n";
    }
    bool has_agent = false;
    for (const auto& [k, v] : req_.headers) {
        if (k.size() == 10 && strncasecmp(k.c_str(), "user-agent", 10) == 0) has_agent = true;
    }
    if (!has_agent) out += "User-Agent: myriarch-updater\r\n";
    out += "Connection: close\r\n";
    for (const auto& [k, v] : req_.headers) out += k + ": " + v + "\r\n";
    if (!req_.body.empty() || req_.method == "POST" || req_.method == "PUT") {
        out += "Content-Length: " + std::to_string(req_.body.size()) + "\r\n";
    }
    out += "\r\n";
    out += req_.body;
    return out;
}

void HttpClient::Impl::start() {
    if (running_) return;
    running_ = true;
    resp_ = HttpResponse{};
    label_ = url_label(req_.url);
    std::optional<std::string> bad;
    if (req_.url.scheme != "http" && req_.url.scheme != "https") {
        bad = label_ + ": not an http:// or https:// URL";
    }
    for (const auto& [k, v] : req_.headers) {
        if (k.empty() || unsafe_header_text(k) || unsafe_header_text(v) ||
            k.find(':') != std::string::npos) {
            bad = label_ + ": invalid request header \"" + k + "\"";
        }
    }
    if (unsafe_header_text(req_.method) || req_.method.find(' ') != std::string::npos ||
        unsafe_header_text(req_.url.path) || req_.url.path.find(' ') != std::string::npos) {
        bad = label_ + ": invalid method or path";
    }
    if (bad) {
        // Reported from the loop, never from inside start().
        sched_.post(guard_.bind([this, msg = *bad] { finish(fail(Errc::invalid, msg)); }));
        return;
    }

    ResponseParser::Handlers ph;
    ph.on_head = [this](const HttpHead& head) -> Status {
        resp_.head = head;
        if (h_.on_head) return h_.on_head(head);
        return {};
    };
    ph.on_body = [this](std::string_view piece) -> Status {
        if (h_.on_body) return h_.on_body(piece);
        resp_.body.append(piece);
        return {};
    };
    parser_ =
        std::make_unique<ResponseParser>(opts_.limits, std::move(ph), false, req_.method == "HEAD");

    StreamOptions so =
        stream_to(req_.url, opts_.ca_file, opts_.allow_insecure_transport, opts_.tls_config);
    if (auto routed = route_through_proxy(so, req_.url, opts_.proxy.get(), req_.url.secure());
        !routed) {
        sched_.post(guard_.bind([this, err = routed.error()] { finish(fail(err)); }));
        return;
    }
    forward_.reset();
    if (so.proxy && !so.tunnel) {
        forward_ = so.proxy;
        // Whatever the proxy answers in place of the server is named with it.
        label_ += " via proxy " + so.proxy->label;
    }
    Stream::Handlers sh;
    sh.on_connected = [this] { on_connected(); };
    sh.on_data = [this](std::string_view d) { on_data(d); };
    sh.on_end = [this](Status st) { on_end(std::move(st)); };
    stream_ = std::make_unique<Stream>(loop_, sched_, std::move(so), std::move(sh));

    if (opts_.connect_timeout > Duration::zero()) {
        connect_timer_->start(opts_.connect_timeout, [this] {
            finish(fail(Errc::timeout, label_ + ": connect timed out after " +
                                           format_duration(opts_.connect_timeout)));
        });
    }
    if (opts_.total_timeout > Duration::zero()) {
        total_timer_->start(opts_.total_timeout, [this] {
            finish(fail(Errc::timeout, label_ + ": request did not complete within " +
                                           format_duration(opts_.total_timeout)));
        });
    }
    stream_->start();
}

void HttpClient::Impl::on_connected() {
    connect_timer_->stop();
    stream_->write(request_text());
    arm_idle();
}

void HttpClient::Impl::arm_idle() {
    if (opts_.idle_timeout <= Duration::zero() || paused_) return;
    idle_timer_->start(opts_.idle_timeout, [this] {
        finish(fail(Errc::timeout,
                    label_ + ": no data received for " + format_duration(opts_.idle_timeout)));
    });
}

void HttpClient::Impl::on_data(std::string_view data) {
    arm_idle();
    auto alive = guard_.watch();
    auto used = parser_->feed(data);
    if (alive.expired() || !running_) return;  // a handler destroyed or cancelled us
    if (!used) {
        finish(used.fail(label_));
        return;
    }
    if (parser_->complete()) finish(std::move(resp_));
}

void HttpClient::Impl::on_end(Status st) {
    if (!st) {
        finish(st.fail());
        return;
    }
    auto alive = guard_.watch();
    auto done = parser_->finish();
    if (alive.expired() || !running_) return;
    if (!done) {
        finish(done.fail(label_));
        return;
    }
    finish(std::move(resp_));
}

void HttpClient::Impl::finish(Result<HttpResponse> r) {
    if (!running_) return;
    // What the stream or the response parser refused is a network failure unless classified.
    if (!r && r.error().code() == Errc::unknown) {
        r = fail(Error(Errc::network, r.error().message(), r.error().sys_errno()));
    }
    cancel();
    if (h_.on_done) {
        auto cb = h_.on_done;
        cb(std::move(r));
    }
}

void HttpClient::Impl::cancel() {
    running_ = false;
    connect_timer_->stop();
    idle_timer_->stop();
    total_timer_->stop();
    guard_.drop();
    // Destroying the stream from inside its own handler is allowed; the socket closes at once,
    // so no half-read connection is ever reused.
    stream_.reset();
}

void HttpClient::Impl::pause() {
    paused_ = true;
    idle_timer_->stop();
    if (stream_) stream_->pause_reading();
}

void HttpClient::Impl::resume() {
    paused_ = false;
    if (stream_) stream_->resume_reading();
    if (running_ && !connect_timer_->active()) arm_idle();
}

HttpClient::HttpClient(uv_loop_t* loop, loop::Scheduler& sched, HttpRequest request,
                       HttpOptions options, Handlers handlers)
    : impl_(new Impl(loop, sched, std::move(request), std::move(options), std::move(handlers))) {}
HttpClient::~HttpClient() {
    impl_->cancel();
    delete impl_;
}
void HttpClient::start() {
    impl_->start();
}
void HttpClient::cancel() {
    impl_->cancel();
}
void HttpClient::pause() {
    impl_->pause();
}
void HttpClient::resume() {
    impl_->resume();
}

}  // namespace myr::net
