// The downloader's cases that assert time (suite timing): a stall is cut after stall_timeout, a
// drip is not, and progress comes at most every 2 s.
#include <doctest/doctest.h>
#include <sys/mount.h>

#include "download_rig.hpp"

using namespace myr;
using namespace myr::download;
using namespace myr::test;
using namespace myr::test::dl;

TEST_CASE("download: a stall is cut after stall_timeout and the retry resumes") {
    Rig rig;
    const auto t0 = std::chrono::steady_clock::now();
    auto f = rig.get("?stall=20");  // request 1 sends half, then nothing for 20 s
    require_ok(f, rig.hex, rig.data.size());
    CHECK(std::chrono::steady_clock::now() - t0 < 8s);  // 1 s stall timeout, not the 20 s
    CHECK(rig.server->requests() == 2);
    CHECK(rig.server->bytes_served() == rig.data.size());
    CHECK(contains(rig.server->stats(), "\"range\": \"bytes=524288-\""));
}

TEST_CASE("download: a drip of one byte a second is no stall; progress at most every 2 s") {
    Rig rig;
    DownloaderOptions o = rig.options();
    o.stall_timeout = 3s;
    std::vector<std::chrono::steady_clock::time_point> at;
    Fetch f;
    HttpDownloader dl(rig.loop.get(), rig.loop.sched(), o);
    Downloader::Handlers h;
    h.on_progress = [&](const Progress& p) {
        at.push_back(std::chrono::steady_clock::now());
        f.progress.push_back(p);
    };
    h.on_done = [&](Result<Artifact> a) { f.done.emplace(std::move(a)); };
    auto d = dl.fetch(rig.request("?drip=6"), h);
    REQUIRE(rig.loop.run_until([&] { return f.done.has_value(); }, 30s));
    require_ok(f, rig.hex, rig.data.size());
    CHECK(rig.server->requests() == 1);
    REQUIRE(f.progress.size() >= 2);
    for (size_t i = 1; i < at.size(); ++i) CHECK(at[i] - at[i - 1] >= 1900ms);
    for (const Progress& p : f.progress) {
        CHECK(p.total == rig.data.size());
        CHECK(p.bytes <= p.total);
        CHECK(p.percent >= 0);
        CHECK(p.percent <= 100);
    }
    CHECK(f.progress.front().bytes < 10);  // reported while dripping
    CHECK(f.progress.front().bytes_per_second < 10);
}
