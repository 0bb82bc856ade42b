#include "net/stream.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "loop/handle.hpp"
#include "net/tls.hpp"
#include "net/url_text.hpp"

namespace myr::net {
namespace {

std::string uv_text(int err) {
    return uv_strerror(err);
}

std::string format_addr(const sockaddr_storage& sa) {
    char buf[INET6_ADDRSTRLEN] = {};
    uint16_t port = 0;
    if (sa.ss_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
        inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
        port = ntohs(in->sin_port);
        return std::string(buf) + ":" + std::to_string(port);
    }
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    port = ntohs(in6->sin6_port);
    return "[" + std::string(buf) + "]:" + std::to_string(port);
}

std::string numeric_host(const sockaddr_storage& sa) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (sa.ss_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&sa)->sin_addr, buf, sizeof buf);
    } else {
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&sa)->sin6_addr, buf,
                  sizeof buf);
    }
    return buf;
}

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

StreamOptions stream_to(const Url& url, std::string ca_file, bool allow_insecure_transport,
                        std::shared_ptr<TlsConfig> tls_config) {
    StreamOptions so;
    so.host = url.host;
    so.port = url.port != 0 ? url.port : default_port(url.scheme);
    so.tls = url.secure();
    so.ca_file = std::move(ca_file);
    so.tls_config = std::move(tls_config);
    so.allow_insecure_transport = allow_insecure_transport;
    so.label = url_label(url);
    return so;
}

Status route_through_proxy(StreamOptions& so, const Url& url, const ProxyPolicy* policy,
                           bool tunnel) {
    if (policy == nullptr) return {};
    auto hop = policy->route(url);
    // Unreadable credentials (a Secret not mounted yet) are retried like a refused connection.
    if (!hop) return fail(Error(Errc::network, so.label + ": " + hop.error().message()));
    so.proxy = std::move(*hop);
    so.tunnel = tunnel;
    return {};
}

void load_tls_client(loop::Scheduler& sched, std::string ca_file,
                     std::function<void(Result<std::shared_ptr<TlsConfig>>)> done) {
    // The job owns its result slot: `work` fills it on the pool, `done` reads it on the loop.
    auto slot = std::make_shared<std::optional<Result<std::shared_ptr<TlsConfig>>>>();
    sched.post_work(
        [slot, ca_file = std::move(ca_file)] { slot->emplace(TlsConfig::client(ca_file)); },
        [slot, done = std::move(done)](bool cancelled) {
            if (cancelled || !slot->has_value()) {
                done(fail(Errc::cancelled, "TLS: load CA file: cancelled"));
                return;
            }
            done(std::move(**slot));
        });
}

