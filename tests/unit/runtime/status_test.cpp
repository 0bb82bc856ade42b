// What the agent is told about the collector, driven by the child service's change events (no
// sampling timer): on the fake scheduler and fake processes.
#include "runtime/status.hpp"

#include <doctest/doctest.h>
#include <signal.h>

#include "loop/fake_scheduler.hpp"
#include "proc/fake_processes.hpp"
#include "service/child_service.hpp"
#include "service/systemd_unit.hpp"

using namespace myr;
using namespace std::chrono_literals;
using proc::FakeProcesses;

namespace {

struct Rig {
    loop::FakeScheduler sched;
    FakeProcesses procs;
    service::ChildService child;
    runtime::CollectorStatus status;
    int changes = 0;

    Rig() : child(procs, sched, settings()), status(sched, child) {
        status.on_change([this] { ++changes; });
    }
    static service::ChildSettings settings() {
        service::ChildSettings s;
        s.command = {"/supervisor"};
        s.restart = {2s, 5, 10min};
        return s;
    }
};

}  // namespace

TEST_CASE("collector status: says the volume is being prepared until the child is followed") {
    Rig rig;
    auto h = rig.status.health();
    CHECK_FALSE(h.healthy);
    CHECK(h.status == "starting: preparing the collector volume");
    rig.status.set_versions({"0.116.0", "0.116.0", ""});
    CHECK(rig.changes == 1);
    CHECK(rig.status.image_collector_version() == "0.116.0");
    // The child's events are ignored until follow().
    rig.child.start([](Status) {});
    rig.sched.run_pending();
    CHECK(rig.changes == 1);
    rig.status.follow();
    CHECK(rig.changes == 2);
    h = rig.status.health();
    CHECK(h.healthy);
    CHECK(h.status == "supervisor child running (pid " + std::to_string(rig.child.pid()) + ")");
    CHECK(h.start_time_unix_nano == h.status_time_unix_nano);
}

TEST_CASE("collector status: an end and a restart are reported when they happen, nothing between") {
    Rig rig;
    rig.child.start([](Status) {});
    rig.status.follow();
    rig.sched.run_pending();
    const int after_start = rig.changes;
    const uint64_t started = rig.status.health().start_time_unix_nano;

    rig.sched.advance(5s);
    rig.procs.end(rig.child.pid(), FakeProcesses::exited(1));
    rig.sched.run_pending();
    CHECK(rig.changes == after_start + 1);
    auto h = rig.status.health();
    CHECK_FALSE(h.healthy);
    CHECK(h.status == "supervisor child not running: restarting in 2s");
    CHECK(h.last_error == "supervisor ended: child not running: restarting in 2s");

    rig.sched.advance(2s);  // restarted
    CHECK(rig.changes == after_start + 2);
    h = rig.status.health();
    CHECK(h.healthy);
    CHECK(h.start_time_unix_nano > started);

    rig.sched.advance(1h);  // an unchanged child never produces a report
    CHECK(rig.changes == after_start + 2);
}

// A systemd unit that hit its start limit goes from waiting to restart straight to failed, never
// running in between as the poll saw it: the give-up itself is the error.
TEST_CASE("collector status: a unit's give-up is the last error, not the restart before it") {
    loop::FakeScheduler sched;
    std::string unit_text;
    auto show = [&](const std::string& active, const std::string& sub, int restarts, int pid) {
        unit_text = "LoadState=loaded\nActiveState=" + active + "\nSubState=" + sub +
                    "\nResult=exit-code\nNRestarts=" + std::to_string(restarts) +
                    "\nMainPID=" + std::to_string(pid) + "\n";
    };
    service::SystemdUnit unit(
        [&](const std::vector<std::string>&, Duration,
            std::function<void(Result<proc::Captured>)> done) {
            proc::Captured c;
            c.output = unit_text;
            sched.post([done, c] { done(c); });
        },
        sched, {"opampsupervisor.service", 1s, 90s, 90s});
    runtime::CollectorStatus status(sched, unit);
    show("active", "running", 0, 4242);
    unit.watch();
    sched.run_pending();
    status.follow();
    CHECK(status.health().healthy);
    show("activating", "auto-restart", 1, 0);
    sched.advance(1s);
    CHECK(status.health().last_error ==
          "supervisor ended: unit opampsupervisor.service not running: restarting (1 restarts)");
    show("failed", "failed", 1, 0);  // the start limit refused the restart
    sched.advance(1s);
    REQUIRE(unit.desired() == service::Desired::gave_up);
    auto h = status.health();
    CHECK_FALSE(h.healthy);
    CHECK(h.status == "supervisor " + unit.describe());
    CHECK(h.last_error ==
          "supervisor ended: unit opampsupervisor.service failed and will not be restarted "
          "(Result=exit-code, 1 restarts)");
}

TEST_CASE("collector status: a rollback that stayed unhealthy is reported unhealthy with why") {
    Rig rig;
    rig.child.start([](Status) {});
    rig.sched.run_pending();
    rig.status.follow();
    int before = rig.changes;
    const std::string why = "rolled back to 0.116.0, unhealthy: health check failed: x";
    rig.status.set_install_problem(why);
    CHECK(rig.changes == before + 1);
    rig.status.set_install_problem(why);  // unchanged: no new message
    CHECK(rig.changes == before + 1);
    auto h = rig.status.health();
    CHECK_FALSE(h.healthy);  // although the child runs
    CHECK(h.status == "collector unhealthy: " + why);
    CHECK(h.last_error == why);
    rig.status.set_install_problem("");  // a later install proved a version
    CHECK(rig.status.health().healthy);
}

TEST_CASE("collector status: the updater's own health says the trial and its end (issue 35)") {
    Rig rig;
    update::UpdateView v;
    v.state = "trial";
    v.target_version = "0.118.0";
    v.previous_version = "0.117.0";
    v.trial_until = "2026-12-07T10:10:00Z";
    rig.status.set_updater(
        runtime::updater_health(v, "0.118.0 on trial until 2026-12-07T10:10:00Z"));
    auto h = rig.status.health();
    REQUIRE(h.components.size() == 1);
    CHECK(h.components[0].first == "myriarch-updater");
    const opamp::SubHealth& u = h.components[0].second;
    CHECK(u.healthy);
    CHECK(u.status == "0.118.0 on trial until 2026-12-07T10:10:00Z");
    CHECK(u.attributes ==
          std::vector<opamp::KeyValue>{{"myriarch.update.state", "trial"},
                                       {"myriarch.update.target_version", "0.118.0"},
                                       {"myriarch.update.previous_version", "0.117.0"},
                                       {"myriarch.update.trial_until", "2026-12-07T10:10:00Z"}});
    CHECK(u.status_time_unix_nano != 0);
    // The same view again changes nothing (no message); a rollback after commit does.
    const int changes = rig.changes;
    rig.sched.advance(1s);
    rig.status.set_updater(
        runtime::updater_health(v, "0.118.0 on trial until 2026-12-07T10:10:00Z"));
    CHECK(rig.changes == changes);
    update::UpdateView rolled;
    rolled.state = "idle";
    rolled.last_error = "rolled back after commit: the supervisor ended 3 times";
    rig.status.set_updater(runtime::updater_health(rolled, "no install in progress"));
    CHECK(rig.changes == changes + 1);
    const opamp::SubHealth after = rig.status.health().components[0].second;
    CHECK_FALSE(after.healthy);
    CHECK(after.last_error == rolled.last_error);
    CHECK(after.status_time_unix_nano > u.status_time_unix_nano);
}
