// Streams and TLS over real sockets: certificate checks with the messages people read, the
// plaintext rule on resolved addresses, name resolution.
#include "net/stream.hpp"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "test_server.hpp"

using namespace myr;
using namespace myr::net;
using namespace myr::test;

namespace {

struct Outcome {
    bool connected = false;
    std::string data;
    std::optional<Status> end;
};

std::unique_ptr<Stream> open_stream(TestLoop& loop, StreamOptions o, Outcome& out) {
    Stream::Handlers h;
    h.on_connected = [&out] { out.connected = true; };
    h.on_data = [&out](std::string_view d) { out.data.append(d); };
    h.on_end = [&out](Status st) { out.end = std::move(st); };
    auto s = std::make_unique<Stream>(loop.get(), loop.sched(), std::move(o), std::move(h));
    s->start();
    return s;
}

// Connects with TLS to a server presenting `cert`; returns the error ("" when it connected).
std::string tls_error(const std::string& cert, const std::string& key, const std::string& ca,
                      const std::string& host, const std::string& server_name) {
    TestLoop loop;
    std::string result;
    {
        auto cfg = TlsConfig::server(cert, key);
        REQUIRE(cfg.ok());
        TestServer server(loop.get(), *cfg);
        server.on_request = [](ServerConn& c) { c.send_raw("pong"); };
        StreamOptions o;
        o.host = host;
        o.port = static_cast<uint16_t>(server.port());
        o.tls = true;
        o.ca_file = ca;
        o.tls_server_name = server_name;
        Outcome out;
        auto s = open_stream(loop, o, out);
        REQUIRE(loop.run_until([&] { return out.connected || out.end; }));
        if (out.connected) {
            s->write("ping\r\n\r\n");
            REQUIRE(loop.run_until([&] { return out.data == "pong"; }));
            s->close();
        } else {
            REQUIRE(!out.end->ok());
            result = out.end->error().message();
        }
    }
    CHECK(loop.close() == 0);
    return result;
}

// Connects to `server` (which answers "hi") by `host`; "" when the connection carried data both
// ways, else what went wrong.
std::string connect_by(TestLoop& loop, TestServer& server, const std::string& host) {
    StreamOptions o;
    o.host = host;
    o.port = static_cast<uint16_t>(server.port());
    Outcome out;
    auto s = open_stream(loop, o, out);
    if (!loop.run_until([&] { return out.connected || out.end; }, std::chrono::seconds(30))) {
        return "neither connected nor failed within 30 s";
    }
    if (out.end) return out.end->ok() ? "ended without connecting" : out.end->error().message();
    const std::string want_peer = "127.0.0.1:" + std::to_string(server.port());
    if (s->peer() != want_peer) return "connected to " + s->peer() + ", not " + want_peer;
    s->write("x\r\n\r\n");
    if (!loop.run_until([&] { return out.data == "hi"; })) return "no answer from the server";
    return "";
}

std::string self_exe() {
    char self[4096] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(n > 0);
    return self;
}

// The re-run of one test case in a prepared environment passed: doctest's summary line.
void check_inner_run(const RunResult& r) {
    INFO(r.out, r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(std::regex_search(r.out, std::regex("test cases: +1 \\| +1 passed \\| +0 failed")));
}

// A DNS server for the chroot case, on UDP port 53 of a loopback address other than 127.0.0.1,
// run by the outer test in a thread while the chrooted copy asks it. It answers an A query for
// `name` with 127.0.0.1, any other type of `name` with no records, and every other name with
// NXDOMAIN, which is what a cluster DNS says about a name it does not know.
class TinyDns {
  public:
    explicit TinyDns(std::string name) : name_(std::move(name)) {
        fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd_ >= 0);
        // Another test run on the machine may hold one address; try a few.
        for (int last = 2; last < 10 && address_.empty(); ++last) {
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(53);
            a.sin_addr.s_addr = htonl(0x7f000000u | static_cast<uint32_t>(last));
            if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
                address_ = "127.0.0." + std::to_string(last);
            }
        }
        REQUIRE_MESSAGE(!address_.empty(), "no free UDP port 53 on 127.0.0.2-9");
        thread_ = std::thread([this] { serve(); });
    }
    ~TinyDns() {
        stop_ = true;
        thread_.join();
        ::close(fd_);
    }
    TinyDns(const TinyDns&) = delete;
    TinyDns& operator=(const TinyDns&) = delete;
    const std::string& address() const { return address_; }
    // Every name asked so far, once per query.
    std::vector<std::string> asked() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return asked_;
    }

  private:
    void serve() {
        while (!stop_) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 50) <= 0) continue;
            unsigned char q[512];
            sockaddr_in from{};
            socklen_t from_len = sizeof from;
            const ssize_t n =
                ::recvfrom(fd_, q, sizeof q, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
            if (n < 12 || q[4] != 0 || q[5] != 1) continue;  // one question
            // The question: labels, then type and class.
            std::string qname;
            size_t at = 12;
            while (at < static_cast<size_t>(n) && q[at] != 0 && q[at] < 64) {
                const size_t len = q[at];
                if (at + 1 + len > static_cast<size_t>(n)) break;
                if (!qname.empty()) qname += '.';
                for (size_t i = 0; i < len; ++i) {
                    qname += static_cast<char>(std::tolower(q[at + 1 + i]));
                }
                at += 1 + len;
            }
            if (at + 5 > static_cast<size_t>(n) || q[at] != 0) continue;
            const size_t question_end = at + 5;
            const bool known = qname == name_;
            const bool type_a = q[at + 1] == 0 && q[at + 2] == 1;
            {
                std::lock_guard<std::mutex> lock(mutex_);
                asked_.push_back(qname);
            }
            unsigned char r[600];
            std::memcpy(r, q, question_end);
            r[2] = static_cast<unsigned char>(0x80 | (q[2] & 0x01));    // QR, RD copied
            r[3] = static_cast<unsigned char>(0x80 | (known ? 0 : 3));  // RA, NOERROR/NXDOMAIN
            r[6] = 0;
            r[7] = known && type_a ? 1 : 0;  // ANCOUNT
            r[8] = r[9] = r[10] = r[11] = 0;
            size_t len = question_end;
            if (known && type_a) {
                // A pointer to the question's name, A, IN, TTL 0, 4 bytes: 127.0.0.1.
                const unsigned char answer[] = {0xc0, 0x0c, 0, 1, 0,   1, 0, 0,
                                                0,    0,    0, 4, 127, 0, 0, 1};
                std::memcpy(r + len, answer, sizeof answer);
                len += sizeof answer;
            }
            ::sendto(fd_, r, len, 0, reinterpret_cast<sockaddr*>(&from), from_len);
        }
    }

    std::string name_;
    std::string address_;
    int fd_ = -1;
    std::atomic<bool> stop_{false};
    mutable std::mutex mutex_;
    std::vector<std::string> asked_;
    std::thread thread_;
};

}  // namespace