bool is_loopback_address(const std::string& numeric) {
    in_addr v4{};
    if (inet_pton(AF_INET, numeric.c_str(), &v4) == 1) {
        return (ntohl(v4.s_addr) >> 24) == 127;
    }
    in6_addr v6{};
    if (inet_pton(AF_INET6, numeric.c_str(), &v6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
        return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
    }
    return false;
}

// Owns the libuv side of a Stream. It outlives the Stream when handles are still closing and
// deletes itself once nothing of libuv refers to it any more.
class Stream::Impl {
  public:
    Impl(uv_loop_t* loop, loop::Scheduler& sched, StreamOptions opts, Handlers handlers)
        : loop_(loop), sched_(sched), opts_(std::move(opts)), h_(std::move(handlers)) {
        if (opts_.label.empty()) opts_.label = opts_.host + ":" + std::to_string(opts_.port);
    }

    void start();
    void write(std::string_view data);
    void pause_reading();
    void resume_reading();
    void graceful_close();
    void detach();
    size_t pending_write_bytes() const { return pending_bytes_; }
    const std::string& peer() const { return peer_; }

  private:
    struct Resolve {
        uv_getaddrinfo_t req;
        Impl* impl;  // null once the Stream is gone
    };
    struct Connect {
        uv_connect_t req;
        Impl* impl;
    };
    struct Write {
        uv_write_t req;
        std::string data;
        Impl* impl;
    };

    void on_resolved(int status, addrinfo* res);
    void try_next_address();
    void on_connect(int status);
    void start_session();
    void on_proxy_reply(std::string_view bytes);
    // The label for failures of the connection itself: the URL, and the proxy when there is one.
    std::string conn_label() const {
        return opts_.proxy ? opts_.label + ": proxy " + opts_.proxy->label : opts_.label;
    }
    const std::string& connect_host() const { return opts_.proxy ? opts_.proxy->host : opts_.host; }
    uint16_t connect_port() const { return opts_.proxy ? opts_.proxy->port : opts_.port; }
    void on_read(ssize_t nread, const uv_buf_t* buf);
    void on_plaintext_or_tls(std::string_view bytes);
    void flush_tls();
    void send_raw(std::string data);
    void end(Status st);
    void close_tcp();
    void maybe_free() {
        if (detached_ && resolve_ == nullptr && !tcp_ && closing_handles_ == 0) delete this;
    }
    // Runs `fn` on a later turn unless the Impl is detached or gone by then.
    void later(std::function<void()> fn) { sched_.post(guard_.bind(std::move(fn))); }
    // Each report runs with a check afterwards: the owner may have destroyed the Stream inside.
    // Handlers run from copies: the owner may replace or drop them from inside.
    void report_connected() {
        if (auto cb = h_.on_connected) cb();
    }
    void report_data(std::string_view bytes) {
        if (auto cb = h_.on_data) cb(bytes);
    }

    uv_loop_t* loop_;
    loop::Scheduler& sched_;
    StreamOptions opts_;
    Handlers h_;
    loop::Guard guard_;  // what later() posted; dropped when the Stream detaches
    Resolve* resolve_ = nullptr;
    std::vector<sockaddr_storage> addrs_;
    size_t next_addr_ = 0;
    std::string last_connect_error_;
    loop::Handle<uv_tcp_t> tcp_;
    int closing_handles_ = 0;
    std::unique_ptr<TlsSession> tls_;
    bool connected_ = false;  // TCP and TLS are up
    bool tcp_up_ = false;
    bool awaiting_connect_ = false;  // CONNECT sent, the proxy's answer not complete yet
    std::string proxy_reply_;        // what the proxy answered so far (≤ kMaxConnectReplyHead)
    bool paused_ = false;
    bool ended_ = false;
    bool detached_ = false;
    bool shutting_down_ = false;
    size_t pending_bytes_ = 0;
    std::string peer_;
};

void Stream::Impl::start() {
    if (opts_.host.empty() || opts_.port == 0) {
        end(fail(opts_.label + ": no host or port to connect to"));
        return;
    }
    // RFC 6761 section 6.3: "localhost" names are loopback and never go to DNS, also in an image
    // without /etc/hosts.
    const std::string& host = connect_host();
    if (host == "localhost" || ends_with(host, ".localhost")) {
        sockaddr_storage v4{}, v6{};
        uv_ip4_addr("127.0.0.1", connect_port(), reinterpret_cast<sockaddr_in*>(&v4));
        uv_ip6_addr("::1", connect_port(), reinterpret_cast<sockaddr_in6*>(&v6));
        addrs_ = {v4, v6};
        // Connect from the loop, never from inside start().
        later([this] { try_next_address(); });
        return;
    }
    resolve_ = new Resolve{{}, this};
    resolve_->req.data = resolve_;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    const std::string port = std::to_string(connect_port());
    const int rc = uv_getaddrinfo(
        loop_, &resolve_->req,
        [](uv_getaddrinfo_t* req, int status, addrinfo* res) noexcept {
            auto* r = static_cast<Resolve*>(req->data);
            Impl* impl = r->impl;
            delete r;
            if (impl == nullptr) {
                uv_freeaddrinfo(res);
                return;
            }
            impl->resolve_ = nullptr;
            impl->on_resolved(status, res);
        },
        host.c_str(), port.c_str(), &hints);
    if (rc != 0) {
        delete resolve_;
        resolve_ = nullptr;
        const std::string msg = conn_label() + ": resolve " + host + ": " + uv_text(rc);
        later([this, msg] { end(fail(msg)); });
    }
}

void Stream::Impl::on_resolved(int status, addrinfo* res) {
    if (detached_) {
        uv_freeaddrinfo(res);
        maybe_free();
        return;
    }
    if (status != 0) {
        uv_freeaddrinfo(res);
        end(fail(conn_label() + ": resolve " + connect_host() + ": " + uv_text(status)));
        return;
    }
    for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
        if (p->ai_family != AF_INET && p->ai_family != AF_INET6) continue;
        sockaddr_storage sa{};
        std::memcpy(&sa, p->ai_addr, p->ai_addrlen);
        addrs_.push_back(sa);
    }
    uv_freeaddrinfo(res);
    if (addrs_.empty()) {
        end(fail(conn_label() + ": resolve " + connect_host() + ": no IPv4 or IPv6 address"));
        return;
    }
    try_next_address();
}

