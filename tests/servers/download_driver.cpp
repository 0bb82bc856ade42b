// Runs the real downloader once, on its own libuv loop, for the benchmark and for manual checks:
//
//   download-driver --state DIR --url URL --hash HEX [--prefix URL]... [--ca FILE] [--max BYTES]
//                   [--plain]
//
// Prints one JSON line: {"ok":true,"sha256":…,"size":…,"seconds":…,"peak_rss_kb":…,
// "lag_p99_ms":…,"lag_max_ms":…,"progress":N} or {"ok":false,"error":…}; exit 0 or 1. The lag
// figures come from a 10 ms repeating timer on the same loop: how late it fired, which is how
// long a probe answer (/healthz) would have waited for the loop during the download.
#include <sys/resource.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "download/http_downloader.hpp"
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
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--state") {
            o.state_dir = v;
        } else if (k == "--url") {
            req.url = v;
        } else if (k == "--hash") {
            req.content_hash_hex = v;
        } else if (k == "--ca") {
            o.ca_file = v;
        } else if (k == "--max") {
            req.max_size = std::stoull(v);
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

    uv_loop_t loop;
    uv_loop_init(&loop);
    std::optional<Result<Artifact>> done;
    size_t progress = 0;
    std::vector<double> lag_ms;
    const auto t0 = std::chrono::steady_clock::now();
    {
        loop::UvScheduler sched(&loop);
        HttpDownloader dl(&loop, sched, o);
        auto probe = sched.timer();
        auto last = std::chrono::steady_clock::now();
        constexpr auto tick = std::chrono::milliseconds(10);
        probe->start_repeating(tick, [&] {
            const auto now = std::chrono::steady_clock::now();
            lag_ms.push_back(
                std::max(0.0, std::chrono::duration<double, std::milli>(now - last - tick).count()));
            last = now;
        });
        Downloader::Handlers h;
        h.on_progress = [&](const Progress&) { ++progress; };
        h.on_done = [&](Result<Artifact> r) {
            done.emplace(std::move(r));
            probe->stop();
        };
        auto d = dl.start(req, h);
        while (!done && uv_run(&loop, UV_RUN_ONCE) != 0) {
        }
        d.reset();
        probe.reset();
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
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
