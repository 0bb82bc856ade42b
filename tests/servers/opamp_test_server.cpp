// A scripted OpAMP server over WebSocket (ws:// and wss://) for the agent's integration tests.
//
//   opamp-test-server --port-file F --record R [--host ADDR] [--tls-cert C --tls-key K]
//                     [--on N:ACTIONS]...
//                     [--upgrade N:STATUS[:RETRY_AFTER_S]]... [--refuse-all STATUS[:RETRY_AFTER]]
//                     [--commands FILE] [--no-reply]
//
// Every AgentToServer received is decoded with the project's codec and appended to R as one JSON
// line, next to connection events ("open" with the Authorization header, "rejected", "closed",
// "bad_message"). By default each AgentToServer gets a plain ServerToAgent reply (as real servers
// do), which the agent must not answer. --on N:ACTIONS changes the reply to the N-th AgentToServer
// (1-based, counted over all connections); --upgrade N:... answers the N-th upgrade request with a
// non-101 status; --each ACTIONS applies to every other AgentToServer; --commands FILE is polled
// and each new line's ACTIONS go to the newest connection (`all:ACTIONS`: to every open one).
//
// ACTIONS, joined with '+': full | heartbeat=S | offer=NAME,VERSION,HASH[,TYPE] |
//   release=FILE (a real offer: see below) | new_uid=UUID |
//   unavailable=MS (retry_after; -1 = none) | bad_request | close=CODE | drop | garbage=HEX |
//   nonzero_header | oversize=BYTES | text | quit
//
// Hostile actions, for the budget tests (docs/opamp.md, "Budgets"):
//   flood=KIND,N       N frames of KIND written at once: ping | full (ReportFullState) |
//                      uid (new_instance_uid, alternating between two values) |
//                      entries (one offer of N empty map entries, 4 bytes each) |
//                      bignames (one offer of 32 packages named with N bytes each, so that
//                      every report the agent sends afterwards is 32 x N bytes)
//   stream=KIND,S      a flood of 1000 frames of KIND every 10 ms for S seconds
//   stop_reading       this connection is never read again (its peer's writes pile up)
// release=FILE offers one package described by FILE, one `key=value` per line: name, version,
// url, sha256 (hex of the artifact: DownloadableFile.content_hash), hash (the package hash, hex;
// default = sha256), type (0 TopLevel, 1 Addon), signature_file (its bytes are
// DownloadableFile.signature, a Sigstore bundle), header (`Name: value`, repeatable),
// all_hash (PackagesAvailable.all_packages_hash, hex; default = hash). Several release= actions in
// one ACTIONS make one offer of several packages.
//
// --refuse-all answers every upgrade with STATUS and, when given, the literal Retry-After text
// (seconds, an HTTP date, or anything else).
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "net/tls.hpp"
#include "net/ws_frame.hpp"
#include "opamp/messages.hpp"
#include "opamp/uid.hpp"

using namespace myr;
using namespace myr::opamp;
namespace ws = myr::net::ws;

namespace {

struct Upgrade {
    int status = 0;
    int retry_after = -1;
};

struct Options {
    std::string host = "127.0.0.1";
    int port = 0;
    std::string port_file;
    std::string record;
    std::string cert, key;
    std::string commands;
    std::map<int, std::string> on;
    std::string each;  // ACTIONS for every AgentToServer without an --on entry
    std::map<int, Upgrade> upgrades;
    int refuse_all = 0;              // status for every upgrade; 0 = none
    std::string refuse_retry_after;  // literal Retry-After of those answers ("" = none)
    bool refuse_retry_after_set = false;
    bool reply = true;
    size_t max_message = 16u << 20;
};

Options g_opt;
uv_loop_t* g_loop;
std::shared_ptr<net::TlsConfig> g_tls;
int g_record_fd = -1;
int g_messages = 0;
int g_upgrades = 0;
int g_conn_ids = 0;
auto g_t0 = std::chrono::steady_clock::now();

std::string hex(std::string_view b) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (unsigned char c : b) {
        s.push_back(d[c >> 4]);
        s.push_back(d[c & 15]);
    }
    return s;
}

