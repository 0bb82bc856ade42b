// The trial after a commit (docs/update.md, "The trial"; issue 23, item 3) through the real binary
// as PID 1: a version that passes its health check and then crash-loops is rolled back in the
// same run; one that makes the whole container die is rolled back by recovery at the start that
// uses up update.trialMaxBoots, before the child runs; one that lasts the trial is kept, and only
// then does GC remove what the install replaced.
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>

#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

std::string seed(Rig& rig) {
    return rig.release("0.116.0");
}

// Installs `version` from `file` and waits for Installed (the start of its trial).
void install(Rig& rig, const Updater& u, const std::string& version, const std::string& file) {
    size_t from = rig.mark();
    rig.offer({version, file});
    auto st = rig.wait_status(version, "Installed", from, 60s);
    REQUIRE_MESSAGE(st, "not installed; record:\n" << rig.record() << "\nlog:\n" << u.log());
    CHECK(st->has == version);
}

std::string readyz_body(const Rig& rig) {
    return http_get("127.0.0.1", rig.health_port(), "/readyz", 2s).body;
}

}  // namespace

TEST_CASE("update trial: a version that crash-loops after its health check is rolled back") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig), [](UpdaterConfig& c) {
        c.trial_period = "2m";
        c.trial_max_restarts = 1;
        c.keep_versions = 0;  // GC removes the version that failed at once
        // The supervisor ends with its collector (instead of restarting it): the crash loop the
        // restart policy sees.
        c.supervisor_command.push_back("--exit-with-agent");
    });
    Updater u(rig.config());
    rig.settle(u);

    // Healthy at first, then it exits 1 after 20 s, as a collector that fails at its first
    // scrape does.
    const std::string v117 =
        rig.tar_gz(rig.release("0.117.0", "exit_after=20s exit_code=1"), "v117.tar.gz");
    size_t from = rig.mark();
    install(rig, u, "0.117.0", v117);
    // On trial: the pod serves (/readyz 200) and says until when; the journal keeps the trial.
    CHECK(rig.probe("/readyz") == 200);
    CHECK_MESSAGE(readyz_body(rig).find("trial until ") != std::string::npos, readyz_body(rig));
    CHECK(read_file(rig.state + "/journal.json").find("\"phase\":\"trial\"") != std::string::npos);

    auto st = rig.wait_status("0.117.0", "InstallFailed", from, 90s);
    REQUIRE_MESSAGE(st, "never rolled back; record:\n" << rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(st->error.rfind("rolled back after commit: ", 0) == 0, st->error);
    CHECK_MESSAGE(st->error.find("0.117.0") != std::string::npos, st->error);
    CHECK(st->has == "0.116.0");
    // The previous version runs, intact, and the version that failed is gone.
    check_settled(rig, "0.116.0");
    CHECK(list_dir(rig.install + "/versions") == std::vector<std::string>{"0.116.0"});
    CHECK(read_file(rig.state + "/last-attempt.json").find("rolled-back") != std::string::npos);
    CHECK(u.count("msg=\"update: state\" state=trial ") == 1);
    CHECK(u.count("msg=\"update: state\" state=rolling-back from=trial") == 1);
    // /metrics: the new version did not stay, refused by its trial; it never counted installed.
    Samples m = scrape(rig);
    CHECK(value(m, attempts("rolled_back")) == 1);
    CHECK(value(m, rollbacks("trial")) == 1);
    CHECK(value(m, attempts("installed")) == 0);
    CHECK(value(m, "myriarch_collector_info{version=\"0.116.0\"}") == 1);
}

TEST_CASE(
    "update trial: a version whose container dies three times is rolled back at the next "
    "start, before its child runs") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig), [](UpdaterConfig& c) { c.trial_period = "10m"; });
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    {
        Updater u(rig.config());
        rig.settle(u);
        // Installed is reported after the trial's journal was written.
        install(rig, u, "0.117.0", v117);
        u.signal(SIGKILL);  // the container dies (an OOM kill of the whole pod, say)
        u.wait_exit(10s);
    }
    // Two more deaths, each once the new version runs again on its trial.
    for (int boot = 1; boot <= 2; ++boot) {
        CAPTURE(boot);
        Updater u(rig.config());
        REQUIRE_MESSAGE(rig.ready(40s), u.log());
        CHECK_MESSAGE(u.log_has("boot " + std::to_string(boot) + " of 3"), u.log());
        CHECK(rig.current() == "versions/0.117.0");
        CHECK_MESSAGE(readyz_body(rig).find("trial until ") != std::string::npos, readyz_body(rig));
        u.signal(SIGKILL);
        u.wait_exit(10s);
    }
    // The third restart uses up update.trialMaxBoots: recovery goes back to 0.116.0 before
    // anything starts, so the child never runs 0.117.0 at this start.
    size_t from = rig.mark();
    Updater u(rig.config());
    REQUIRE_MESSAGE(u.wait_for_log("child started", 30s), u.log());
    CHECK_MESSAGE(rig.current() == "versions/0.116.0", u.log());
    const std::string log = u.log();
    CHECK_MESSAGE(log.find("trial failed") < log.find("child started"), log);
    auto st = rig.wait_status("0.117.0", "InstallFailed", from, 60s);
    REQUIRE_MESSAGE(st, "no report; record:\n" << rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(
        st->error.rfind("rolled back after commit: the updater restarted 3 times", 0) == 0,
        st->error);
    CHECK(st->has == "0.116.0");
    check_settled(rig, "0.116.0");
    // /metrics of this start: recovery rolled it back.
    Samples m = scrape(rig);
    CHECK(value(m, attempts("rolled_back")) == 1);
    CHECK(value(m, rollbacks("recovery")) == 1);
    CHECK(u.stop() == 0);
}