void Stream::Impl::try_next_address() {
    while (next_addr_ < addrs_.size()) {
        const sockaddr_storage& sa = addrs_[next_addr_++];
        const std::string numeric = numeric_host(sa);
        // The transport rule is checked on the resolved address, before any packet leaves: a
        // name may point anywhere.
        if (!opts_.tls && !opts_.allow_insecure_transport && !is_loopback_address(numeric)) {
            end(fail(Errc::refused, conn_label() + ": refusing a plaintext connection to " +
                                        numeric +
                                        ", which is not a loopback address (allowInsecureTransport "
                                        "is off)"));
            return;
        }
        // Through a proxy the plaintext also travels from the proxy to the origin, which this
        // process never resolves: only a loopback origin (a literal or localhost) passes.
        if (!opts_.tls && !opts_.allow_insecure_transport && opts_.proxy &&
            !is_loopback_host(opts_.host)) {
            end(fail(Errc::refused,
                     conn_label() + ": refusing a plaintext connection through a proxy to " +
                         opts_.host +
                         ", which is not a loopback address (allowInsecureTransport is off)"));
            return;
        }
        tcp_ = loop::Handle<uv_tcp_t>(loop_);
        tcp_->data = this;
        peer_ = format_addr(sa);
        auto* c = new Connect{{}, this};
        c->req.data = c;
        const int rc = uv_tcp_connect(&c->req, tcp_.get(), reinterpret_cast<const sockaddr*>(&sa),
                                      [](uv_connect_t* req, int status) noexcept {
                                          auto* conn = static_cast<Connect*>(req->data);
                                          Impl* impl = conn->impl;
                                          delete conn;
                                          impl->on_connect(status);
                                      });
        if (rc == 0) return;
        delete c;
        last_connect_error_ = "connect " + peer_ + ": " + uv_text(rc);
        close_tcp();
    }
    end(fail(conn_label() + ": " +
             (last_connect_error_.empty() ? std::string("no address") : last_connect_error_)));
}

void Stream::Impl::on_connect(int status) {
    if (status == UV_ECANCELED || detached_ || ended_) return;  // the handle is closing
    if (status != 0) {
        last_connect_error_ = "connect " + peer_ + ": " + uv_text(status);
        close_tcp();
        try_next_address();
        return;
    }
    tcp_up_ = true;
    uv_tcp_nodelay(tcp_.get(), 1);
    if (opts_.proxy && opts_.tunnel) {
        // Nothing else is sent until the proxy's answer is complete, so any byte after that
        // answer's head would be the origin speaking first, which none of our protocols does.
        awaiting_connect_ = true;
        send_raw(connect_request(*opts_.proxy, opts_.host, opts_.port));
        if (!paused_) resume_reading();
        return;
    }
    start_session();
}

void Stream::Impl::on_proxy_reply(std::string_view bytes) {
    proxy_reply_.append(bytes.substr(0, kMaxConnectReplyHead + 1 - proxy_reply_.size()));
    auto reply = parse_connect_reply(proxy_reply_);
    if (!reply) {
        end(reply.fail(conn_label()));
        return;
    }
    if (!reply->has_value()) return;
    const ConnectReply& r = **reply;
    const std::string target = authority(opts_.host, opts_.port);
    if (r.status < 200 || r.status > 299) {
        // The body of a refusal (an HTML page) is not shown: the status says what happened.
        // A 4xx (407 after a secret rotated, 403 until the proxy's list is fixed) is the site's
        // path refusing, not the package's fault and not a passing fault: Errc::refused, which
        // the installer ends at once without quarantining the release. A 5xx (the proxy could
        // not reach the origin) is a network failure like any other, tried again.
        const Errc code = r.status >= 400 && r.status < 500 ? Errc::refused : Errc::network;
        end(fail(code, opts_.label + ": proxy " + opts_.proxy->label + " refused CONNECT " +
                           target + ": " + std::to_string(r.status) +
                           (r.reason.empty() ? "" : " " + r.reason)));
        return;
    }
    if (r.head_bytes < proxy_reply_.size()) {
        end(fail(conn_label() + ": sent data after its " + std::to_string(r.status) +
                 " to CONNECT " + target + " before anything went through the tunnel"));
        return;
    }
    awaiting_connect_ = false;
    proxy_reply_.clear();
    start_session();
}