std::string unhex(std::string_view h) {
    std::string out;
    for (size_t i = 0; i + 1 < h.size(); i += 2) {
        out.push_back(static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
    }
    return out;
}

void record(json_object* o, int conn, const char* event) {
    json_object_object_add(o, "event", json_object_new_string(event));
    json_object_object_add(o, "conn", json_object_new_int(conn));
    json_object_object_add(
        o, "t_ms",
        json_object_new_int64(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::steady_clock::now() - g_t0)
                                  .count()));
    std::string line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    line.push_back('\n');
    if (g_record_fd >= 0) {
        ssize_t n = write(g_record_fd, line.data(), line.size());
        (void)n;
    }
    json_object_put(o);
}

json_object* kvs_json(const std::vector<KeyValue>& kvs) {
    json_object* o = json_object_new_object();
    for (auto& kv : kvs)
        json_object_object_add(o, kv.key.c_str(), json_object_new_string(kv.value.c_str()));
    return o;
}

json_object* to_json(const AgentToServer& m) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "instance_uid", json_object_new_string(hex(m.instance_uid).c_str()));
    json_object_object_add(o, "sequence_num",
                           json_object_new_int64(static_cast<int64_t>(m.sequence_num)));
    json_object_object_add(o, "capabilities",
                           json_object_new_int64(static_cast<int64_t>(m.capabilities)));
    json_object_object_add(o, "flags", json_object_new_int64(static_cast<int64_t>(m.flags)));
    json_object_object_add(o, "agent_disconnect", json_object_new_boolean(m.agent_disconnect));
    if (m.agent_description) {
        json_object_object_add(o, "identifying",
                               kvs_json(m.agent_description->identifying_attributes));
        json_object_object_add(o, "non_identifying",
                               kvs_json(m.agent_description->non_identifying_attributes));
    }
    if (m.health) {
        json_object* h = json_object_new_object();
        json_object_object_add(h, "healthy", json_object_new_boolean(m.health->healthy));
        json_object_object_add(h, "status", json_object_new_string(m.health->status.c_str()));
        json_object_object_add(h, "last_error",
                               json_object_new_string(m.health->last_error.c_str()));
        json_object_object_add(
            h, "start_time_unix_nano",
            json_object_new_int64(static_cast<int64_t>(m.health->start_time_unix_nano)));
        json_object_object_add(o, "health", h);
    }
    if (m.package_statuses) {
        json_object* ps = json_object_new_object();
        json_object_object_add(
            ps, "all_packages_hash",
            json_object_new_string(
                hex(m.package_statuses->server_provided_all_packages_hash).c_str()));
        json_object* arr = json_object_new_array();
        for (auto& p : m.package_statuses->packages) {
            json_object* e = json_object_new_object();
            json_object_object_add(e, "name", json_object_new_string(p.name.c_str()));
            json_object_object_add(e, "status", json_object_new_string(to_string(p.status)));
            json_object_object_add(e, "error_message",
                                   json_object_new_string(p.error_message.c_str()));
            json_object_object_add(e, "agent_has_version",
                                   json_object_new_string(p.agent_has_version.c_str()));
            json_object_object_add(e, "server_offered_version",
                                   json_object_new_string(p.server_offered_version.c_str()));
            json_object_object_add(e, "server_offered_hash",
                                   json_object_new_string(hex(p.server_offered_hash).c_str()));
            if (p.download_details) {
                json_object_object_add(
                    e, "download_percent",
                    json_object_new_double(p.download_details->download_percent));
                json_object_object_add(
                    e, "download_bytes_per_second",
                    json_object_new_double(p.download_details->download_bytes_per_second));
            }
            json_object_array_add(arr, e);
        }
        json_object_object_add(ps, "packages", arr);
        json_object_object_add(o, "package_statuses", ps);
    }
    return o;
}

// Appends the whole file to `out`; false when it cannot be opened.
bool slurp(const std::string& path, std::string& out) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return false;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    std::fclose(f);
    return true;
}

