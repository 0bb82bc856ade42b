// Real servers from Debian's packages and a fault proxy, each started by a test on loopback with
// its own configuration, pid file, logs and temporary directories under the test's directory, and
// stopped with it (docs/download.md, "Real servers"): nginx as the artifact server, dnsmasq as the
// DNS server, Toxiproxy (tests/toxiproxy/build.sh) as a bad edge link. No system-wide service.
#pragma once

#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "harness.hpp"

namespace myr::test::realnet {

using namespace std::chrono_literals;

// Whether something accepts TCP connections on host:port (IPv4 or IPv6 literal).
inline bool listening(const std::string& host, int port) {
    return !http_get(host, port, "/", 1s).error.starts_with("connect");
}

// Latencies of probes (GET on new connections) taken while something else happens: the loop
// that serves them must never block.
class Latencies {
  public:
    void sample(const std::string& host, int port, const std::string& path) {
        const auto t0 = std::chrono::steady_clock::now();
        const int status = http_get(host, port, path, 5s).status;
        const std::chrono::duration<double, std::milli> d = std::chrono::steady_clock::now() - t0;
        if (status != 200) ++failed_;
        ms_.push_back(d.count());
    }
    size_t count() const { return ms_.size(); }
    int failed() const { return failed_; }
    // The p-th percentile in ms (0 without samples).
    double percentile(double p) const {
        if (ms_.empty()) return 0;
        std::vector<double> v = ms_;
        std::sort(v.begin(), v.end());
        const auto at = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1));
        return v[at];
    }
    std::string summary() const {
        std::ostringstream o;
        o << ms_.size() << " probes, p50 " << percentile(50) << " ms, p99 " << percentile(99)
          << " ms, max " << percentile(100) << " ms, " << failed_ << " failed";
        return o.str();
    }

  private:
    std::vector<double> ms_;
    int failed_ = 0;
};

// One nginx master process (`daemon off`) serving `servers` (the `server { … }` blocks) under
// `prefix`. Every request goes to prefix/access.log with the bytes sent (`$bytes_sent`, head and
// body), the status and the Range asked for.
class Nginx {
  public:
    Nginx(const std::string& prefix, const std::string& servers, std::vector<int> ports)
        : prefix_(prefix), ports_(std::move(ports)) {
        REQUIRE(run({"mkdir", "-p", prefix + "/tmp", prefix + "/logs"}).exit_code == 0);
        // `user root`: the test runs as root and serves files from its own temp dir; the worker
        // needs no other account (the image's `nobody` cannot read a 0700 temp dir).
        write_file(
            prefix + "/nginx.conf",
            "daemon off;\nmaster_process on;\nworker_processes 1;\nuser root;\n"
            "pid " +
                prefix + "/nginx.pid;\nerror_log " + prefix +
                "/logs/error.log info;\n"
                "events { worker_connections 64; }\n"
                "http {\n"
                "  default_type application/octet-stream;\n"
                "  log_format bytes '$request_method $uri $status $bytes_sent "
                "range=\"$http_range\" if_range=\"$http_if_range\" ae=\"$http_accept_encoding\"';\n"
                "  access_log " +
                prefix +
                "/logs/access.log bytes;\n"
                "  client_body_temp_path " +
                prefix +
                "/tmp/body;\n"
                "  proxy_temp_path " +
                prefix +
                "/tmp/proxy;\n"
                "  fastcgi_temp_path " +
                prefix +
                "/tmp/fastcgi;\n"
                "  uwsgi_temp_path " +
                prefix +
                "/tmp/uwsgi;\n"
                "  scgi_temp_path " +
                prefix + "/tmp/scgi;\n" + servers + "}\n");
        start();
    }
    ~Nginx() { stop(); }
    Nginx(const Nginx&) = delete;
    Nginx& operator=(const Nginx&) = delete;

