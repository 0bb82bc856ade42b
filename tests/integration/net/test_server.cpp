#include "test_server.hpp"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <strings.h>

#include <chrono>
#include <thread>

#include "harness.hpp"

namespace myr::test {

using net::ws::Event;
using net::ws::Opcode;

TestLoop::TestLoop() {
    uv_loop_init(&loop_);
    uv_timer_init(&loop_, &tick_);
    sched_ = std::make_unique<loop::UvScheduler>(&loop_);
}

TestLoop::~TestLoop() {
    if (!closed_) CHECK(close() == 0);
}

bool TestLoop::run_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    // A ticking timer keeps UV_RUN_ONCE from blocking forever when nothing else is pending.
    uv_timer_start(
        &tick_, [](uv_timer_t*) {}, 10, 10);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred() && std::chrono::steady_clock::now() < deadline) uv_run(&loop_, UV_RUN_ONCE);
    uv_timer_stop(&tick_);
    return pred();
}

void TestLoop::run_for(std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    run_until([&] { return std::chrono::steady_clock::now() >= until; },
              d + std::chrono::seconds(1));
}

int TestLoop::close() {
    closed_ = true;
    sched_.reset();
    uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
    // Close callbacks and cancelled name lookups come back within a few iterations.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (uv_loop_alive(&loop_) && std::chrono::steady_clock::now() < deadline) {
        uv_run(&loop_, UV_RUN_NOWAIT);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const int rc = uv_loop_close(&loop_);
    if (rc != 0) {
        uv_walk(
            &loop_,
            [](uv_handle_t* h, void*) {
                MESSAGE("handle left open: ", uv_handle_type_name(uv_handle_get_type(h)));
            },
            nullptr);
    }
    return rc;
}

namespace {

void close_tcp(uv_tcp_t* tcp) {
    if (tcp == nullptr) return;
    tcp->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(tcp),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
}

struct WriteReq {
    uv_write_t req;
    std::string data;
};

}  // namespace

TestServer::TestServer(uv_loop_t* loop, std::shared_ptr<net::TlsConfig> tls)
    : loop_(loop), tls_(std::move(tls)) {
    listener_ = new uv_tcp_t;
    uv_tcp_init(loop_, listener_);
    listener_->data = this;
    sockaddr_in addr{};
    uv_ip4_addr("127.0.0.1", 0, &addr);
    REQUIRE(uv_tcp_bind(listener_, reinterpret_cast<const sockaddr*>(&addr), 0) == 0);
    REQUIRE(
        uv_listen(reinterpret_cast<uv_stream_t*>(listener_), 16, [](uv_stream_t* l, int status) {
            auto* self = static_cast<TestServer*>(l->data);
            if (status != 0 || self == nullptr) return;
            auto conn = std::make_unique<ServerConn>();
            conn->server_ = self;
            conn->tcp_ = new uv_tcp_t;
            uv_tcp_init(self->loop_, conn->tcp_);
            conn->tcp_->data = conn.get();
            if (uv_accept(l, reinterpret_cast<uv_stream_t*>(conn->tcp_)) != 0) {
                close_tcp(conn->tcp_);
                return;
            }
            if (self->tls_) {
                auto s = net::TlsSession::server(self->tls_);
                CHECK(s.ok());
                if (!s.ok()) {
                    close_tcp(conn->tcp_);
                    return;
                }
                conn->tls_ = std::move(*s);
            }
            uv_read_start(
                reinterpret_cast<uv_stream_t*>(conn->tcp_),
                [](uv_handle_t*, size_t suggested, uv_buf_t* buf) {
                    buf->base = new char[suggested];
                    buf->len = suggested;
                },
                [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
                    auto* c = static_cast<ServerConn*>(s->data);
                    if (c != nullptr && n > 0) {
                        c->on_bytes(std::string_view(buf->base, size_t(n)));
                    } else if (c != nullptr && n < 0) {
                        c->eof_ = true;
                        c->drop();
                    }
                    delete[] buf->base;
                });
            self->conns_.push_back(std::move(conn));
        }) == 0);
    sockaddr_storage bound{};
    int len = sizeof bound;
    uv_tcp_getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    on_event = [](ServerConn& c, const Event& e) {
        if (e.kind == Event::Kind::ping) c.send_frame(Opcode::pong, e.data);
        if (e.kind == Event::Kind::close) {
            c.send_frame(Opcode::close, net::ws::close_payload(e.code, ""));
            c.drop();
        }
    };
}

TestServer::~TestServer() {
    close_tcp(listener_);
    for (auto& c : conns_) c->drop();
}

void ServerConn::drop() {
    if (tcp_ == nullptr) return;
    // Flush what is queued (e.g. a close frame) before closing.
    auto* req = new uv_shutdown_t;
    uv_tcp_t* tcp = tcp_;
    tcp_ = nullptr;
    tcp->data = nullptr;
    uv_read_stop(reinterpret_cast<uv_stream_t*>(tcp));
    if (uv_shutdown(req, reinterpret_cast<uv_stream_t*>(tcp), [](uv_shutdown_t* r, int) {
            close_tcp(reinterpret_cast<uv_tcp_t*>(r->handle));
            delete r;
        }) != 0) {
        delete req;
        close_tcp(tcp);
    }
}

void ServerConn::write_wire(std::string data) {
    if (tcp_ == nullptr || data.empty()) return;
    auto* w = new WriteReq{{}, std::move(data)};
    uv_buf_t b = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
    if (uv_write(&w->req, reinterpret_cast<uv_stream_t*>(tcp_), &b, 1,
                 [](uv_write_t* r, int) { delete reinterpret_cast<WriteReq*>(r); }) != 0) {
        delete w;
    }
}