void Stream::Impl::start_session() {
    if (opts_.tls) {
        // Without a preloaded configuration the CA file is read here, on the loop (~200 KB).
        auto config = opts_.tls_config ? Result<std::shared_ptr<TlsConfig>>(opts_.tls_config)
                                       : TlsConfig::client(opts_.ca_file);
        if (!config) {
            end(config.fail(opts_.label));
            return;
        }
        const std::string name = opts_.tls_server_name.empty() ? opts_.host : opts_.tls_server_name;
        auto session = TlsSession::client(*config, name);
        if (!session) {
            end(session.fail(opts_.label));
            return;
        }
        tls_ = std::move(*session);
    }
    if (!paused_) resume_reading();
    if (tls_) {
        on_plaintext_or_tls({});  // sends the ClientHello
        return;
    }
    connected_ = true;
    report_connected();
}

void Stream::Impl::resume_reading() {
    paused_ = false;
    if (!tcp_up_ || !tcp_ || ended_) return;
    uv_read_start(
        tcp_.stream(),
        [](uv_handle_t*, size_t, uv_buf_t* buf) noexcept {
            // One fixed buffer per read; the data is consumed before the next read.
            static char storage[64 * 1024];
            *buf = uv_buf_init(storage, sizeof storage);
        },
        [](uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) noexcept {
            static_cast<Impl*>(s->data)->on_read(nread, buf);
        });
}

void Stream::Impl::pause_reading() {
    paused_ = true;
    if (tcp_up_ && tcp_) uv_read_stop(tcp_.stream());
}

void Stream::Impl::on_read(ssize_t nread, const uv_buf_t* buf) {
    if (detached_ || ended_) return;
    if (nread == UV_EOF) {
        if (awaiting_connect_) {
            end(fail(conn_label() + ": closed the connection before answering CONNECT " +
                     authority(opts_.host, opts_.port)));
            return;
        }
        end({});
        return;
    }
    if (nread < 0) {
        end(fail(opts_.label + ": read from " + peer_ + ": " + uv_text(static_cast<int>(nread))));
        return;
    }
    if (nread == 0) return;
    if (awaiting_connect_) {
        on_proxy_reply(std::string_view(buf->base, static_cast<size_t>(nread)));
        return;
    }
    on_plaintext_or_tls(std::string_view(buf->base, static_cast<size_t>(nread)));
}

void Stream::Impl::on_plaintext_or_tls(std::string_view bytes) {
    if (!tls_) {
        report_data(bytes);
        return;
    }
    tls_->feed(bytes);
    std::string plain;
    const bool was_done = tls_->handshake_done();
    auto r = tls_->pump(plain);
    flush_tls();
    if (!r) {
        end(r.fail(opts_.label));
        return;
    }
    if (!was_done && tls_->handshake_done()) {
        connected_ = true;
        report_connected();
        if (detached_ || ended_) return;
    }
    if (!plain.empty()) {
        report_data(plain);
        if (detached_ || ended_) return;
    }
    if (*r) end({});  // close_notify from the peer
}

void Stream::Impl::flush_tls() {
    if (tls_ && tls_->has_output()) send_raw(tls_->take_output());
}

void Stream::Impl::write(std::string_view data) {
    if (!connected_ || ended_ || shutting_down_) return;
    if (!tls_) {
        send_raw(std::string(data));
        return;
    }
    auto st = tls_->write(data);
    flush_tls();
    if (!st) end(st.fail(opts_.label));
}