    void start() {
        proc_.emplace(Process::spawn({"nginx", "-p", prefix_, "-e", prefix_ + "/logs/error.log",
                                      "-c", prefix_ + "/nginx.conf"}));
        for (int p : ports_) {
            const std::string host = p < 0 ? "::1" : "127.0.0.1";
            REQUIRE_MESSAGE(wait_until([&] { return listening(host, std::abs(p)); }, 10s, 20ms),
                            "nginx is not listening on " << p << ": "
                                                         << read_file(prefix_ + "/logs/error.log"));
        }
    }
    // Stops at once (TERM: "fast shutdown"; connections are closed mid-body).
    void stop() {
        if (!proc_) return;
        proc_->signal(SIGTERM);
        if (!proc_->wait(10s)) proc_->kill_now();
        proc_.reset();
    }
    // The access log's lines (complete requests, also the ones cut off).
    std::vector<std::string> log() const {
        std::vector<std::string> out;
        std::istringstream in(read_file(prefix_ + "/logs/access.log"));
        for (std::string l; std::getline(in, l);) out.push_back(l);
        return out;
    }
    // The sum of `$bytes_sent` over every logged request whose URI holds `needle`.
    uint64_t bytes_sent(const std::string& needle) const {
        uint64_t n = 0;
        for (const std::string& l : log()) {
            std::istringstream f(l);
            std::string method, uri, status;
            uint64_t b = 0;
            if (f >> method >> uri >> status >> b && uri.find(needle) != std::string::npos) n += b;
        }
        return n;
    }
    std::string log_text() const { return read_file(prefix_ + "/logs/access.log"); }

  private:
    std::string prefix_;
    std::vector<int> ports_;  // negative: on [::1]
    std::optional<Process> proc_;
};

// dnsmasq as an authoritative-only DNS server on `address`:53 (UDP and TCP): the names of
// `records` ("name/address" as for --address) and NXDOMAIN for every other name (no upstream,
// no /etc/hosts), each query logged to `dir`/dnsmasq.log.
class Dnsmasq {
  public:
    Dnsmasq(const std::string& dir, const std::string& address,
            const std::vector<std::string>& records)
        : log_(dir + "/dnsmasq.log") {
        std::vector<std::string> argv = {
            "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
            "--no-poll", "--bind-interfaces", "--listen-address=" + address, "--port=53",
            "--user=root", "--pid-file=" + dir + "/dnsmasq.pid", "--log-queries",
            "--log-facility=" + log_,
            // Names not listed are answered NXDOMAIN, not forwarded.
            "--local=/test/"};
        for (const std::string& r : records) argv.push_back("--address=/" + r);
        proc_.emplace(Process::spawn(argv));
        REQUIRE_MESSAGE(
            wait_until([&] { return read_file(log_).find("started") != std::string::npos; }, 10s,
                       20ms),
            "dnsmasq did not start: " << proc_->err() << read_file(log_));
    }
    ~Dnsmasq() {
        proc_->signal(SIGTERM);
        if (!proc_->wait(10s)) proc_->kill_now();
    }
    Dnsmasq(const Dnsmasq&) = delete;
    Dnsmasq& operator=(const Dnsmasq&) = delete;
    std::string log() const { return read_file(log_); }
    // How many queries for `name` were logged ("query[A] name from …").
    int queries(const std::string& name) const {
        const std::string l = log();
        int n = 0;
        for (size_t at = l.find("] " + name + " from"); at != std::string::npos;
             at = l.find("] " + name + " from", at + 1)) {
            ++n;
        }
        return n;
    }

  private:
    std::string log_;
    std::optional<Process> proc_;
};