TEST_CASE("tls: verified chain and host name connect and carry data both ways") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    CHECK(tls_error(pki.server_cert, pki.server_key, pki.ca, "127.0.0.1", "") == "");
    CHECK(tls_error(pki.server_cert, pki.server_key, pki.ca, "127.0.0.1", "localhost") == "");
    CHECK(tls_error(pki.server_cert, pki.server_key, pki.ca, "127.0.0.1", "LOCALHOST") == "");
}

TEST_CASE("tls: a certificate for another host is refused, naming both") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    const std::string err =
        tls_error(pki.ip_cert, pki.ip_key, pki.ca, "127.0.0.1", "wrong.example");
    CHECK(err.find("TLS: certificate for 127.0.0.1 does not match host \"wrong.example\"") !=
          std::string::npos);
    // An IP SAN does not vouch for a name that happens to resolve to it, nor the reverse.
    CHECK(tls_error(pki.ip_cert, pki.ip_key, pki.ca, "127.0.0.1", "localhost") != "");
    CHECK(tls_error(pki.server_cert, pki.server_key, pki.ca, "127.0.0.1", "127.0.0.2") != "");
}

TEST_CASE("tls: a certificate from an untrusted CA is refused, naming the CA file") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    const std::string err =
        tls_error(pki.server_cert, pki.server_key, pki.other_ca, "127.0.0.1", "");
    CHECK(err.find("TLS: certificate not trusted by " + pki.other_ca) != std::string::npos);
}

TEST_CASE("tls: an expired certificate is refused with its end date") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    const std::string err = tls_error(pki.expired_cert, pki.expired_key, pki.ca, "127.0.0.1", "");
    CHECK(err.find("TLS: certificate for 127.0.0.1 expired at 2020-01-02T00:00:00Z") !=
          std::string::npos);
}

TEST_CASE("tls: a missing CA file is a clear error") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    const std::string err =
        tls_error(pki.server_cert, pki.server_key, dir / "missing.pem", "127.0.0.1", "");
    CHECK(err.find("TLS: load CA file " + (dir / "missing.pem")) != std::string::npos);
}

