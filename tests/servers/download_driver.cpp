// Runs the real downloader once, on its own libuv loop, for the benchmark and for manual checks:
//
//   download-driver --state DIR --url URL --hash HEX [--prefix URL]... [--ca FILE] [--max BYTES]
//                   [--healthz-port-file F] [--start-file F]
//
// With --healthz-port-file the product's probe server (health::ProbeServer, /healthz answering
// 200) listens on 127.0.0.1 on the same loop, its port written to F; with --start-file the
// download waits until F exists, so a prober can be started first.
//
// Prints one JSON line: {"ok":true,"sha256":…,"size":…,"seconds":…,"peak_rss_kb":…,
// "lag_p99_ms":…,"lag_max_ms":…,"progress":N} or {"ok":false,"error":…}; exit 0 or 1. The lag
// figures come from a 10 ms repeating timer on the same loop: how late it fired, which is how
// long a probe answer (/healthz) would have waited for the loop during the download.
#include <sys/resource.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "download/http_downloader.hpp"
#include "health/probe_server.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"

using namespace myr;
using namespace myr::download;

namespace {

// A JSON string literal (messages hold quotes, and may hold anything a server sent).
std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
    DownloaderOptions o;
    Request req;
    req.max_size = 1ull << 30;
    std::string healthz_port_file, start_file;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--state") {
            auto state = statedir::StateDir::open(v);
            if (!state) {
                std::fprintf(stderr, "download-driver: %s\n", state.error().message().c_str());
                return 2;
            }
            o.state_dir = *state;
        } else if (k == "--url") {
            req.url = v;
        } else if (k == "--hash") {
            req.content_hash_hex = v;
        } else if (k == "--ca") {
            o.ca_file = v;
        } else if (k == "--max") {
            req.max_size = std::stoull(v);
        } else if (k == "--healthz-port-file") {
            healthz_port_file = v;
        } else if (k == "--start-file") {
            start_file = v;
        } else if (k == "--prefix") {
            auto u = parse_url(v);
            if (!u) {
                std::fprintf(stderr, "download-driver: --prefix %s: %s\n", v.c_str(),
                             u.error().message().c_str());
                return 2;
            }
            o.policy.prefixes.push_back(*u);
        } else {
            std::fprintf(stderr, "download-driver: unknown option %s\n", k.c_str());
            return 2;
        }
    }
    o.policy.allow_plain_http = true;  // the benchmark's endpoint is loopback

    loop::Loop loop;
    std::optional<Result<Artifact>> done;
    size_t progress = 0;
    std::vector<double> lag_ms;
    std::chrono::steady_clock::time_point t0;  // when the download starts
    {
        loop::UvScheduler sched(loop.get());
        std::optional<health::ProbeServer> probes;
        if (!healthz_port_file.empty()) {
            health::Probes p;
            p.healthz = [] { return health::Answer{true, "ok"}; };
            p.readyz = p.healthz;
            probes.emplace(loop, sched, p);
            auto st = probes->listen(HostPort{"127.0.0.1", 0});
            if (!st) {
                std::fprintf(stderr, "download-driver: %s\n", st.error().message().c_str());
                return 1;
            }
            std::ofstream(healthz_port_file + ".tmp") << probes->port();
            std::rename((healthz_port_file + ".tmp").c_str(), healthz_port_file.c_str());
        }
        if (!start_file.empty()) {
            // Serve probes while waiting for the prober's go-ahead.
            auto wait = sched.timer();
            bool go = false;
            wait->start_repeating(std::chrono::milliseconds(10),
                                  [&] { go = access(start_file.c_str(), F_OK) == 0; });
            while (!go) uv_run(loop.get(), UV_RUN_ONCE);
        }
        HttpDownloader dl(loop.get(), sched, o);
        auto probe = sched.timer();
        auto last = std::chrono::steady_clock::now();
        constexpr auto tick = std::chrono::milliseconds(10);
        probe->start_repeating(tick, [&] {
            const auto now = std::chrono::steady_clock::now();
            lag_ms.push_back(std::max(
                0.0, std::chrono::duration<double, std::milli>(now - last - tick).count()));
            last = now;
        });
        Downloader::Handlers h;
        h.on_progress = [&](const Progress&) { ++progress; };
        h.on_done = [&](Result<Artifact> r) {
            done.emplace(std::move(r));
            probe->stop();
        };
        t0 = std::chrono::steady_clock::now();
        auto d = dl.fetch(req, h);
        while (!done && uv_run(loop.get(), UV_RUN_ONCE) != 0) {
        }
        d.reset();
        probe.reset();
        probes.reset();
    }
    (void)loop.close();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::sort(lag_ms.begin(), lag_ms.end());
    const double p99 = lag_ms.empty() ? 0 : lag_ms[lag_ms.size() * 99 / 100];
    const double max = lag_ms.empty() ? 0 : lag_ms.back();
    if (!done || !done->ok()) {
        const std::string why = done ? done->error().message() : "the loop ended without an answer";
        std::printf("{\"ok\":false,\"error\":%s}\n", quoted(why).c_str());
        return 1;
    }
    std::printf(
        "{\"ok\":true,\"sha256\":\"%s\",\"size\":%llu,\"seconds\":%.3f,\"peak_rss_kb\":%ld,"
        "\"lag_p99_ms\":%.2f,\"lag_max_ms\":%.2f,\"progress\":%zu}\n",
        (*done)->sha256_hex.c_str(), static_cast<unsigned long long>((*done)->size), secs,
        ru.ru_maxrss, p99, max, progress);
    return 0;
}
