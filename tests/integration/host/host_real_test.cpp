// Host mode end to end under a real systemd (issue 27, item 4): `myriarch-updater run` as a
// Type=notify unit beside the unit of the real upstream OpAMP Supervisor, which runs the real
// collector from the volume's `current/`; opamp-go on the host's 127.0.0.1 offers signed releases
// (host_support.hpp). Each case boots its own machine on a clean overlay.
#include <doctest/doctest.h>

#include <chrono>

#include "host_support.hpp"

using namespace myr::test;
using namespace myr::test::host;
using real::supervisor_reported;
using real::updater_attribute;
using real::wait_final;

namespace {

constexpr const char* kInstalled = "PackageStatusEnum_Installed";
constexpr const char* kInstallFailed = "PackageStatusEnum_InstallFailed";

long long ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - t0).count();
}

const std::string kJournal = kState + "/journal.json";

// The supervisor's instance_id in its persistent_state.yaml inside the machine.
std::string supervisor_uid(const HostMachine& h) {
    return real::instance_id_in(h.at(kStorage));
}

// The machine booted, the updater started and the first version running and reported.
void require_up(HostMachine& h) {
    REQUIRE_MESSAGE(h.booted(), h.m().boot_state());
    const std::string first = h.wait_first_version();
    REQUIRE_MESSAGE(first.empty(), first << "\n" << h.logs());
}

// Each case: the prerequisites (or the skip), and its start for the times it reports.
struct HostCase {
    const Prerequisites pre = prerequisites();
    const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
};

}  // namespace

// The rig itself, without the updater: the real supervisor's unit runs the real collector from a
// volume laid out as seeding leaves it, and both report to opamp-go on the host's loopback.
TEST_CASE_FIXTURE(HostCase,
                  "host real: the real supervisor's unit runs the real collector from current/") {
    if (!pre.ok()) return;
    HostOptions opts;
    opts.volume_ready = true;
    HostMachine h(pre, opts);
    REQUIRE_MESSAGE(h.booted(), h.m().boot_state());
    RunResult start = h.m().run({"systemctl", "start", kSupervisorUnit});
    REQUIRE_MESSAGE(start.exit_code == 0, start.err);
    REQUIRE_MESSAGE(wait_until(
                        [&] {
                            return h.collector_healthy() ||
                                   h.property(kSupervisorUnit, "ActiveState") == "failed";
                        },
                        60s, 100ms),
                    h.logs());
    REQUIRE_MESSAGE(h.collector_healthy(), h.logs());
    CHECK_MESSAGE(
        wait_until([&] { return supervisor_reported(*h.server, h.versions[0]); }, 30s, 100ms),
        h.logs());
    CHECK(h.collector_runs(h.versions[0]));
    CHECK(h.get(h.supervisor_health_port, "/health") == 200);
    CHECK_FALSE(supervisor_uid(h).empty());
    MESSAGE("boot " << h.m().boot_time().count() << " ms, case " << ms_since(t0) << " ms");
}

// Item 4.1: offer → Installed, and the supervisor's unit, restarted on the new `current`,
// reports the new version itself.
TEST_CASE_FIXTURE(
    HostCase, "host real: a signed release installed by run; the supervisor's unit reports it") {
    if (!pre.ok()) return;
    HostMachine h(pre);
    require_up(h);
    const std::string v1 = h.versions[0], v2 = h.versions[1];
    const auto t_up = ms_since(t0);
    CHECK(h.current() == "versions/" + v1);
    CHECK(updater_attribute(*h.server, "dev.myriarch.updater.install_method") == "host");
    CHECK(updater_attribute(*h.server, "dev.myriarch.updater.image_collector_version").empty());
    const std::string uid = supervisor_uid(h);
    REQUIRE(!uid.empty());

    const size_t from = h.server->all().size();
    const auto t_offer = std::chrono::steady_clock::now();
    h.offer_good();
    auto st = wait_final(*h.server, v2, from, 120s);
    REQUIRE_MESSAGE(st, "no final status for " << v2 << "\n" << h.logs());
    CHECK_MESSAGE(st->status == kInstalled, st->error << "\n" << h.logs());
    CHECK(st->has == v2);
    const auto installed_ms = ms_since(t_offer);
    CHECK_MESSAGE(wait_until([&] { return supervisor_reported(*h.server, v2, from); }, 30s, 100ms),
                  h.logs());
    CHECK(h.current() == "versions/" + v2);
    CHECK(h.collector_runs(v2));
    CHECK(h.collector_healthy());
    CHECK(h.property(kSupervisorUnit, "ActiveState") == "active");
    // The install stopped and started the unit; systemd restarted nothing on its own.
    CHECK(h.property(kSupervisorUnit, "NRestarts") == "0");
    CHECK(supervisor_uid(h) == uid);
    CHECK(wait_until(
        [&] { return updater_attribute(*h.server, "dev.myriarch.collector.version") == v2; }, 20s,
        100ms));
    CHECK(h.get(h.updater_health_port, "/readyz") == 200);
    CHECK(h.property(kUpdaterUnit, "NRestarts") == "0");
    // The preflight ran as the supervisor's unit runs the collector: its User= and Group=.
    const std::string account =
        "uid " + std::to_string(kServiceUid) + " gid " + std::to_string(kServiceUid) + " (otelcol)";
    CHECK_MESSAGE(h.journal(kUpdaterUnit).find(account) != std::string::npos,
                  h.journal(kUpdaterUnit));
    MESSAGE("boot " << h.m().boot_time().count() << " ms, up " << t_up << " ms, offer to Installed "
                    << installed_ms << " ms, case " << ms_since(t0) << " ms");
}