TEST_CASE("tls: the session refuses anything below TLS 1.2") {
    // openssl s_client speaks the server side of the test here: a TLS 1.1-only client must fail.
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    TestLoop loop;
    {
        auto cfg = TlsConfig::server(pki.server_cert, pki.server_key);
        REQUIRE(cfg.ok());
        TestServer server(loop.get(), *cfg);
        const std::string port = std::to_string(server.port());
        auto p = Process::spawn({"/bin/sh", "-c",
                                 "echo | openssl s_client -connect 127.0.0.1:" + port +
                                     " -tls1_1 -cipher DEFAULT@SECLEVEL=0 2>&1; echo rc=$?"});
        REQUIRE(loop.run_until([&] { return !p.running(); }, std::chrono::seconds(30)));
        const std::string out = p.out();
        INFO(out);
        CHECK(out.find("rc=0") == std::string::npos);
        CHECK(out.find("alert protocol version") != std::string::npos);
        CHECK(out.find("Cipher is (NONE)") != std::string::npos);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("stream: localhost and numeric hosts resolve; plaintext rule uses resolved addresses") {
    CHECK(is_loopback_address("127.0.0.1"));
    CHECK(is_loopback_address("127.255.0.9"));
    CHECK(is_loopback_address("::1"));
    CHECK(is_loopback_address("::ffff:127.0.0.1"));
    CHECK_FALSE(is_loopback_address("10.0.0.1"));
    CHECK_FALSE(is_loopback_address("::ffff:10.0.0.1"));
    CHECK_FALSE(is_loopback_address("::"));
    CHECK_FALSE(is_loopback_address("0.0.0.0"));
    CHECK_FALSE(is_loopback_address("localhost"));  // names are judged after resolution

    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) { c.send_raw("hi"); };
        // "localhost" is answered in-process (RFC 6761); literals go through getaddrinfo on
        // libuv's work queue. A name from /etc/hosts is the next test case.
        for (const char* host : {"localhost", "127.0.0.1"}) {
            CAPTURE(host);
            CHECK(connect_by(loop, server, host) == "");
        }
        // A resolution failure is reported, not thrown.
        StreamOptions o;
        o.host = "name.invalid";
        o.port = 80;
        Outcome out;
        auto s = open_stream(loop, o, out);
        REQUIRE(loop.run_until([&] { return out.end.has_value(); }, std::chrono::seconds(30)));
        CHECK(!out.end->ok());
        CHECK(out.end->error().message().find("resolve name.invalid") != std::string::npos);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("stream: destroying a stream while its name lookup runs leaves nothing behind") {
    TestLoop loop;
    {
        StreamOptions o;
        o.host = "name.invalid";
        o.port = 80;
        Outcome out;
        auto s = open_stream(loop, o, out);
        s.reset();
        loop.run_for(std::chrono::milliseconds(50));
        CHECK(!out.end);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("stream: a name listed in /etc/hosts is looked up by the system resolver") {
    // The name must come from the real getaddrinfo, not from a list the test hopes the machine
    // has, so the case re-runs itself in a private mount namespace whose /etc/hosts it writes.
    if (std::getenv("MYR_NET_STREAM_HOSTS") == nullptr) {
        if (!is_root()) {
            MYR_SKIP("needs root for a private mount namespace with its own /etc/hosts");
        }
        TempDir dir;
        write_file(dir / "hosts", "127.0.0.1 localhost\n127.0.0.1 myr-stream.test\n");
        SpawnOptions so;
        so.env["MYR_NET_STREAM_HOSTS"] = "1";
        check_inner_run(
            run({"unshare", "--mount", "sh", "-c",
                 "mount --bind '" + (dir / "hosts") + "' /etc/hosts && exec '" + self_exe() +
                     "' -tc='stream: a name listed in /etc/hosts is looked up*'"},
                std::chrono::seconds(60), so));
        return;
    }
    REQUIRE(read_file("/etc/hosts").find("myr-stream.test") != std::string::npos);
    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) { c.send_raw("hi"); };
        CHECK(connect_by(loop, server, "myr-stream.test") == "");
        // Only the listed name: a neighbour of it is not made up by anything.
        const std::string other = connect_by(loop, server, "myr-other.test");
        CHECK(other.find("resolve myr-other.test") != std::string::npos);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("stream: the static binary in an empty chroot resolves by /etc/hosts and DNS") {
    // docs/net.md: a static glibc binary in a FROM scratch image (no nsswitch.conf, no NSS
    // libraries) still reads /etc/hosts and asks the nameservers of /etc/resolv.conf, and
    // localhost needs no file at all. The case copies this test binary into an empty directory
    // and re-runs itself there with chroot, once per layout of /etc:
    //   empty   nothing: localhost and literals only.
    //   hosts   only /etc/hosts. (No resolv.conf: glibc asks 127.0.0.1:53, where nothing answers.)
    //   dns     /etc/hosts and a resolv.conf naming TinyDns. Both names resolve, and the name
    //           in /etc/hosts never reaches DNS: without nsswitch.conf glibc (2.35 and later)
    //           uses "files dns" for hosts.
    const char* mode = std::getenv("MYR_NET_CHROOT");
    if (mode == nullptr) {
        if (getauxval(AT_BASE) != 0) {
            MYR_SKIP("this test binary is dynamically linked; the static build runs this case");
        }
        if (!is_root()) {
            MYR_SKIP("chroot needs root");
        }
        TinyDns dns("myr-dns.test");
        for (const std::string m : {"empty", "hosts", "dns"}) {
            CAPTURE(m);
            TempDir root;
            write_file(root / "net_integration_test", read_file(self_exe()), 0755);
            if (m != "empty") {
                REQUIRE(::mkdir((root / "etc").c_str(), 0755) == 0);
                // No localhost line: localhost must resolve without any file.
                write_file(root / "etc/hosts", "127.0.0.1 myr-hosts.test\n");
            }
            if (m == "dns") {
                write_file(root / "etc/resolv.conf",
                           "nameserver " + dns.address() + "\noptions timeout:2 attempts:1\n");
            }
            SpawnOptions so;
            so.env["MYR_NET_CHROOT"] = m;
            check_inner_run(run({"chroot", root.path(), "/net_integration_test",
                                 "-tc=stream: the static binary in an empty chroot*"},
                                std::chrono::seconds(90), so));
        }
        const std::vector<std::string> asked = dns.asked();
        std::string all;
        for (const auto& n : asked) all += n + " ";
        INFO("asked TinyDns: " << all);
        CHECK(std::count(asked.begin(), asked.end(), "myr-dns.test") >= 1);
        CHECK(std::count(asked.begin(), asked.end(), "myr-hosts.test") == 0);
        return;
    }
    const std::string m = mode;
    CHECK(exists("/etc/hosts") == (m != "empty"));
    CHECK(exists("/etc/resolv.conf") == (m == "dns"));
    CHECK_FALSE(exists("/etc/nsswitch.conf"));
    TestLoop loop;
    {
        TestServer server(loop.get());
        server.on_request = [](ServerConn& c) { c.send_raw("hi"); };
        CHECK(connect_by(loop, server, "localhost") == "");
        CHECK(connect_by(loop, server, "127.0.0.1") == "");
        auto resolves = [&](const std::string& name, bool yes) {
            CAPTURE(name);
            const std::string err = connect_by(loop, server, name);
            if (yes) {
                CHECK(err == "");
            } else {
                CHECK(err.find("resolve " + name) != std::string::npos);
            }
        };
        resolves("myr-hosts.test", m != "empty");
        resolves("myr-dns.test", m == "dns");
    }
    CHECK(loop.close() == 0);
}

namespace {

// Runs a client and a server session against each other in memory until both finished the
// handshake (or one failed); false when it did not complete.
bool handshake_in_memory(TlsSession& client, TlsSession& server) {
    std::string plain;
    for (int round = 0; round < 20; ++round) {
        if (!client.pump(plain).ok() || !server.pump(plain).ok()) return false;
        server.feed(client.take_output());
        if (!server.pump(plain).ok()) return false;
        client.feed(server.take_output());
        if (client.handshake_done() && server.handshake_done()) return true;
    }
    return false;
}

}  // namespace

TEST_CASE(
    "tls: a client's own configuration drops its CA certificates after the handshake, a shared one "
    "keeps them") {
    TempDir dir;
    const TestPki pki = make_test_pki(dir.path());
    auto server_cfg = TlsConfig::server(pki.server_cert, pki.server_key);
    REQUIRE(server_cfg.ok());
    for (const bool shared : {false, true}) {
        CAPTURE(shared);
        auto client_cfg = TlsConfig::client(pki.ca);
        REQUIRE(client_cfg.ok());
        std::shared_ptr<TlsConfig> kept = shared ? *client_cfg : nullptr;
        auto client = TlsSession::client(std::move(*client_cfg), "127.0.0.1");
        auto server = TlsSession::server(*server_cfg);
        REQUIRE(client.ok());
        REQUIRE(server.ok());
        CHECK((*client)->holds_trust_anchors());
        REQUIRE(handshake_in_memory(**client, **server));
        CHECK((*client)->holds_trust_anchors() == shared);
        // Application data still flows both ways once the anchors are gone.
        REQUIRE((*client)->write("ping").ok());
        (*server)->feed((*client)->take_output());
        std::string got;
        REQUIRE((*server)->pump(got).ok());
        CHECK(got == "ping");
        REQUIRE((*server)->write("pong").ok());
        (*client)->feed((*server)->take_output());
        got.clear();
        REQUIRE((*client)->pump(got).ok());
        CHECK(got == "pong");
    }
}
