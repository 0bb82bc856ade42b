// kill -9 at random moments during a 300 MB activation (20 runs), then restart and check the
// invariants. Slow (suite 'slow'): run with `meson test --suite slow integration-volume-kill9`.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "volume_support.hpp"

using namespace myr::test;

TEST_CASE("kill -9 at random moments of a 300 MB activation keeps the invariants") {
    Volume vol;
    std::string a = vol.release("0.115.0");
    std::string b = vol.release("0.116.0");
    // A 300 MB "release": the fake with padding before its trailer (the trailer must stay last).
    std::string big = vol.releases + "/otelcol-big";
    {
        std::string bytes = read_file(fake_otelcol());
        bytes.resize(300u * 1024 * 1024, '\0');
        bytes += "\n#MYRIARCH-FAKE version=0.117.0\n";
        write_file(big, bytes, 0755);
    }
    std::string big_sha = sha256_hex_of(big);
    REQUIRE(vol.driver({"seed", "--image", b}).exit_code == 0);
    std::string sup = tree_digest(vol.supervisor);

    // One uninterrupted run on a scratch volume measures how long an activation takes here.
    auto t0 = std::chrono::steady_clock::now();
    {
        Volume scratch;
        REQUIRE(scratch.driver({"seed", "--image", b}).exit_code == 0);
        RunResult r = scratch.driver(
            {"activate", "--file", big, "--version", "0.117.0", "--sha256", big_sha});
        REQUIRE(r.exit_code == 0);
    }
    auto full_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    MESSAGE("uninterrupted 300 MB activation: " << full_ms << " ms");

    std::mt19937 rng(12345);
    std::uniform_int_distribution<long> when(0, full_ms + 200);
    int violations = 0, killed = 0;
    for (int run = 0; run < 20; ++run) {
        long at = when(rng);
        SpawnOptions opts;
        Process p = Process::spawn(
            {driver_bin(), "--install-dir", vol.install, "--state-dir", vol.state_dir, "activate",
             "--file", big, "--version", "0.117.0", "--sha256", big_sha},
            opts);
        // The kill's moment is the scenario: a random point of the activation.
        std::this_thread::sleep_for(std::chrono::milliseconds(at));
        if (p.running()) {
            ::kill(p.pid(), SIGKILL);
            ++killed;
        }
        p.wait(60s);
        RunResult r = vol.driver({"start", "--image", a, "--policy", "newest"});
        REQUIRE(r.exit_code == 0);
        Json out(r.out);
        Json st(vol.state());
        auto v = invariant_violations(st, out.str("seed.activeVersion"));
        if (tree_digest(vol.supervisor) != sup) v.push_back("3: supervisor storage changed");
        std::string cur = st.str("currentVersion");
        if (cur != "0.116.0" && cur != "0.117.0") v.push_back("ended at " + cur);
        for (const auto& s : v) FAIL_CHECK("run " << run << " (kill at " << at << " ms): " << s);
        violations += static_cast<int>(v.size());
        // Back to 0.116.0 alone for the next run, so that every run copies the 300 MB again
        // (a complete versions/0.117.0 left behind would be reused without a copy).
        if (cur == "0.117.0") REQUIRE(vol.driver({"rollback"}).exit_code == 0);
        REQUIRE(vol.driver({"gc", "--keep", "0"}).exit_code == 0);
        REQUIRE_FALSE(exists(vol.install + "/versions/0.117.0"));
    }
    MESSAGE("kill -9 matrix: 20 runs, " << killed << " killed mid-way, " << violations
                                        << " violations");
    CHECK(violations == 0);
}