// A package offer read from a `key=value` file (see release= above), with its all_hash.
Result<std::pair<PackageAvailable, std::string>> release_from_file(const std::string& path) {
    std::string text;
    if (!slurp(path, text)) return fail("cannot open");
    PackageAvailable pa;
    DownloadableFile df;
    std::string all_hash;
    bool have_hash = false, have_all = false;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) nl = text.size();
        std::string line = text.substr(pos, nl - pos);
        pos = nl + 1;
        auto eq = line.find('=');
        if (line.empty() || eq == std::string::npos) continue;
        std::string k = line.substr(0, eq), v = line.substr(eq + 1);
        if (k == "name") {
            pa.name = v;
        } else if (k == "version") {
            pa.version = v;
        } else if (k == "url") {
            df.download_url = v;
        } else if (k == "sha256") {
            df.content_hash = unhex(v);
        } else if (k == "hash") {
            pa.hash = unhex(v);
            have_hash = true;
        } else if (k == "type") {
            pa.type = static_cast<PackageType>(std::stoi(v));
        } else if (k == "all_hash") {
            all_hash = unhex(v);
            have_all = true;
        } else if (k == "signature_file") {
            if (!slurp(v, df.signature)) return fail("cannot open signature_file " + v);
        } else if (k == "header") {
            auto colon = v.find(':');
            if (colon == std::string::npos) return fail("header without ':': " + v);
            std::string hv = v.substr(colon + 1);
            hv.erase(0, hv.find_first_not_of(' '));
            df.headers.push_back(Header{v.substr(0, colon), hv});
        } else {
            return fail("unknown key " + k);
        }
    }
    if (!have_hash) pa.hash = df.content_hash;
    if (!have_all) all_hash = pa.hash;
    pa.file = std::move(df);
    return std::make_pair(std::move(pa), all_hash);
}

class Conn;
std::vector<Conn*> g_conns;  // live connections, newest last

struct Write {
    uv_write_t req;
    std::string data;
};

class Conn {
  public:
    explicit Conn(int id) : id_(id), dec_(ws::Role::server, g_opt.max_message) {
        tcp_.data = this;
        uv_tcp_init(g_loop, &tcp_);
    }
    uv_tcp_t* tcp() { return &tcp_; }
    int id() const { return id_; }
    bool open() const { return upgraded_ && !closing_ && !shut_; }

    void start() {
        if (g_tls) {
            auto s = net::TlsSession::server(g_tls);
            if (!s) {
                fail_conn("tls session: " + s.error().message());
                return;
            }
            tls_ = std::move(*s);
        }
        uv_read_start(
            reinterpret_cast<uv_stream_t*>(&tcp_),
            [](uv_handle_t*, size_t, uv_buf_t* b) {
                static char buf[65536];
                *b = uv_buf_init(buf, sizeof buf);
            },
            on_read);
    }

