#include "health/probe_server.hpp"

#include <llhttp.h>

#include <cstring>
#include <memory>

#include "core/log.hpp"

namespace myr::health {

namespace {

const char* reason_phrase(int status) {
    switch (status) {
        case 200:
            return "OK";
        case 400:
            return "Bad Request";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 431:
            return "Request Header Fields Too Large";
        case 503:
            return "Service Unavailable";
        default:
            return "Unknown";
    }
}

}  // namespace

Response route(std::string_view method, std::string_view target, const Probes& probes) {
    // The path only: a query string does not change the answer.
    std::string_view path = target.substr(0, target.find('?'));
    const bool metrics = path == "/metrics" && probes.metrics;
    bool known = path == "/healthz" || path == "/readyz" || metrics;
    if (!known) {
        return {404,
                probes.metrics ? "not found: use /healthz, /readyz or /metrics"
                               : "not found: use /healthz or /readyz (/metrics is off: "
                                 "container.metrics)",
                false};
    }
    if (method != "GET" && method != "HEAD") return {405, "method not allowed: use GET", true};
    if (metrics) return {200, probes.metrics(), false, true};
    const auto& ask = path == "/healthz" ? probes.healthz : probes.readyz;
    Answer a = ask ? ask() : Answer{false, "not configured"};
    return {a.ok ? 200 : 503, a.text, false};
}

std::string render(const Response& r, bool head, bool keep_alive) {
    // The metrics text ends with its own newline; a probe's line gets one.
    const size_t length = r.body.size() + (r.metrics ? 0 : 1);
    std::string out;
    out.reserve(200 + (head ? 0 : length));
    out += "HTTP/1.1 " + std::to_string(r.status) + " " + reason_phrase(r.status) +
           "\r\nContent-Type: " + (r.metrics ? kMetricsContentType : "text/plain; charset=utf-8") +
           "\r\nCache-Control: no-store\r\nContent-Length: " + std::to_string(length) + "\r\n";
    if (r.allow_header) out += "Allow: GET, HEAD\r\n";
    out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    if (!head) {
        out += r.body;
        if (!r.metrics) out += '\n';
    }
    return out;
}

// One client. Freed in the close callback of its TCP handle.
struct ProbeServer::Conn {
    ProbeServer* server;
    loop::Handle<uv_tcp_t> tcp;
    llhttp_t parser{};
    llhttp_settings_t settings{};
    std::unique_ptr<loop::Timer> timer;
    std::string method;
    std::string target;
    size_t header_bytes = 0;
    bool too_large = false;
    bool has_body = false;
    bool complete = false;
    bool closing = false;
    int writes_pending = 0;
    bool peer_done = false;  // the client half-closed: close once our answer is out
    // When this connection began waiting for its next request (accepted, or last answered):
    // at the cap, the one waiting longest is closed to make room for a new client.
    MonoTime waiting_since{};

    Conn(ProbeServer* s, uv_loop_t* loop) : server(s), tcp(loop), timer(s->sched_.timer()) {
        tcp->data = this;
    }

    uv_stream_t* stream() { return tcp.stream(); }

    void close() {
        if (closing) return;
        closing = true;
        timer.reset();
        // Pending writes complete (cancelled) before the close callback, which frees the Conn.
        tcp.close([this] {
            if (server) server->conns_.erase(this);
            delete this;
        });
    }

    void reset_request() {
        method.clear();
        target.clear();
        header_bytes = 0;
        too_large = false;
        has_body = false;
        complete = false;
    }

    void arm_timeout() {
        timer->start(server->limits_.request_timeout, [this] {
            // A client too slow to send one request, or an idle keep-alive connection.
            close();
        });
    }