void ServerConn::flush_tls() {
    if (tls_ && tls_->has_output()) write_wire(tls_->take_output());
}

void ServerConn::send_raw(std::string_view bytes) {
    if (!tls_) {
        write_wire(std::string(bytes));
        return;
    }
    if (tls_->write(bytes).ok()) flush_tls();
}

void ServerConn::send_http(int status,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           std::string_view body) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " Test\r\n";
    for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    out.append(body);
    send_raw(out);
}

void ServerConn::accept_upgrade(const std::string& accept_override) {
    const std::string accept = accept_override.empty()
                                   ? net::ws::accept_key(header("Sec-WebSocket-Key"))
                                   : accept_override;
    send_raw(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Accept: " +
        accept + "\r\n\r\n");
    upgraded_ = true;
}

void ServerConn::send_frame(Opcode op, std::string_view payload, bool fin) {
    std::string f;
    net::ws::encode_frame(f, op, payload, fin);
    send_raw(f);
}

std::string ServerConn::path() const {
    const size_t sp = request_.find(' ');
    const size_t sp2 = request_.find(' ', sp + 1);
    if (sp == std::string::npos || sp2 == std::string::npos) return "";
    return request_.substr(sp + 1, sp2 - sp - 1);
}

std::string ServerConn::header(std::string_view name) const {
    size_t pos = request_.find("\r\n");
    while (pos != std::string::npos && pos + 2 < request_.size()) {
        const size_t end = request_.find("\r\n", pos + 2);
        const std::string line = request_.substr(pos + 2, end - pos - 2);
        const size_t colon = line.find(':');
        if (colon != std::string::npos && colon == name.size() &&
            strncasecmp(line.c_str(), std::string(name).c_str(), colon) == 0) {
            size_t v = colon + 1;
            while (v < line.size() && line[v] == ' ') ++v;
            return line.substr(v);
        }
        pos = end;
    }
    return "";
}

void ServerConn::on_bytes(std::string_view bytes) {
    if (!tls_) {
        on_plain(bytes);
        return;
    }
    tls_->feed(bytes);
    std::string plain;
    auto r = tls_->pump(plain);
    flush_tls();
    if (!r) {
        drop();
        return;
    }
    if (!plain.empty()) on_plain(plain);
}

void ServerConn::on_plain(std::string_view plain) {
    if (!have_request_) {
        buffer_.append(plain);
        const size_t end = buffer_.find("\r\n\r\n");
        if (end == std::string::npos) return;
        request_ = buffer_.substr(0, end + 4);
        std::string rest = buffer_.substr(end + 4);
        buffer_.clear();
        have_request_ = true;
        if (server_->on_request) server_->on_request(*this);
        if (!rest.empty() && upgraded_) on_plain(rest);
        return;
    }
    if (!upgraded_) return;
    for (;;) {
        Event e = decoder_.next(plain);
        if (e.kind == Event::Kind::none) break;
        events_.push_back(e);
        if (server_->on_event) server_->on_event(*this, e);
        if (e.kind == Event::Kind::error || tcp_ == nullptr) break;
    }
}

TestPki make_test_pki(const std::string& dir) {
    TestPki p;
    p.dir = dir;
    auto sh = [&](const std::string& script) {
        RunResult r =
            run({"/bin/sh", "-c", "cd '" + dir + "' && " + script}, std::chrono::seconds(60));
        INFO(r.err);
        REQUIRE(r.exit_code == 0);
    };
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    sh("openssl req -x509 " + ec +
       " -keyout ca.key -out ca.pem -days 2 -subj '/CN=myriarch test CA' 2>/dev/null");
    sh("openssl req -x509 " + ec +
       " -keyout other-ca.key -out other-ca.pem -days 2 -subj '/CN=unrelated CA' 2>/dev/null");
    auto leaf = [&](const std::string& name, const std::string& san, const std::string& days) {
        sh("openssl req " + ec + " -keyout " + name + ".key -out " + name +
           ".csr -subj '/CN=" + name + "' 2>/dev/null");
        sh("printf 'subjectAltName=" + san + "\\n' > " + name + ".ext");
        sh("openssl x509 -req -in " + name + ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -out " +
           name + ".pem " + days + " -extfile " + name + ".ext 2>/dev/null");
    };
    leaf("server", "IP:127.0.0.1,DNS:localhost", "-days 2");
    leaf("ip-only", "IP:127.0.0.1", "-days 2");
    p.ca = dir + "/ca.pem";
    p.other_ca = dir + "/other-ca.pem";
    p.server_cert = dir + "/server.pem";
    p.server_key = dir + "/server.key";
    p.ip_cert = dir + "/ip-only.pem";
    p.ip_key = dir + "/ip-only.key";
    // An expired leaf: signed with a validity window that ended yesterday (openssl ca takes
    // explicit dates, x509 -req does not).
    sh("mkdir -p ca.d && : > ca.d/index.txt && echo 01 > ca.d/serial && "
       "printf '[ca]\\ndefault_ca=d\\n[d]\\ndatabase=ca.d/index.txt\\nserial=ca.d/serial\\n"
       "new_certs_dir=ca.d\\ndefault_md=sha256\\npolicy=p\\ncopy_extensions=copy\\n"
       "[p]\\ncommonName=supplied\\n' > ca.cnf");
    sh("openssl req " + ec +
       " -keyout expired.key -out expired.csr -subj '/CN=expired' "
       "-addext subjectAltName=IP:127.0.0.1 2>/dev/null");
    sh("openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr "
       "-out expired.pem -startdate 20200101000000Z -enddate 20200102000000Z 2>/dev/null");
    p.expired_cert = dir + "/expired.pem";
    p.expired_key = dir + "/expired.key";
    return p;
}

}  // namespace myr::test