// Item 4.2: the broken build passes --version and validate, but every start of the collector
// fails, and with it the supervisor's own start (its bootstrap run): rolled back.
TEST_CASE_FIXTURE(
    HostCase, "host real: a release whose collector fails at start is rolled back; the old runs") {
    if (!pre.ok()) return;
    HostMachine h(pre);
    require_up(h);
    const std::string v1 = h.versions[0], broken = h.versions[2];

    const size_t from = h.server->all().size();
    const auto t_offer = std::chrono::steady_clock::now();
    h.offer_broken();
    auto st = wait_final(*h.server, broken, from, 180s);
    REQUIRE_MESSAGE(st, "no final status for " << broken << "\n" << h.logs());
    const auto failed_ms = ms_since(t_offer);
    CHECK_MESSAGE(st->status == kInstallFailed, h.logs());
    CHECK(st->has == v1);
    CHECK_MESSAGE(st->error.find("rolled back") != std::string::npos, st->error);
    MESSAGE("as reported: " << st->error);
    CHECK(h.current() == "versions/" + v1);
    CHECK_MESSAGE(wait_until([&] { return h.collector_healthy(); }, 30s, 100ms), h.logs());
    CHECK_MESSAGE(wait_until([&] { return supervisor_reported(*h.server, v1, from); }, 30s, 100ms),
                  h.logs());
    CHECK_FALSE(supervisor_reported(*h.server, broken));
    CHECK(h.collector_runs(v1));
    CHECK(h.property(kSupervisorUnit, "ActiveState") == "active");
    CHECK(h.property(kUpdaterUnit, "ActiveState") == "active");
    CHECK(h.property(kUpdaterUnit, "NRestarts") == "0");
    CHECK(wait_until([&] { return h.get(h.updater_health_port, "/readyz") == 200; }, 20s, 100ms));
    MESSAGE("offer to InstallFailed " << failed_ms << " ms (healthTimeout 20 s), case "
                                      << ms_since(t0) << " ms");
}