    void send(const Response& r, bool head, bool keep_alive) {
        struct Write {
            uv_write_t req;
            std::string bytes;
            Conn* conn;
            bool close_after;
        };
        auto* w = new Write{{}, render(r, head, keep_alive), this, !keep_alive};
        w->req.data = w;
        uv_buf_t buf = uv_buf_init(w->bytes.data(), static_cast<unsigned>(w->bytes.size()));
        int rc = uv_write(&w->req, stream(), &buf, 1, [](uv_write_t* req, int status) noexcept {
            auto* w = static_cast<Write*>(req->data);
            // Pending writes complete (cancelled) before the close callback frees the Conn.
            Conn* c = w->conn;
            --c->writes_pending;
            if (w->close_after || status != 0 || (c->peer_done && c->writes_pending == 0)) {
                c->close();
            }
            delete w;
        });
        if (rc != 0) {
            delete w;
            close();
            return;
        }
        ++writes_pending;
    }

    void refuse(int status, const char* why) {
        uv_read_stop(stream());
        send(Response{status, why, false}, false, false);
    }

    void on_data(const char* data, size_t n) {
        if (closing) return;
        llhttp_errno_t err = llhttp_execute(&parser, data, n);
        if (too_large) return refuse(431, "request headers too large");
        if (has_body) return refuse(400, "bad request: probes take no body");
        if (err == HPE_PAUSED && complete) {
            const char* end = llhttp_get_error_pos(&parser);
            if (end != nullptr && end < data + n) {
                return refuse(400, "bad request: one request at a time (no pipelining)");
            }
            bool keep = llhttp_should_keep_alive(&parser) != 0;
            bool head = method == "HEAD";
            Response r = route(method, target, server->probes_);
            send(r, head, keep);
            if (!keep) {
                uv_read_stop(stream());
                return;
            }
            llhttp_resume(&parser);
            reset_request();
            waiting_since = server->sched_.now();
            arm_timeout();
            return;
        }
        if (err != HPE_OK) return refuse(400, "bad request: malformed HTTP");
        // Incomplete: wait for more within the request timeout.
    }

    static Conn* of(llhttp_t* p) { return static_cast<Conn*>(p->data); }

    int count(size_t n) {
        header_bytes += n;
        if (header_bytes > server->limits_.max_header_bytes) {
            too_large = true;
            return -1;  // stops the parser
        }
        return 0;
    }