    // Applies one ACTIONS string: message-level actions are merged into one ServerToAgent.
    void act(const std::string& actions, const std::string& instance_uid) {
        ServerToAgent m;
        m.instance_uid = instance_uid;
        m.capabilities = 0x1f;
        bool send_msg = false;
        std::vector<std::string> after;
        size_t pos = 0;
        while (pos <= actions.size()) {
            size_t end = actions.find('+', pos);
            if (end == std::string::npos) end = actions.size();
            std::string a = actions.substr(pos, end - pos);
            pos = end + 1;
            if (a.empty()) continue;
            std::string key = a.substr(0, a.find('='));
            std::string val = a.find('=') == std::string::npos ? "" : a.substr(a.find('=') + 1);
            if (key == "full") {
                m.flags |= server_flag::report_full_state;
                send_msg = true;
            } else if (key == "heartbeat") {
                m.heartbeat_interval_seconds = std::stoull(val);
                send_msg = true;
            } else if (key == "offer") {
                std::vector<std::string> f;
                size_t p = 0;
                while (p <= val.size()) {
                    size_t e = val.find(',', p);
                    if (e == std::string::npos) e = val.size();
                    f.push_back(val.substr(p, e - p));
                    p = e + 1;
                }
                PackageAvailable pa;
                pa.name = f.size() > 0 ? f[0] : "otelcol-contrib";
                pa.version = f.size() > 1 ? f[1] : "0.117.0";
                pa.hash = f.size() > 2 ? f[2] : "hash";
                pa.type = static_cast<PackageType>(f.size() > 3 ? std::stoi(f[3]) : 0);
                pa.file = DownloadableFile{"https://127.0.0.1/artifacts/" + pa.name + ".tar.gz",
                                           std::string(32, '\x11'),
                                           "{\"mediaType\":\"bundle\"}",
                                           {{"X-Artifact-Token", "t"}}};
                if (!m.packages_available) m.packages_available = PackagesAvailable{};
                m.packages_available->packages.push_back(pa);
                m.packages_available->all_packages_hash += pa.hash;
                send_msg = true;
            } else if (key == "release") {
                auto pa = release_from_file(val);
                if (!pa) {
                    std::fprintf(stderr, "opamp-test-server: release=%s: %s\n", val.c_str(),
                                 pa.error().message().c_str());
                    continue;
                }
                if (!m.packages_available) m.packages_available = PackagesAvailable{};
                m.packages_available->packages.push_back(pa->first);
                m.packages_available->all_packages_hash += pa->second;
                send_msg = true;
            } else if (key == "new_uid") {
                auto u = uid_from_text(val);
                if (u) m.new_instance_uid = uid_bytes(*u);
                send_msg = true;
            } else if (key == "unavailable") {
                ServerErrorResponse e{ServerErrorType::unavailable, "test server unavailable", {}};
                long long ms = std::stoll(val.empty() ? "-1" : val);
                if (ms >= 0) e.retry_after_nanoseconds = static_cast<uint64_t>(ms) * 1'000'000ull;
                m.error_response = e;
                send_msg = true;
            } else if (key == "bad_request") {
                m.error_response = ServerErrorResponse{ServerErrorType::bad_request, "bad", {}};
                send_msg = true;
            } else {
                after.push_back(a);
            }
        }
        if (send_msg) send_frame(ws::Opcode::binary, frame_message(encode(m)));
        for (const std::string& a : after) {
            std::string key = a.substr(0, a.find('='));
            std::string val = a.find('=') == std::string::npos ? "" : a.substr(a.find('=') + 1);
            if (key == "close") {
                send_frame(
                    ws::Opcode::close,
                    ws::close_payload(static_cast<uint16_t>(std::stoi(val.empty() ? "1000" : val)),
                                      "test"));
                closing_ = true;
            } else if (key == "drop") {
                shutdown();
                return;
            } else if (key == "garbage") {
                send_frame(ws::Opcode::binary, unhex(val));
            } else if (key == "nonzero_header") {
                ServerToAgent f;
                f.flags = server_flag::report_full_state;
                send_frame(ws::Opcode::binary, "\x01" + encode(f));
            } else if (key == "oversize") {
                send_frame(ws::Opcode::binary, std::string(std::stoull(val), '\0'));
            } else if (key == "text") {
                send_frame(ws::Opcode::text, "hello");
            } else if (key == "quit") {
                uv_stop(g_loop);
            } else if (key == "flood") {
                auto comma = val.find(',');
                flood(val.substr(0, comma),
                      comma == std::string::npos ? 1 : std::stoull(val.substr(comma + 1)),
                      instance_uid);
            } else if (key == "stream") {
                auto comma = val.find(',');
                stream_kind_ = val.substr(0, comma);
                stream_uid_ = instance_uid;
                double secs = comma == std::string::npos ? 1 : std::stod(val.substr(comma + 1));
                stream_until_ = std::chrono::steady_clock::now() +
                                std::chrono::milliseconds(static_cast<long long>(secs * 1000));
                start_stream();
            } else if (key == "stop_reading") {
                uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
                json_object* o = json_object_new_object();
                record(o, id_, "stopped_reading");
            }
        }
    }