// Item 4.3: the updater killed with SIGKILL once the new version is being started or checked
// (journal phase `starting` or `health-checking`, `current` naming it); systemd restarts it
// (Restart=on-failure) and its recovery puts `current` back at the journal's `from` before
// anything else. The supervisor's unit outlived the updater, so it may run the new version: it
// must run the old one again. `update.trialMaxBoots: 1` makes that interruption the end of the
// offer (rolled back, quarantined), or the offer, sent again, would be installed again at once.
TEST_CASE_FIXTURE(
    HostCase,
    "host real: kill -9 of the updater mid-install; systemd restarts it and it recovers") {
    if (!pre.ok()) return;
    HostOptions opts;
    opts.tweak = [](UpdaterConfig& c) { c.trial_max_boots = 1; };
    HostMachine h(pre, opts);
    require_up(h);
    const std::string v1 = h.versions[0], v2 = h.versions[1];
    const std::string pid_before = h.property(kUpdaterUnit, "MainPID");
    const std::string uid = supervisor_uid(h);

    h.offer_good();
    REQUIRE_MESSAGE(wait_until(
                        [&] {
                            const std::string j = read_file(h.at(kJournal));
                            return h.current() == "versions/" + v2 &&
                                   (j.find("\"phase\":\"starting\"") != std::string::npos ||
                                    j.find("\"phase\":\"health-checking\"") != std::string::npos);
                        },
                        120s, 5ms),
                    "the install never started the new version\n"
                        << h.logs());
    const std::string journal = read_file(h.at(kJournal));
    // The main process: systemd then ends the rest of the unit's processes itself. The default,
    // all of them, fails here ("Failed to send signal SIGKILL to auxiliary processes: No such
    // device") on the machine's cgroup hierarchy.
    RunResult kill =
        h.m().run({"systemctl", "kill", "--kill-whom=main", "-s", "KILL", kUpdaterUnit});
    REQUIRE_MESSAGE(kill.exit_code == 0, kill.err);
    const size_t from = h.server->all().size();
    MESSAGE("killed with the journal: " << journal);

    // systemd restarts it: a new main process, one restart counted, READY again.
    CHECK_MESSAGE(wait_until(
                      [&] {
                          return h.property(kUpdaterUnit, "NRestarts") == "1" &&
                                 h.property(kUpdaterUnit, "ActiveState") == "active";
                      },
                      60s, 100ms),
                  h.logs());
    CHECK(h.property(kUpdaterUnit, "MainPID") != pid_before);
    // The server gets the truth from the restarted updater: the install was interrupted, and
    // recovery put `current` back at `from`.
    auto st = wait_final(*h.server, v2, from, 120s);
    REQUIRE_MESSAGE(st, "no final status for " << v2 << " after the restart\n" << h.logs());
    MESSAGE("after the restart: " << st->status << " has " << st->has << ": " << st->error);
    CHECK(st->status == kInstallFailed);
    CHECK(st->has == v1);
    CHECK(st->error.find("rolled back") != std::string::npos);
    CHECK(st->error.find("interrupted while") != std::string::npos);
    CHECK(st->error.find("recovery: switched current to " + v1) != std::string::npos);
    CHECK_MESSAGE(wait_until([&] { return !exists(h.at(kJournal)); }, 60s, 100ms), h.logs());
    CHECK(h.current() == "versions/" + v1);
    CHECK(exists(h.at(kInstall + "/current/otelcol-contrib")));
    // What runs is what `current` names and the report says.
    CHECK_MESSAGE(
        wait_until([&] { return h.collector_runs(v1) && !h.collector_runs(v2); }, 30s, 100ms),
        h.logs());
    CHECK_MESSAGE(wait_until([&] { return h.collector_healthy(); }, 30s, 100ms), h.logs());
    CHECK_MESSAGE(wait_until([&] { return supervisor_reported(*h.server, v1, from); }, 30s, 100ms),
                  h.logs());
    CHECK(h.collector_runs(v1));
    CHECK(supervisor_uid(h) == uid);
    CHECK(h.property(kSupervisorUnit, "ActiveState") == "active");
    MESSAGE("case " << ms_since(t0) << " ms");
}

// Item 4.4: `systemctl stop` of the updater while the supervisor's unit is stopped for the swap
// (its ExecStopPost holds the stop 2 s, so the case can reach that point): the stop returns only
// once the install's critical section is over and the supervisor runs again; exit 0; the
// supervisor's unit is left running.
TEST_CASE_FIXTURE(
    HostCase, "host real: systemctl stop of the updater inside the critical section waits for it") {
    if (!pre.ok()) return;
    HostOptions opts;
    opts.supervisor_service_extra = "ExecStopPost=/bin/sleep 2\n";
    HostMachine h(pre, opts);
    require_up(h);
    const std::string v2 = h.versions[1];

    const size_t from = h.server->all().size();
    h.offer_good();
    REQUIRE_MESSAGE(wait_until(
                        [&] {
                            if (!exists(h.at(kJournal))) return false;
                            std::string s = h.property(kSupervisorUnit, "ActiveState");
                            return s == "deactivating" || s == "inactive";
                        },
                        120s, 10ms),
                    "the supervisor's unit was never seen stopping\n"
                        << h.logs());
    const auto t_stop = std::chrono::steady_clock::now();
    RunResult stop = h.m().run({"systemctl", "stop", kUpdaterUnit}, 180s);
    const auto stop_ms = ms_since(t_stop);
    CHECK_MESSAGE(stop.exit_code == 0, stop.err);
    // At the moment the stop returned, the supervisor ran again and the install was over.
    CHECK(h.property(kSupervisorUnit, "ActiveState") == "active");
    CHECK_FALSE(exists(h.at(kJournal)));
    CHECK(h.property(kUpdaterUnit, "ActiveState") == "inactive");
    CHECK(h.property(kUpdaterUnit, "Result") == "success");
    CHECK(h.property(kUpdaterUnit, "ExecMainStatus") == "0");
    CHECK(h.current() == "versions/" + v2);
    auto st = wait_final(*h.server, v2, from, 5s);
    CHECK_MESSAGE(st, "the updater left before it reported the outcome\n" << h.logs());
    if (st) CHECK_MESSAGE(st->status == kInstalled, st->error << "\n" << h.logs());
    // Left running: the collector still serves, and the supervisor reports the new version.
    CHECK(wait_until([&] { return h.collector_healthy(); }, 30s, 100ms));
    CHECK(wait_until([&] { return supervisor_reported(*h.server, v2, from); }, 30s, 100ms));
    CHECK(h.property(kSupervisorUnit, "ActiveState") == "active");
    MESSAGE("systemctl stop inside the critical section took " << stop_ms << " ms, case "
                                                               << ms_since(t0) << " ms");
}

