// The trusted root as a living file (runtime/root_watch.hpp), on the fake clock: read at start,
// a ConfigMap-style `..data` swap taken at the next poll, an unusable replacement ignored.
#include "runtime/root_watch.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "harness.hpp"
#include "loop/fake_scheduler.hpp"

using namespace myr;
using myr::test::read_file;
using myr::test::TempDir;
using myr::test::write_file;

namespace {

std::string public_good() {
    return test::data_dir() + "/sigstore-conformance/public-good-trusted-root.json";
}

// The public-good root with its newest validity start moved to `start` (RFC 3339).
std::string root_starting(const std::string& start) {
    std::string s = read_file(public_good());
    const std::string newest = "2025-09-23T00:00:00Z";
    const size_t at = s.find(newest);
    REQUIRE(at != std::string::npos);
    return s.replace(at, newest.size(), start);
}

// A directory mounted the way the kubelet mounts a ConfigMap: `trusted_root.json` ->
// `..data/trusted_root.json`, `..data` -> a timestamped directory; publish() swaps `..data` to a
// new one atomically (a symlink renamed over the old one).
struct ConfigMapDir {
    TempDir d;
    std::string dir = d.path();
    int n = 0;
    std::string file = dir + "/trusted_root.json";
    void publish(const std::string& content) {
        const std::string ts = "..2026_" + std::to_string(++n);
        REQUIRE(::mkdir((dir + "/" + ts).c_str(), 0755) == 0);
        write_file(dir + "/" + ts + "/trusted_root.json", content);
        REQUIRE(::symlink(ts.c_str(), (dir + "/..data_tmp").c_str()) == 0);
        REQUIRE(::rename((dir + "/..data_tmp").c_str(), (dir + "/..data").c_str()) == 0);
        if (n == 1) REQUIRE(::symlink("..data/trusted_root.json", file.c_str()) == 0);
    }
};

struct Watch {
    loop::FakeScheduler sched;
    std::vector<std::optional<int64_t>> taken;
    runtime::RootWatch w;
    explicit Watch(const std::string& path) : w(sched, path, std::chrono::seconds(5)) {
        w.on_change([this](const verify::LoadedRoot& r) { taken.push_back(r.newest_start); });
    }
    // One poll and the work-queue job it may start.
    void next_poll() {
        sched.advance(std::chrono::seconds(5));
        for (int i = 0; i < 10; ++i) sched.run_pending();
    }
};

}  // namespace

TEST_CASE("root watch: a ConfigMap update is taken at the next poll, a broken one ignored") {
    ConfigMapDir cm;
    cm.publish(read_file(public_good()));
    Watch t(cm.file);
    REQUIRE(t.w.start());
    REQUIRE(t.taken.size() == 1);
    CHECK(t.taken[0] == 1758585600);
    auto first = t.w.current();
    REQUIRE(first);

    t.next_poll();  // nothing changed: nothing read
    CHECK(t.taken.size() == 1);

    cm.publish(root_starting("2026-06-01T00:00:00Z"));
    t.next_poll();
    REQUIRE(t.taken.size() == 2);
    CHECK(t.taken[1] == 1780272000);
    CHECK(t.w.problem().empty());
    // A job that took the first root keeps it.
    CHECK(first->newest_start == 1758585600);

    cm.publish("{ broken");
    t.next_poll();
    CHECK(t.taken.size() == 2);
    REQUIRE(t.w.current());
    CHECK(t.w.current()->newest_start == 1780272000);
    CHECK(t.w.problem().rfind("trusted root: ", 0) == 0);

    // The next good one is taken again.
    cm.publish(root_starting("2026-07-01T00:00:00Z"));
    t.next_poll();
    REQUIRE(t.taken.size() == 3);
    CHECK(t.w.current()->newest_start == 1782864000);
    t.w.stop();
}

TEST_CASE("root watch: unusable at start is an error naming why; a root that appears is taken") {
    TempDir d;
    const std::string file = d.path() + "/trusted_root.json";
    Watch t(file);
    auto st = t.w.start();
    REQUIRE_FALSE(st);
    CHECK(st.error().message() == "trusted root: " + file + ": No such file or directory");
    CHECK_FALSE(t.w.current());
    CHECK(t.w.problem() == st.error().message());
    t.next_poll();
    CHECK(t.taken.empty());
    write_file(file, read_file(public_good()));
    t.next_poll();
    REQUIRE(t.taken.size() == 1);
    REQUIRE(t.w.current());
    CHECK(t.w.problem().empty());
    // Removed: the root in use stays.
    REQUIRE(std::remove(file.c_str()) == 0);
    t.next_poll();
    CHECK(t.w.current());
    CHECK(t.w.problem().find("No such file or directory") != std::string::npos);
    t.w.stop();
}