    // N frames of one kind in one write, as one TCP read's worth (or many) on the agent's side.
    void flood(const std::string& kind, size_t n, const std::string& instance_uid) {
        std::string out;
        if (kind == "entries") {
            // PackagesAvailable (ServerToAgent field 5) repeated with one empty map entry each:
            // protobuf merges them into one offer of n entries.
            std::string body(1, '\0');
            body.reserve(1 + 4 * n);
            for (size_t i = 0; i < n; ++i) body.append("\x2a\x02\x0a\x00", 4);
            ws::encode_frame(out, ws::Opcode::binary, body);
        } else if (kind == "bignames") {
            ServerToAgent m;
            m.instance_uid = instance_uid;
            m.packages_available = PackagesAvailable{};
            for (int i = 0; i < 32; ++i) {
                PackageAvailable pa;
                pa.name = std::to_string(i) + "-" + std::string(n, 'n');
                pa.version = "1.0.0";
                m.packages_available->packages.push_back(pa);
            }
            ws::encode_frame(out, ws::Opcode::binary, frame_message(encode(m)));
        } else if (kind == "ping") {
            for (size_t i = 0; i < n; ++i) ws::encode_frame(out, ws::Opcode::ping, "p");
        } else if (kind == "full" || kind == "uid") {
            for (size_t i = 0; i < n; ++i) {
                ServerToAgent m;
                m.instance_uid = instance_uid;
                if (kind == "full") {
                    m.flags = server_flag::report_full_state;
                } else {
                    m.new_instance_uid = std::string(16, static_cast<char>(0x10 + (i & 1)));
                }
                ws::encode_frame(out, ws::Opcode::binary, frame_message(encode(m)));
            }
        } else {
            std::fprintf(stderr, "opamp-test-server: unknown flood kind %s\n", kind.c_str());
            return;
        }
        json_object* o = json_object_new_object();
        json_object_object_add(o, "kind", json_object_new_string(kind.c_str()));
        json_object_object_add(o, "frames", json_object_new_int64(static_cast<int64_t>(n)));
        json_object_object_add(o, "bytes", json_object_new_int64(static_cast<int64_t>(out.size())));
        record(o, id_, "flood");
        send_raw(out);
    }

    void start_stream() {
        if (stream_timer_ != nullptr) return;
        // On the heap, freed in its own close callback: the connection may be freed first.
        stream_timer_ = new uv_timer_t;
        uv_timer_init(g_loop, stream_timer_);
        stream_timer_->data = this;
        uv_timer_start(
            stream_timer_,
            [](uv_timer_t* t) {
                auto* c = static_cast<Conn*>(t->data);
                // A peer that stopped reading makes our own queue grow: cap it, the test is about
                // the agent's memory, not ours.
                if (c->shut_ || std::chrono::steady_clock::now() >= c->stream_until_ ||
                    c->queued_ > (64u << 20)) {
                    if (c->shut_ || std::chrono::steady_clock::now() >= c->stream_until_)
                        c->stop_stream();
                    return;
                }
                c->flood(c->stream_kind_, 1000, c->stream_uid_);
            },
            10, 10);
    }
    void stop_stream() {
        if (stream_timer_ == nullptr) return;
        uv_close(reinterpret_cast<uv_handle_t*>(stream_timer_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
        stream_timer_ = nullptr;
    }

    void shutdown() {
        if (shut_) return;
        shut_ = true;
        stop_stream();
        json_object* o = json_object_new_object();
        record(o, id_, "closed");
        uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), [](uv_handle_t* h) {
            auto* c = static_cast<Conn*>(h->data);
            g_conns.erase(std::remove(g_conns.begin(), g_conns.end(), c), g_conns.end());
            delete c;
        });
    }

    std::string last_uid;