// The Toxiproxy server (built by tests/toxiproxy/build.sh) on 127.0.0.1, driven over its HTTP API
// with curl. "" from binary() when it cannot be built here (no Go toolchain): the case skips; a
// failed build fails it.
class Toxiproxy {
  public:
    static std::string binary(std::string* why) {
        RunResult r = run({"bash", source_dir() + "/tests/toxiproxy/build.sh"}, 600s);
        const size_t at = r.out.rfind("MYR_TOXIPROXY=");
        if (r.exit_code == 77) {  // no Go toolchain here
            *why = "tests/toxiproxy/build.sh: " + r.err;
            return "";
        }
        REQUIRE_MESSAGE((r.exit_code == 0 && at != std::string::npos),
                        "tests/toxiproxy/build.sh: exit " << r.exit_code << ": " << r.err);
        std::string path = r.out.substr(at + 14);
        while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
        return path;
    }
    explicit Toxiproxy(const std::string& bin) : api_port_(reserve_port()) {
        proc_.emplace(Process::spawn(
            {bin, "-host", "127.0.0.1", "-port", std::to_string(api_port_), "-proxy-metrics"}));
        REQUIRE_MESSAGE(wait_until([&] { return api("GET", "/version").first == 200; }, 10s, 20ms),
                        "toxiproxy did not start: " << proc_->err());
    }
    ~Toxiproxy() { proc_->kill_now(); }
    Toxiproxy(const Toxiproxy&) = delete;
    Toxiproxy& operator=(const Toxiproxy&) = delete;

    // A proxy `name` from 127.0.0.1:<returned port> to 127.0.0.1:`upstream`.
    int proxy(const std::string& name, int upstream) {
        const int port = reserve_port();
        auto r = api("POST", "/proxies",
                     R"({"name":")" + name + R"(","listen":"127.0.0.1:)" + std::to_string(port) +
                         R"(","upstream":"127.0.0.1:)" + std::to_string(upstream) +
                         R"(","enabled":true})");
        REQUIRE_MESSAGE(r.first == 201, "toxiproxy: create " << name << ": " << r.second);
        return port;
    }
    // Adds a toxic (`attributes` a JSON object's members) on the server-to-client direction.
    void add(const std::string& proxy, const std::string& toxic, const std::string& type,
             const std::string& attributes, const std::string& stream = "downstream") {
        auto r = api("POST", "/proxies/" + proxy + "/toxics",
                     R"({"name":")" + toxic + R"(","type":")" + type + R"(","stream":")" + stream +
                         R"(","toxicity":1.0,"attributes":{)" + attributes + "}}");
        REQUIRE_MESSAGE(r.first == 200, "toxiproxy: add " << toxic << ": " << r.second);
    }
    void remove(const std::string& proxy, const std::string& toxic) {
        auto r = api("DELETE", "/proxies/" + proxy + "/toxics/" + toxic);
        REQUIRE_MESSAGE(r.first == 204, "toxiproxy: remove " << toxic << ": " << r.second);
    }
    // toxiproxy_proxy_sent_bytes_total of `proxy` in `direction` (downstream: to the client).
    double sent_bytes(const std::string& proxy, const std::string& direction = "downstream") const {
        std::istringstream in(api("GET", "/metrics").second);
        for (std::string l; std::getline(in, l);) {
            if (l.starts_with("toxiproxy_proxy_sent_bytes_total{") &&
                l.find("direction=\"" + direction + "\"") != l.npos &&
                l.find("proxy=\"" + proxy + "\"") != l.npos) {
                return std::stod(l.substr(l.rfind(' ') + 1));
            }
        }
        return 0;
    }
    // The status and body of one API call.
    std::pair<int, std::string> api(const std::string& method, const std::string& path,
                                    const std::string& body = "") const {
        std::vector<std::string> argv = {"curl",
                                         "-sS",
                                         "-o",
                                         "-",
                                         "-w",
                                         "\n%{http_code}",
                                         "-X",
                                         method,
                                         "--max-time",
                                         "10",
                                         "http://127.0.0.1:" + std::to_string(api_port_) + path};
        if (!body.empty())
            argv.insert(argv.end(), {"-H", "Content-Type: application/json", "--data", body});
        RunResult r = run(argv, 15s);
        const size_t nl = r.out.rfind('\n');
        if (r.exit_code != 0 || nl == std::string::npos) return {0, r.err};
        return {std::atoi(r.out.c_str() + nl + 1), r.out.substr(0, nl)};
    }

  private:
    int api_port_;
    std::optional<Process> proc_;
};

}  // namespace myr::test::realnet
