#include "health/probe_server.hpp"

#include <llhttp.h>

#include <algorithm>
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
//
// It is read only while it has no answer in flight: a request stops the reading, its answer is
// written, and only when the write completes is the next request (read ahead, or read anew)
// taken. A client that never reads therefore costs one answer, the kernel's socket buffers hold
// the rest, and the request timeout closes it.
struct ProbeServer::Conn {
    ProbeServer* server;
    loop::Handle<uv_tcp_t> tcp;
    RequestReader reader;
    std::unique_ptr<loop::Timer> timer;
    bool closing = false;
    bool reading = false;
    // The one answer in flight, held until its write completes; the request is inline too, so a
    // connection allocates nothing per answer beyond the answer's bytes.
    std::string answer;
    uv_write_t write_req{};
    bool close_after = false;
    // Since when this connection has waited: for a request (accepted, or last answered) or for its
    // client to read the answer in flight. The one waiting longest makes room at either cap.
    MonoTime waiting_since{};

    Conn(ProbeServer* s, uv_loop_t* loop)
        : server(s), tcp(loop), reader(s->limits_.reader), timer(s->sched_.timer()) {
        tcp->data = this;
    }

    uv_stream_t* stream() { return tcp.stream(); }

    // A closing connection's bytes are freed within the loop turn, so they leave the total now.
    size_t held() const { return closing ? 0 : reader.held_bytes() + answer.size(); }

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

    void arm_timeout() {
        timer->start(server->limits_.request_timeout, [this] {
            // Too slow to send one request, to read its answer, or an idle keep-alive connection.
            close();
        });
    }

    void start_reading() {
        if (reading || closing) return;
        reading = uv_read_start(stream(), on_alloc, on_read) == 0;
        if (!reading) close();
    }

    void stop_reading() {
        if (!reading) return;
        uv_read_stop(stream());
        reading = false;
    }

    void send(std::string bytes, bool last) {
        stop_reading();
        if (bytes.size() > server->limits_.max_answer_bytes) {
            log::warn("probe server: an answer over its budget; connection closed",
                      {{"bytes", bytes.size()}, {"budget", server->limits_.max_answer_bytes}});
            return close();
        }
        answer = std::move(bytes);
        close_after = last;
        waiting_since = server->sched_.now();
        arm_timeout();
        write_req.data = this;
        uv_buf_t buf = uv_buf_init(answer.data(), static_cast<unsigned>(answer.size()));
        if (uv_write(&write_req, stream(), &buf, 1, on_written) != 0) return close();
    }

    void refuse(int status, const char* why) {
        send(render(Response{status, why, false}, false, false), true);
    }

    // Acts on what the reader says: one answer at most.
    void act(RequestReader::Step step) {
        using Step = RequestReader::Step;
        switch (step) {
            case Step::more:
                return start_reading();
            case Step::request: {
                const bool keep = reader.keep_alive();
                Response r = route(reader.method(), reader.target(), server->probes_);
                return send(render(r, reader.method() == "HEAD", keep), !keep);
            }
            case Step::too_large:
                return refuse(431, "request headers too large");
            case Step::has_body:
                return refuse(400, "bad request: probes take no body");
            case Step::malformed:
                return refuse(400, "bad request: malformed HTTP");
            case Step::over_budget:
                return refuse(400, "bad request: too many bytes sent ahead of an answer");
        }
    }

    static void on_alloc(uv_handle_t* h, size_t, uv_buf_t* buf) noexcept {
        static thread_local char scratch[16 * 1024];
        buf->base = scratch;
        // No read brings more than the read-ahead budget, so the bytes after a request always fit.
        const size_t ahead = static_cast<Conn*>(h->data)->server->limits_.reader.max_input_bytes;
        buf->len = std::min(sizeof scratch, ahead);
    }

    static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) noexcept {
        auto* c = static_cast<Conn*>(s->data);
        if (c->closing) return;
        // Reading happens only with no answer in flight: an end or an error leaves nothing owed.
        if (n < 0) return c->close();
        if (n > 0) c->act(c->reader.feed(buf->base, static_cast<size_t>(n)));
        c->server->enforce_total();
    }

    static void on_written(uv_write_t* req, int status) noexcept {
        auto* c = static_cast<Conn*>(req->data);
        // The answer's memory goes back now, not at the next answer.
        std::string().swap(c->answer);
        // A cancelled write (the connection closing) may come after the server is gone.
        if (c->closing) return;
        if (status != 0 || c->close_after) return c->close();
        c->waiting_since = c->server->sched_.now();
        c->arm_timeout();
        c->act(c->reader.next());
        c->server->enforce_total();
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

size_t ProbeServer::held_bytes() const {
    size_t sum = 0;
    for (const Conn* c : conns_) sum += c->held();
    return sum;
}

size_t ProbeServer::unsent_bytes() const {
    size_t sum = 0;
    for (Conn* c : conns_) {
        if (!c->closing) sum += uv_stream_get_write_queue_size(c->stream());
    }
    return sum;
}

ProbeServer::Conn* ProbeServer::longest_waiting(const Conn* except, bool holding_only) const {
    Conn* oldest = nullptr;
    for (Conn* o : conns_) {
        if (o == except || o->closing || (holding_only && o->held() == 0)) continue;
        if (!oldest || o->waiting_since < oldest->waiting_since) oldest = o;
    }
    return oldest;
}

void ProbeServer::enforce_total() {
    for (size_t held = held_bytes(); held > limits_.max_total_bytes; held = held_bytes()) {
        Conn* victim = longest_waiting(nullptr, true);
        if (!victim) return;
        log::warn(
            "probe server: connections hold more than their total budget; closed the one "
            "waiting longest",
            {{"bytes", held}, {"budget", limits_.max_total_bytes}});
        victim->close();
    }
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
        // Full: the connection that has waited longest (an idle keep-alive one, one silent since
        // accepted, the slowest to send its request or to read its answer) makes room, so a new
        // client (the kubelet) is always answered; clients that keep 64 slots busy cannot lock it
        // out.
        Conn* oldest = self->longest_waiting(c, false);
        if (!oldest) return c->close();
        oldest->close();
    }
    c->waiting_since = self->sched_.now();
    uv_tcp_nodelay(c->tcp.get(), 1);
    c->arm_timeout();
    c->start_reading();
}

}  // namespace myr::health