void Stream::Impl::send_raw(std::string data) {
    if (!tcp_ || !tcp_up_ || data.empty()) return;
    auto* w = new Write{{}, std::move(data), this};
    w->req.data = w;
    uv_buf_t b = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
    pending_bytes_ += w->data.size();
    const int rc =
        uv_write(&w->req, tcp_.stream(), &b, 1, [](uv_write_t* req, int status) noexcept {
            auto* wr = static_cast<Write*>(req->data);
            Impl* impl = wr->impl;
            impl->pending_bytes_ -= wr->data.size();
            delete wr;
            if (status != 0 && status != UV_ECANCELED && !impl->detached_ && !impl->ended_) {
                impl->end(
                    fail(impl->opts_.label + ": write to " + impl->peer_ + ": " + uv_text(status)));
            }
        });
    if (rc != 0) {
        pending_bytes_ -= w->data.size();
        delete w;
        // Reported from the loop: a write may be issued from inside a handler.
        const std::string msg = opts_.label + ": write to " + peer_ + ": " + uv_text(rc);
        later([this, msg] {
            if (!ended_) end(fail(msg));
        });
    }
}

void Stream::Impl::close_tcp() {
    if (!tcp_) return;
    tcp_up_ = false;
    ++closing_handles_;
    tcp_.close([this] {
        --closing_handles_;
        maybe_free();
    });
}

void Stream::Impl::end(Status st) {
    if (ended_) return;
    // Everything a stream reports (resolving, connecting, TLS, reading, writing) is a network
    // failure, but for what our rules or the proxy refused; a system call's errno stays with it.
    if (!st && st.error().code() != Errc::network && st.error().code() != Errc::refused) {
        st = fail(Error(Errc::network, st.error().message(), st.error().sys_errno()));
    }
    ended_ = true;
    connected_ = false;
    close_tcp();
    if (h_.on_end && !detached_) {
        auto cb = std::move(h_.on_end);
        cb(std::move(st));
    }
}

void Stream::Impl::graceful_close() {
    if (detached_) return;
    h_ = Handlers{};
    if (ended_ || !tcp_ || !tcp_up_) {
        detach();
        return;
    }
    ended_ = true;
    shutting_down_ = true;
    if (tls_ && connected_) {
        tls_->close_notify();
        flush_tls();
    }
    uv_read_stop(tcp_.stream());
    auto* req = new uv_shutdown_t;
    req->data = this;
    // The shutdown waits for queued writes, then the handle is closed.
    const int rc = uv_shutdown(req, tcp_.stream(), [](uv_shutdown_t* r, int) noexcept {
        Impl* impl = static_cast<Impl*>(r->data);
        delete r;
        impl->close_tcp();
        impl->maybe_free();
    });
    if (rc != 0) {
        delete req;
        close_tcp();
    }
    detached_ = true;
    guard_.drop();
    maybe_free();
}

void Stream::Impl::detach() {
    if (detached_ && (!tcp_ || shutting_down_)) {
        maybe_free();
        return;
    }
    detached_ = true;
    h_ = Handlers{};
    guard_.drop();
    if (resolve_ != nullptr) {
        resolve_->impl = nullptr;
        uv_cancel(reinterpret_cast<uv_req_t*>(&resolve_->req));
        resolve_ = nullptr;
    }
    if (!shutting_down_) close_tcp();
    maybe_free();
}

Stream::Stream(uv_loop_t* loop, loop::Scheduler& sched, StreamOptions opts, Handlers handlers)
    : impl_(new Impl(loop, sched, std::move(opts), std::move(handlers))) {}

Stream::~Stream() {
    if (impl_ != nullptr) impl_->detach();
}

// After close() the Impl finishes on its own and may already be gone: impl_ is null from then on.
void Stream::start() {
    if (impl_ != nullptr) impl_->start();
}
void Stream::write(std::string_view data) {
    if (impl_ != nullptr) impl_->write(data);
}
size_t Stream::pending_write_bytes() const {
    return impl_ != nullptr ? impl_->pending_write_bytes() : 0;
}
void Stream::pause_reading() {
    if (impl_ != nullptr) impl_->pause_reading();
}
void Stream::resume_reading() {
    if (impl_ != nullptr) impl_->resume_reading();
}
void Stream::close() {
    if (impl_ == nullptr) return;
    Impl* impl = impl_;
    impl_ = nullptr;
    impl->graceful_close();
}
std::string Stream::peer() const {
    return impl_ != nullptr ? impl_->peer() : std::string();
}

}  // namespace myr::net