    void init_parser() {
        llhttp_settings_init(&settings);
        settings.on_url = [](llhttp_t* p, const char* at, size_t n) noexcept {
            Conn* c = of(p);
            if (c->count(n) != 0) return -1;
            c->target.append(at, n);
            return 0;
        };
        settings.on_header_field = [](llhttp_t* p, const char*, size_t n) noexcept {
            return of(p)->count(n);
        };
        settings.on_header_value = [](llhttp_t* p, const char*, size_t n) noexcept {
            return of(p)->count(n);
        };
        settings.on_headers_complete = [](llhttp_t* p) noexcept {
            Conn* c = of(p);
            c->method = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
            return 0;
        };
        settings.on_body = [](llhttp_t* p, const char*, size_t) noexcept {
            of(p)->has_body = true;
            return -1;
        };
        settings.on_message_complete = [](llhttp_t* p) noexcept {
            of(p)->complete = true;
            return static_cast<int>(HPE_PAUSED);
        };
        llhttp_init(&parser, HTTP_REQUEST, &settings);
        parser.data = this;
    }
};

ProbeServer::ProbeServer(loop::Loop& loop, loop::Scheduler& sched, Probes probes,
                         ServerLimits limits)
    : loop_(loop), sched_(sched), probes_(std::move(probes)), limits_(limits) {}

ProbeServer::~ProbeServer() {
    for (Conn* c : conns_) {
        c->server = nullptr;
        c->close();
    }
    conns_.clear();
}

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The address to bind. IP literals as written (a dotted quad that does not parse is refused, never
// looked up); "localhost" and *.localhost are 127.0.0.1 (RFC 6761, as in net/); any other name is
// resolved once, here, and its first address is used. listen() runs at start-up before the loop
// does, so waiting for the resolver holds up nothing.
Result<sockaddr_storage> bind_address(uv_loop_t* loop, const HostPort& where) {
    sockaddr_storage addr{};
    const std::string& h = where.host;
    if (where.ipv6()) {
        int rc = uv_ip6_addr(h.c_str(), where.port, reinterpret_cast<sockaddr_in6*>(&addr));
        if (rc != 0) return fail(uv_strerror(rc));
        return addr;
    }
    if (h.find_first_not_of("0123456789.") == std::string::npos) {
        int rc = uv_ip4_addr(h.c_str(), where.port, reinterpret_cast<sockaddr_in*>(&addr));
        if (rc != 0) return fail(uv_strerror(rc));
        return addr;
    }
    if (h == "localhost" || ends_with(h, ".localhost")) {
        uv_ip4_addr("127.0.0.1", where.port, reinterpret_cast<sockaddr_in*>(&addr));
        return addr;
    }
    uv_getaddrinfo_t req{};
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    const std::string port = std::to_string(where.port);
    // No callback: libuv resolves synchronously.
    int rc = uv_getaddrinfo(loop, &req, nullptr, h.c_str(), port.c_str(), &hints);
    if (rc != 0) return fail("resolve " + h + ": " + uv_strerror(rc));
    for (addrinfo* p = req.addrinfo; p != nullptr; p = p->ai_next) {
        if (p->ai_family != AF_INET && p->ai_family != AF_INET6) continue;
        std::memcpy(&addr, p->ai_addr, p->ai_addrlen);
        uv_freeaddrinfo(req.addrinfo);
        return addr;
    }
    uv_freeaddrinfo(req.addrinfo);
    return fail("resolve " + h + ": no IPv4 or IPv6 address");
}

}  // namespace

Status ProbeServer::listen(const HostPort& where) {
    std::string what = "probe server: listen on " + where.str();
    auto resolved = bind_address(loop_.get(), where);
    if (!resolved) return resolved.fail(what);
    sockaddr_storage addr = *resolved;
    listener_ = loop::Handle<uv_tcp_t>(loop_.get());
    listener_->data = this;
    int rc = uv_tcp_bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), 0);
    if (rc == 0) rc = uv_listen(listener_.stream(), 128, on_connection);
    if (rc != 0) return fail(what + ": " + uv_strerror(rc));
    sockaddr_storage bound{};
    int len = sizeof bound;
    uv_tcp_getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                        : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    log::info("probe server listening", {{"address", where.str()}, {"port", port_}});
    return {};
}

void ProbeServer::on_connection(uv_stream_t* listener, int status) noexcept {
    auto* self = static_cast<ProbeServer*>(listener->data);
    if (status < 0) return;
    auto* c = new Conn(self, self->loop_.get());
    self->conns_.insert(c);
    if (uv_accept(listener, c->stream()) != 0) return c->close();
    if (self->conns_.size() > self->limits_.max_connections) {
        // Full: the connection that has waited longest for a request (an idle keep-alive one, one
        // silent since accepted, or the slowest to send its request) makes room, so a new client
        // (the kubelet) is always answered; clients that keep 64 slots busy cannot lock it out.
        Conn* oldest = nullptr;
        for (Conn* o : self->conns_) {
            if (o == c || o->closing || o->writes_pending != 0) continue;
            if (!oldest || o->waiting_since < oldest->waiting_since) oldest = o;
        }
        // Every other slot is writing an answer this very turn: they end on their own.
        if (!oldest) return c->close();
        oldest->close();
    }
    c->waiting_since = self->sched_.now();
    uv_tcp_nodelay(c->tcp.get(), 1);
    c->init_parser();
    c->arm_timeout();
    uv_read_start(
        c->stream(),
        [](uv_handle_t*, size_t, uv_buf_t* buf) noexcept {
            static thread_local char scratch[16 * 1024];
            buf->base = scratch;
            buf->len = sizeof scratch;
        },
        [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) noexcept {
            auto* c = static_cast<Conn*>(s->data);
            if (n < 0) {
                // A client that sends its request and then shuts down its side still gets the
                // answer that is on its way.
                if (c->writes_pending == 0) return c->close();
                c->peer_done = true;
                return (void)uv_read_stop(s);
            }
            if (n > 0) c->on_data(buf->base, static_cast<size_t>(n));
        });
}

}  // namespace myr::health