  private:
    static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* b) {
        auto* c = static_cast<Conn*>(s->data);
        if (n < 0) {
            c->shutdown();
            return;
        }
        if (n == 0) return;
        c->on_bytes(std::string_view(b->base, static_cast<size_t>(n)));
    }

    void on_bytes(std::string_view bytes) {
        if (shut_) return;
        if (tls_) {
            tls_->feed(bytes);
            std::string plain;
            auto r = tls_->pump(plain);
            flush_tls();
            if (!r) {
                fail_conn(r.error().message());
                return;
            }
            if (!plain.empty()) on_plain(plain);
            if (*r) shutdown();
            return;
        }
        on_plain(bytes);
    }

    void on_plain(std::string_view bytes) {
        if (!upgraded_) {
            head_.append(bytes);
            auto end = head_.find("\r\n\r\n");
            if (end == std::string::npos) {
                if (head_.size() > 16384) fail_conn("upgrade request too large");
                return;
            }
            std::string rest = head_.substr(end + 4);
            if (!handle_upgrade(head_.substr(0, end + 2))) return;
            if (rest.empty()) return;
            bytes = stash_ = rest;
        }
        std::string_view in = bytes;
        for (;;) {
            ws::Event ev = dec_.next(in);
            if (ev.kind == ws::Event::Kind::none) break;
            if (ev.kind == ws::Event::Kind::message) {
                on_message(ev);
            } else if (ev.kind == ws::Event::Kind::ping) {
                send_frame(ws::Opcode::pong, ev.data);
            } else if (ev.kind == ws::Event::Kind::close) {
                json_object* o = json_object_new_object();
                json_object_object_add(o, "code", json_object_new_int(ev.code));
                record(o, id_, "peer_close");
                if (!closing_)
                    send_frame(ws::Opcode::close,
                               ws::close_payload(ev.code == 1005 ? 1000 : ev.code, ""));
                closing_ = true;
                end_after_write_ = true;
                maybe_end();
                return;
            } else if (ev.kind == ws::Event::Kind::error) {
                json_object* o = json_object_new_object();
                json_object_object_add(o, "code", json_object_new_int(ev.code));
                json_object_object_add(o, "error", json_object_new_string(ev.data.c_str()));
                record(o, id_, "protocol_error");
                send_frame(ws::Opcode::close, ws::close_payload(ev.code, ""));
                end_after_write_ = true;
                maybe_end();
                return;
            }
            if (shut_) return;
        }
    }

    void on_message(const ws::Event& ev) {
        auto body = unframe_message(ev.data);
        Result<AgentToServer> m =
            body ? decode_agent_to_server(*body) : Result<AgentToServer>(body.fail());
        if (!m) {
            json_object* o = json_object_new_object();
            json_object_object_add(o, "error", json_object_new_string(m.error().message().c_str()));
            json_object_object_add(o, "hex", json_object_new_string(hex(ev.data).c_str()));
            record(o, id_, "bad_message");
            return;
        }
        ++g_messages;
        last_uid = m->instance_uid;
        json_object* o = to_json(*m);
        json_object_object_add(o, "n", json_object_new_int(g_messages));
        record(o, id_, "message");
        auto it = g_opt.on.find(g_messages);
        if (it != g_opt.on.end()) {
            act(it->second, m->instance_uid);
        } else if (!g_opt.each.empty() && !m->agent_disconnect) {
            act(g_opt.each, m->instance_uid);
        } else if (g_opt.reply && !m->agent_disconnect) {
            ServerToAgent r;
            r.instance_uid = m->instance_uid;
            r.capabilities = 0x1f;
            send_frame(ws::Opcode::binary, frame_message(encode(r)));
        }
    }

    bool handle_upgrade(const std::string& head) {
        ++g_upgrades;
        std::map<std::string, std::string> h;
        size_t pos = head.find("\r\n") + 2;
        std::string request_line = head.substr(0, pos - 2);
        while (pos < head.size()) {
            size_t e = head.find("\r\n", pos);
            std::string line = head.substr(pos, e - pos);
            pos = e + 2;
            auto colon = line.find(':');
            if (colon == std::string::npos) continue;
            std::string k = line.substr(0, colon);
            for (auto& ch : k) ch = static_cast<char>(tolower(ch));
            std::string v = line.substr(colon + 1);
            v.erase(0, v.find_first_not_of(' '));
            h[k] = v;
        }
        json_object* o = json_object_new_object();
        json_object_object_add(o, "request", json_object_new_string(request_line.c_str()));
        json_object_object_add(o, "authorization",
                               json_object_new_string(h["authorization"].c_str()));
        json_object_object_add(o, "attempt", json_object_new_int(g_upgrades));
        if (g_opt.refuse_all != 0) {
            json_object_object_add(o, "status", json_object_new_int(g_opt.refuse_all));
            record(o, id_, "rejected");
            std::string resp = "HTTP/1.1 " + std::to_string(g_opt.refuse_all) + " Test\r\n";
            if (g_opt.refuse_retry_after_set)
                resp += "Retry-After: " + g_opt.refuse_retry_after + "\r\n";
            resp += "Content-Length: 4\r\nConnection: close\r\n\r\nnope";
            send_raw(resp);
            end_after_write_ = true;
            maybe_end();
            return false;
        }
        auto it = g_opt.upgrades.find(g_upgrades);
        if (it != g_opt.upgrades.end()) {
            json_object_object_add(o, "status", json_object_new_int(it->second.status));
            record(o, id_, "rejected");
            std::string resp = "HTTP/1.1 " + std::to_string(it->second.status) + " Test\r\n";
            if (it->second.retry_after >= 0)
                resp += "Retry-After: " + std::to_string(it->second.retry_after) + "\r\n";
            resp += "Content-Length: 4\r\nConnection: close\r\n\r\nnope";
            send_raw(resp);
            end_after_write_ = true;
            maybe_end();
            return false;
        }
        record(o, id_, "open");
        std::string resp =
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Accept: " +
            ws::accept_key(h["sec-websocket-key"]) + "\r\n\r\n";
        send_raw(resp);
        upgraded_ = true;
        return true;
    }

    void send_frame(ws::Opcode op, std::string_view payload) {
        std::string out;
        ws::encode_frame(out, op, payload);
        send_raw(out);
    }

    void send_raw(std::string_view plain) {
        if (shut_) return;
        if (tls_) {
            if (!tls_->write(plain)) return;
            flush_tls();
            return;
        }
        write_socket(std::string(plain));
    }

    void flush_tls() {
        if (tls_ && tls_->has_output()) write_socket(tls_->take_output());
    }

    void write_socket(std::string data) {
        if (shut_) return;
        auto* w = new Write;
        w->data = std::move(data);
        w->req.data = this;
        uv_buf_t b = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
        ++pending_;
        queued_ += w->data.size();
        int rc =
            uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&tcp_), &b, 1, [](uv_write_t* r, int) {
                auto* w = reinterpret_cast<Write*>(r);
                auto* c = static_cast<Conn*>(r->data);
                c->queued_ -= w->data.size();
                delete w;
                --c->pending_;
                c->maybe_end();
            });
        if (rc != 0) {
            --pending_;
            queued_ -= w->data.size();
            delete w;
        }
    }

    void maybe_end() {
        if (end_after_write_ && pending_ == 0) shutdown();
    }

    void fail_conn(const std::string& why) {
        json_object* o = json_object_new_object();
        json_object_object_add(o, "error", json_object_new_string(why.c_str()));
        record(o, id_, "conn_error");
        shutdown();
    }

    int id_;
    uv_tcp_t tcp_;
    std::unique_ptr<net::TlsSession> tls_;
    ws::Decoder dec_;
    std::string head_, stash_;
    bool upgraded_ = false;
    bool closing_ = false;
    bool shut_ = false;
    bool end_after_write_ = false;
    int pending_ = 0;
    size_t queued_ = 0;  // bytes handed to uv_write and not yet written
    uv_timer_t* stream_timer_ = nullptr;
    std::string stream_kind_, stream_uid_;
    std::chrono::steady_clock::time_point stream_until_{};
};

