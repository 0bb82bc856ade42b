// kill -9 at random moments of a large install (a 200 MB stand-in collector) through the real
// binary as PID 1, then a restart: the volume oracle judges every one (docs/update.md). Suite slow:
// every install copies and hashes hundreds of megabytes.
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <random>
#include <thread>

#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

TEST_CASE("update: 20 kill -9 at random moments of a 200 MB install") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.first_start(rig.release("0.116.0"));
    const std::string archive = rig.tar_gz(rig.release("0.117.0", "", 200), "big.tar.gz");
    const Offer offer{"0.117.0", archive};

    // One whole install first: its length bounds the random moments.
    using Clock = std::chrono::steady_clock;
    Clock::duration whole{};
    {
        size_t from = rig.mark();
        Updater u(rig.config());
        rig.await_start(u, from);
        auto t0 = Clock::now();
        rig.offer(offer);
        auto st = rig.wait_status("0.117.0", "", from, 300s);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        REQUIRE_MESSAGE(st->status == "Installed", st->error);
        whole = Clock::now() - t0;
        REQUIRE(u.stop() == 0);
    }
    const auto whole_ms = std::chrono::duration_cast<std::chrono::milliseconds>(whole).count();
    MESSAGE("one 200 MB install: " << whole_ms << " ms");

    std::mt19937 rng(std::random_device{}());
    // A quarter beyond the install's length, so that some kills come after the commit too.
    std::uniform_int_distribution<long> moment(0, whole_ms + whole_ms / 4);
    std::vector<std::string> violations;
    int new_kept = 0;
    for (int i = 0; i < 20; ++i) {
        rig.restore_pristine();
        const long at = moment(rng);
        const std::string l = "kill at " + std::to_string(at) + " ms";
        bool installed = false;
        {
            size_t from = rig.mark();
            Updater u(rig.config());
            rig.await_start(u, from);
            rig.offer(offer);
            // The random moment is the scenario: a sleep is what it means.
            std::this_thread::sleep_for(std::chrono::milliseconds(at));
            installed = rig.wait_status("0.117.0", "Installed", from, 0ms).has_value();
            u.signal(SIGKILL);
            u.wait_exit(30s);
        }
        Updater u(rig.config());
        if (!rig.ready(60s)) {
            violations.push_back(l + ": never ready after the restart; log:\n" + u.log());
            continue;
        }
        const std::string cur = rig.current();
        const std::string version = cur == "versions/0.117.0" ? "0.117.0" : "0.116.0";
        if (version == "0.117.0") ++new_kept;
        // Once the server was told Installed, the commit was durable: the new one must stay.
        if (installed && version != "0.117.0") {
            violations.push_back(l + ": Installed was reported but current is " + cur);
        }
        for (const auto& v : rig.violations(version)) violations.push_back(l + ": " + v);
        // Only the offer's own download may stay, for the same offer to resume.
        const std::string sha = rig.sha_of(archive);
        for (const std::string& n : list_dir(rig.spool())) {
            if (n != sha && n != sha + ".part" && n != sha + ".part.meta") {
                violations.push_back(l + ": the spool kept " + n);
            }
        }
        if (!rig.storage_unchanged()) violations.push_back(l + ": supervisor storage changed");
        CHECK(u.stop() == 0);
    }
    MESSAGE("20 kills within " << whole_ms + whole_ms / 4
                               << " ms of the offer: the new version kept " << new_kept
                               << " times; violations: " << violations.size());
    CHECK_MESSAGE(violations.empty(), joined(violations));
}
