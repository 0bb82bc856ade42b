// tests/servers/artifact_server.py on 127.0.0.1 (http, or https with a test CA), serving the files
// of one directory, with its record of requests and bytes. Shared by the downloader's and the
// installer's integration tests.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "harness.hpp"

namespace myr::test {

using namespace std::chrono_literals;

class ArtifactServer {
  public:
    // https when a certificate and key are given. `port` 0 binds any; a reserve_port() makes the
    // same URL serve again after a stop (a server that was down and came back).
    explicit ArtifactServer(const std::string& dir, const std::string& tls_cert = "",
                            const std::string& tls_key = "", int port = 0)
        : dir_(dir) {
        // A port file left by an earlier server on this directory must not pass for this one.
        std::remove((dir + "/port").c_str());
        std::vector<std::string> argv = {
            "python3",     source_dir() + "/tests/servers/artifact_server.py",
            "--dir",       dir,
            "--port-file", dir + "/port",
            "--stats",     dir + "/stats.json"};
        if (!tls_cert.empty())
            argv.insert(argv.end(), {"--tls-cert", tls_cert, "--tls-key", tls_key});
        if (port != 0) argv.insert(argv.end(), {"--port", std::to_string(port)});
        proc_.emplace(Process::spawn(argv));
        REQUIRE(wait_until([&] { return exists(dir + "/port"); }, 10s));
        port_ = std::stoi(read_file(dir + "/port"));
    }
    int port() const { return port_; }
    std::string url(const std::string& scheme, const std::string& rest) const {
        return scheme + "://127.0.0.1:" + std::to_string(port_) + "/artifacts/" + rest;
    }
    // The server's record once no answer is being sent any more (each byte counted).
    std::string stats() const {
        std::string s;
        wait_until(
            [&] {
                s = read_file(dir_ + "/stats.json");
                return s.empty() || s.find("\"active\": 0") != std::string::npos;
            },
            5s);
        return s;
    }
    uint64_t bytes_served() const {
        std::smatch m;
        const std::string s = stats();
        if (!std::regex_search(s, m, std::regex("\"bytes\": ([0-9]+)"))) return 0;
        return std::stoull(m[1]);
    }
    size_t requests() const {
        const std::string s = stats();
        size_t n = 0;
        for (size_t at = s.find("\"path\""); at != std::string::npos;
             at = s.find("\"path\"", at + 1)) {
            ++n;
        }
        return n;
    }

    // When each request arrived (wall clock, seconds since the epoch), in order.
    std::vector<double> request_times() const {
        std::vector<double> out;
        const std::string s = stats();
        const std::regex t("\"t\": ([0-9.e+]+)");
        for (auto it = std::sregex_iterator(s.begin(), s.end(), t); it != std::sregex_iterator();
             ++it) {
            out.push_back(std::stod((*it)[1]));
        }
        return out;
    }

  private:
    std::string dir_;
    std::optional<Process> proc_;
    int port_ = 0;
};

}  // namespace myr::test