TEST_CASE("update: a version whose container dies three times while it is checked is quarantined") {
    // Before its trial (journal phase health-checking) every death is recovered by switching
    // back, and an interruption alone quarantines nothing: the server offers the version again.
    // The third death while that version ran uses up update.trialMaxBoots: it is recorded rolled
    // back, deterministically, and the offer is refused without a download.
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig), [](UpdaterConfig& c) { c.health_timeout = "10m"; });
    const Offer bad{"0.117.0", rig.tar_gz(rig.release("0.117.0", "health=fail"), "v117.tar.gz")};
    for (int death = 1; death <= 3; ++death) {
        CAPTURE(death);
        const size_t m = rig.mark();
        Updater u(rig.config());
        // The first start snapshots the supervisor's storage, which every later one must keep.
        death == 1 ? rig.settle(u) : rig.await_start(u, m);
        if (death > 1) {
            CHECK_MESSAGE(u.log_has("recovery: interrupted update recorded"), u.log());
            CHECK(rig.current() == "versions/0.116.0");
            // Recovery put 0.116.0 back under a version that ran: a rollback (docs/metrics.md).
            Samples m = scrape(rig);
            CHECK(value(m, attempts("rolled_back")) == 1);
            CHECK(value(m, rollbacks("recovery")) == 1);
        }
        rig.offer(bad);
        REQUIRE_MESSAGE(u.wait_for_log("state=health-checking", 60s), u.log());
        u.signal(SIGKILL);  // the container dies while 0.117.0 is checked
        u.wait_exit(10s);
    }
    const size_t m = rig.mark();
    Updater u(rig.config());
    rig.await_start(u, m);
    CHECK(rig.current() == "versions/0.116.0");
    const std::string attempt = read_file(rig.state + "/last-attempt.json");
    CHECK_MESSAGE(attempt.find("\"outcome\":\"rolled-back\"") != std::string::npos, attempt);
    CHECK_MESSAGE(attempt.find("\"restarts\":3") != std::string::npos, attempt);
    const size_t requests = rig.artifact_server->requests();
    const size_t from = rig.mark();
    rig.offer(bad);
    auto st = rig.wait_status("0.117.0", "InstallFailed", from, 30s);
    REQUIRE_MESSAGE(st, "no report; record:\n" << rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(st->error.rfind("quarantined: rolled back: the updater restarted 3 times while "
                                  "0.117.0 was started or checked",
                                  0) == 0,
                  st->error);
    CHECK(rig.artifact_server->requests() == requests);
    check_settled(rig, "0.116.0");
    CHECK(u.stop() == 0);
}

TEST_CASE("update trial: a trial that completes is committed, and only then does GC run") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig), [](UpdaterConfig& c) {
        c.trial_period = "5s";
        c.keep_versions = 0;
    });
    Updater u(rig.config());
    rig.settle(u);
    install(rig, u, "0.117.0", rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz"));
    REQUIRE(u.wait_for_log("msg=\"update: state\" state=committed from=trial", 30s));
    check_settled(rig, "0.117.0");

    install(rig, u, "0.118.0", rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz"));
    // During the trial nothing is removed, and the journal names it.
    CHECK(list_dir(rig.install + "/versions") ==
          std::vector<std::string>{"0.116.0", "0.117.0", "0.118.0"});
    CHECK(exists(rig.state + "/journal.json"));
    REQUIRE(wait_until(
        [&] { return u.count("msg=\"update: state\" state=committed from=trial") == 2; }, 30s));
    check_settled(rig, "0.118.0");
    CHECK(wait_until(
        [&] {
            return list_dir(rig.install + "/versions") ==
                   std::vector<std::string>{"0.117.0", "0.118.0"};
        },
        10s));
    // /metrics: each install counted once, when its trial ended.
    Samples m = scrape(rig);
    CHECK(value(m, attempts("installed")) == 2);
    CHECK(value(m, attempts("rolled_back")) == 0);
    CHECK(value(m, "myriarch_collector_info{version=\"0.118.0\"}") == 1);
    CHECK(u.stop() == 0);
}