// Item 4.5: the volume's collector fails at every start, so does the supervisor (its bootstrap
// run), and systemd gives up at StartLimitBurst=3: the updater reports it and keeps running; an
// offer of a working build then fixes it.
TEST_CASE_FIXTURE(
    HostCase,
    "host real: the supervisor's unit crash-looping is reported; the updater keeps running") {
    if (!pre.ok()) return;
    HostOptions opts;
    opts.seed_build = "otelcol-broken";  // the volume's version since seeding
    opts.tweak = [](UpdaterConfig& c) {
        c.allow_downgrade = true;  // the fix is older than the broken build
        // The supervisor never finished its bootstrap, so its effective.yaml (the preflight's
        // default config) is no config the fix could validate against: the base config is.
        c.config_file = kCollectorYaml;
    };
    HostMachine h(pre, opts);
    REQUIRE_MESSAGE(h.booted(), h.m().boot_state());
    const std::string v2 = h.versions[1];
    RunResult start = h.start_updater();
    REQUIRE_MESSAGE(start.exit_code == 0, start.err << "\n" << h.logs());
    const std::string gave_up = "unit " + kSupervisorUnit + " failed and will not be restarted";
    CHECK_MESSAGE(
        wait_until([&] { return h.journal(kUpdaterUnit).find(gave_up) != std::string::npos; }, 90s,
                   250ms),
        h.logs());
    const auto gave_up_ms = ms_since(t0);
    CHECK(h.property(kSupervisorUnit, "ActiveState") == "failed");
    // Unhealthy, the unit's text in the status and as the last error (not the restart before).
    CHECK_MESSAGE(wait_until(
                      [&] {
                          auto health = h.updater_health();
                          return health && !health->healthy &&
                                 health->status.find(gave_up) != std::string::npos;
                      },
                      30s, 100ms),
                  h.logs());
    if (auto health = h.updater_health()) {
        MESSAGE("OpAMP health: status " << health->status << "; last error " << health->last_error);
        CHECK(health->last_error.find(gave_up) != std::string::npos);
    }
    CHECK(h.get(h.updater_health_port, "/readyz") == 503);
    // Still running, not restarted by systemd.
    CHECK(h.property(kUpdaterUnit, "ActiveState") == "active");
    CHECK(h.property(kUpdaterUnit, "NRestarts") == "0");

    // A later offer fixes it: the working build installed, the unit started again.
    const size_t from = h.server->all().size();
    h.offer_good();
    auto st = wait_final(*h.server, v2, from, 120s);
    REQUIRE_MESSAGE(st, "no final status for " << v2 << "\n" << h.logs());
    CHECK_MESSAGE(st->status == kInstalled, st->error << "\n" << h.logs());
    CHECK(h.property(kSupervisorUnit, "ActiveState") == "active");
    CHECK(wait_until([&] { return supervisor_reported(*h.server, v2, from); }, 30s, 100ms));
    CHECK(wait_until(
        [&] {
            auto health = h.updater_health();
            return health && health->healthy;
        },
        30s, 100ms));
    CHECK(wait_until([&] { return h.get(h.updater_health_port, "/readyz") == 200; }, 20s, 100ms));
    MESSAGE("start to the updater's report of the crash loop " << gave_up_ms << " ms, case "
                                                               << ms_since(t0) << " ms");
}
