// A squid of the test's own (Debian's package, scripts/deps.sh) on a loopback port: its config,
// logs and password file in a directory of its own, run in the foreground (-N) and stopped by the
// destructor. Squid drops to its unprivileged user when started as root, so that directory is
// open to it.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace myr::test {

// Why squid cannot run here ("" when it can).
inline std::string squid_unavailable() {
    if (!exists("/usr/sbin/squid")) return "squid is not installed (scripts/deps.sh)";
    if (!exists("/usr/lib/squid/basic_ncsa_auth")) return "squid's basic_ncsa_auth is missing";
    return "";
}

// Whether something accepts TCP connections on 127.0.0.1:`port`.
inline bool tcp_open(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

class Squid {
  public:
    struct Options {
        // Basic auth: only this user with this password may use the proxy ("" = anyone may).
        std::string user, password;
        int port = 0;  // 0: a fresh one
    };

    Squid(const std::string& dir, Options o) : dir_(dir), opts_(std::move(o)) {
        port_ = opts_.port != 0 ? opts_.port : reserve_port();
        REQUIRE(run({"mkdir", "-p", dir_}).exit_code == 0);
        // Squid's workers run as its own user: the path down to its directory must let it in.
        for (std::string p = dir_; p.size() > 1; p = p.substr(0, p.rfind('/'))) {
            if (p.rfind("/tmp", 0) == 0 && p.size() > 4) ::chmod(p.c_str(), 0777);
        }
        std::string conf = "http_port 127.0.0.1:" + std::to_string(port_) + "\npid_filename " +
                           dir_ + "/squid.pid" + "\naccess_log stdio:" + access_log() +
                           "\ncache_log " + dir_ +
                           "/cache.log\ncache deny all\ncache_mem 8 MB\ncoredump_dir " + dir_ +
                           "\nshutdown_lifetime 0 seconds\nvisible_hostname squid-test\n"
                           "acl SSL_ports port 1-65535\n";
        if (!opts_.user.empty()) {
            RunResult h = run({"openssl", "passwd", "-1", opts_.password});
            REQUIRE(h.exit_code == 0);
            write_file(dir_ + "/htpasswd", opts_.user + ":" + h.out);
            conf += "auth_param basic program /usr/lib/squid/basic_ncsa_auth " + dir_ +
                    "/htpasswd\nauth_param basic realm myriarch-test\n"
                    "acl users proxy_auth REQUIRED\nhttp_access allow users\n";
        } else {
            conf += "http_access allow all\n";
        }
        conf += "http_access deny all\n";
        write_file(dir_ + "/squid.conf", conf);
        start();
    }
    ~Squid() { stop(); }
    Squid(const Squid&) = delete;
    Squid& operator=(const Squid&) = delete;

    void start() {
        proc_.emplace(Process::spawn({"/usr/sbin/squid", "-N", "-f", dir_ + "/squid.conf"}));
        // Listening once a connection is accepted.
        REQUIRE_MESSAGE(wait_until([&] { return tcp_open(port_); }, 20s, 50ms),
                        "squid did not start: " << read_file(dir_ + "/cache.log"));
    }
    // SIGKILL: a proxy that dies mid-transfer.
    void kill() {
        if (proc_) proc_->kill_now();
        proc_.reset();
        ::unlink((dir_ + "/squid.pid").c_str());
    }
    void stop() {
        if (!proc_) return;
        proc_->signal(SIGTERM);
        if (!proc_->wait(10s)) proc_->kill_now();
        proc_.reset();
    }

    int port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::string access_log() const { return dir_ + "/access.log"; }
    // Lines of the access log holding `needle` (squid writes a line when a transfer ends).
    std::vector<std::string> log_lines(const std::string& needle) const {
        std::vector<std::string> out;
        std::string text = read_file(access_log());
        size_t at = 0;
        while (at < text.size()) {
            size_t nl = text.find('\n', at);
            std::string line = text.substr(at, nl == std::string::npos ? nl : nl - at);
            if (line.find(needle) != std::string::npos) out.push_back(line);
            if (nl == std::string::npos) break;
            at = nl + 1;
        }
        return out;
    }

  private:
    std::string dir_;
    Options opts_;
    int port_ = 0;
    std::optional<Process> proc_;
};

}  // namespace myr::test