uv_tcp_t g_server;
uv_timer_t g_cmd_timer;
off_t g_cmd_offset = 0;
std::string g_cmd_partial;

Conn* newest_open() {
    for (auto it = g_conns.rbegin(); it != g_conns.rend(); ++it) {
        if ((*it)->open()) return *it;
    }
    return nullptr;
}

void poll_commands(uv_timer_t*) {
    int fd = open(g_opt.commands.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    char buf[4096];
    ssize_t n;
    while ((n = pread(fd, buf, sizeof buf, g_cmd_offset)) > 0) {
        g_cmd_offset += n;
        g_cmd_partial.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    size_t nl;
    while ((nl = g_cmd_partial.find('\n')) != std::string::npos) {
        std::string line = g_cmd_partial.substr(0, nl);
        g_cmd_partial.erase(0, nl + 1);
        if (line == "quit") {
            uv_stop(g_loop);
            return;
        }
        if (line.rfind("all:", 0) == 0) {
            // Every open connection at once: a fleet offered one release (tests/bench/fleet.sh).
            std::vector<Conn*> open_now;
            for (Conn* c : g_conns) {
                if (c->open()) open_now.push_back(c);
            }
            for (Conn* c : open_now) c->act(line.substr(4), c->last_uid);
            continue;
        }
        if (Conn* c = newest_open()) c->act(line, c->last_uid);
    }
}

void on_connection(uv_stream_t* server, int status) {
    if (status < 0) return;
    auto* c = new Conn(++g_conn_ids);
    if (uv_accept(server, reinterpret_cast<uv_stream_t*>(c->tcp())) != 0) {
        c->shutdown();
        return;
    }
    g_conns.push_back(c);
    c->start();
}

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr, "opamp-test-server: %s\n", why);
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    signal(SIGPIPE, SIG_IGN);
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) usage(("missing value for " + a).c_str());
            return argv[++i];
        };
        if (a == "--port")
            g_opt.port = std::stoi(val());
        else if (a == "--host")  // an IPv4 or IPv6 literal (default 127.0.0.1)
            g_opt.host = val();
        else if (a == "--port-file")
            g_opt.port_file = val();
        else if (a == "--record")
            g_opt.record = val();
        else if (a == "--tls-cert")
            g_opt.cert = val();
        else if (a == "--tls-key")
            g_opt.key = val();
        else if (a == "--commands")
            g_opt.commands = val();
        else if (a == "--each")
            g_opt.each = val();
        else if (a == "--no-reply")
            g_opt.reply = false;
        else if (a == "--max-message")
            g_opt.max_message = std::stoull(val());
        else if (a == "--on") {
            std::string v = val();
            auto c = v.find(':');
            if (c == std::string::npos) usage("--on N:ACTIONS");
            g_opt.on[std::stoi(v.substr(0, c))] = v.substr(c + 1);
        } else if (a == "--upgrade") {
            std::string v = val();
            Upgrade u;
            int n = 0;
            if (std::sscanf(v.c_str(), "%d:%d:%d", &n, &u.status, &u.retry_after) < 2)
                usage("--upgrade N:STATUS[:S]");
            g_opt.upgrades[n] = u;
        } else if (a == "--refuse-all") {
            std::string v = val();
            auto c = v.find(':');
            g_opt.refuse_all = std::stoi(v.substr(0, c));
            if (c != std::string::npos) {
                g_opt.refuse_retry_after = v.substr(c + 1);
                g_opt.refuse_retry_after_set = true;
            }
        } else
            usage(("unknown argument " + a).c_str());
    }
    if (!g_opt.record.empty()) {
        g_record_fd = open(g_opt.record.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (g_record_fd < 0) usage("cannot open --record file");
    }
    if (!g_opt.cert.empty()) {
        auto cfg = net::TlsConfig::server(g_opt.cert, g_opt.key);
        if (!cfg) usage(cfg.error().message().c_str());
        g_tls = *cfg;
    }
    g_loop = uv_default_loop();
    uv_tcp_init(g_loop, &g_server);
    sockaddr_storage addr{};
    const bool v6 = g_opt.host.find(':') != std::string::npos;
    const int parsed =
        v6 ? uv_ip6_addr(g_opt.host.c_str(), g_opt.port, reinterpret_cast<sockaddr_in6*>(&addr))
           : uv_ip4_addr(g_opt.host.c_str(), g_opt.port, reinterpret_cast<sockaddr_in*>(&addr));
    if (parsed != 0) usage("--host must be an IPv4 or IPv6 literal");
    if (int rc = uv_tcp_bind(&g_server, reinterpret_cast<sockaddr*>(&addr), 0); rc != 0)
        usage(uv_strerror(rc));
    if (int rc = uv_listen(reinterpret_cast<uv_stream_t*>(&g_server), 128, on_connection); rc != 0)
        usage(uv_strerror(rc));
    sockaddr_storage bound{};
    int len = sizeof bound;
    uv_tcp_getsockname(&g_server, reinterpret_cast<sockaddr*>(&bound), &len);
    // sin_port and sin6_port sit at the same offset.
    const int port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    if (!g_opt.port_file.empty()) {
        std::string tmp = g_opt.port_file + ".tmp";
        FILE* f = std::fopen(tmp.c_str(), "w");
        if (!f) usage("cannot write --port-file");
        std::fprintf(f, "%d\n", port);
        std::fclose(f);
        std::rename(tmp.c_str(), g_opt.port_file.c_str());
    }
    if (!g_opt.commands.empty()) {
        uv_timer_init(g_loop, &g_cmd_timer);
        uv_timer_start(&g_cmd_timer, poll_commands, 20, 20);
    }
    uv_signal_t sig;
    uv_signal_init(g_loop, &sig);
    uv_signal_start(
        &sig, [](uv_signal_t*, int) { uv_stop(g_loop); }, SIGTERM);
    uv_run(g_loop, UV_RUN_DEFAULT);
    return 0;
}
