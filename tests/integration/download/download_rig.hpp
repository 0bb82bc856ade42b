// The rig of the downloader's integration tests: tests/servers/artifact_server.py on 127.0.0.1
// (http, or https with a CA made by openssl at test time), a spool, a loop, and one download run
// to its end. Shared by the integration, timing and slow executables.
#pragma once

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "../net/test_server.hpp"
#include "artifact_server.hpp"
#include "download/http_downloader.hpp"
#include "harness.hpp"
#include "hash/sha256.hpp"

namespace myr::test::dl {

using namespace myr::download;
using namespace std::chrono_literals;

// Bytes that differ at every offset, so a splice at the wrong offset changes the hash.
inline std::string pattern(size_t n, uint32_t seed) {
    std::string s(n, '\0');
    uint32_t x = seed;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        s[i] = static_cast<char>(x >> 24);
    }
    return s;
}

inline std::string hex_of(const std::string& data) {
    return hash::to_hex(hash::sha256(data));
}

using myr::test::ArtifactServer;

struct Fetch {
    std::optional<Result<Artifact>> done;
    std::vector<Progress> progress;
};

inline DownloaderOptions quick(const std::string& state, std::vector<std::string> prefixes) {
    DownloaderOptions o;
    o.state_dir = statedir::StateDir::open(state).value();
    for (const auto& p : prefixes) o.policy.prefixes.push_back(*parse_url(p));
    o.policy.allow_plain_http = true;  // the endpoint of these tests is loopback
    o.stall_timeout = 1s;
    o.connect_timeout = 5s;
    o.backoff_base = 10ms;
    o.backoff_max = 50ms;
    return o;
}

// Runs one download to its end on `loop`.
inline Fetch fetch(TestLoop& loop, const DownloaderOptions& o, Request r,
                   std::chrono::milliseconds timeout = 30s) {
    Fetch f;
    HttpDownloader dl(loop.get(), loop.sched(), o);
    Downloader::Handlers h;
    h.on_progress = [&](const Progress& p) { f.progress.push_back(p); };
    h.on_done = [&](Result<Artifact> a) { f.done.emplace(std::move(a)); };
    auto d = dl.fetch(std::move(r), h);
    REQUIRE(loop.run_until([&] { return f.done.has_value(); }, timeout));
    return f;
}

// One machine: files, server, loop, spool, all in one temporary directory.
struct Rig {
    TempDir tmp;
    std::string files = tmp / "files";
    std::string state = tmp / "state";
    std::string data = pattern(1u << 20, 7);
    std::string hex = hex_of(data);
    std::optional<TestPki> pki;
    std::optional<ArtifactServer> server;
    TestLoop loop;

    explicit Rig(bool tls = false) {
        ::mkdir(files.c_str(), 0755);
        ::mkdir(state.c_str(), 0755);
        write_file(files + "/a.bin", data);
        if (tls) {
            ::mkdir((tmp / "pki").c_str(), 0755);
            pki.emplace(make_test_pki(tmp / "pki"));
        }
        server.emplace(files, pki ? pki->server_cert : "", pki ? pki->server_key : "");
    }
    ~Rig() { CHECK(loop.close() == 0); }
    std::string scheme() const { return pki ? "https" : "http"; }
    DownloaderOptions options() const {
        DownloaderOptions o = quick(
            state, {scheme() + "://127.0.0.1:" + std::to_string(server->port()) + "/artifacts/"});
        if (pki) o.ca_file = pki->ca;
        return o;
    }
    Request request(const std::string& query, uint64_t max = 1u << 30) const {
        return Request{server->url(scheme(), "a.bin" + query), {}, hex, max};
    }
    Fetch get(const std::string& query) { return fetch(loop, options(), request(query)); }
    std::string part() const { return state + "/spool/" + hex + ".part"; }
};

inline void require_ok(const Fetch& f, const std::string& hex, size_t size) {
    REQUIRE(f.done);
    if (!f.done->ok()) FAIL(f.done->error().message());
    CHECK((*f.done)->sha256_hex == hex);
    CHECK((*f.done)->size == size);
    CHECK(hex_of(read_file((*f.done)->path)) == hex);
}

inline const Error& require_error(const Fetch& f) {
    REQUIRE(f.done);
    REQUIRE(!f.done->ok());
    return f.done->error();
}

inline bool contains(const std::string& s, const std::string& what) {
    return s.find(what) != std::string::npos;
}

}  // namespace myr::test::dl
