// Host mode under a real systemd (issue 27): a Debian bookworm machine booted by systemd-nspawn
// (tests/support/systemd_rig.hpp) on a fresh overlay per test.
#include <doctest/doctest.h>

#include <chrono>

#include "harness.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"
#include "proc/reaper.hpp"
#include "service/systemd_unit.hpp"
#include "systemd_rig.hpp"

using namespace myr::test;
using namespace std::chrono_literals;

namespace {

Millis since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - t0);
}

std::string unit_property(BootedSystemd& m, const std::string& unit, const std::string& prop) {
    RunResult r = m.run({"systemctl", "show", "-p", prop, "--value", unit});
    std::string v = r.out;
    while (!v.empty() && v.back() == '\n') v.pop_back();
    return v;
}

// A seed directory for BootOptions with one unit in /etc/systemd/system.
void seed_unit(const TempDir& seed, const std::string& name, const std::string& text) {
    run({"mkdir", "-p", seed / "etc/systemd/system"});
    write_file(seed / ("etc/systemd/system/" + name), text);
}

}  // namespace

TEST_CASE("host rig: a bookworm systemd boots as PID 1 on a clean overlay and runs our units") {
    const std::string rootfs = bootable_rootfs();
    if (rootfs.empty()) return;
    TempDir seed;
    seed_unit(seed, "myr-hello.service", "[Service]\nExecStart=/bin/sleep infinity\n");
    std::string mounts_before = read_file("/proc/self/mountinfo");
    auto t_halt = std::chrono::steady_clock::now();
    {
        BootedSystemd m(rootfs, {seed.path()});
        REQUIRE_MESSAGE(m.booted(), m.boot_state());
        MESSAGE("warm boot to is-system-running: " << m.boot_time().count() << " ms");
        CHECK(m.boot_state() == "running");
        RunResult pid1 = m.run({"cat", "/proc/1/comm"});
        CHECK(pid1.out == "systemd\n");
        // The machine shares the host's network namespace: 127.0.0.1 is the host's.
        CHECK(run({"readlink", "/proc/self/ns/net"}).out ==
              run({"readlink", "/proc/" + std::to_string(m.init_pid()) + "/ns/net"}).out);
        CHECK(run({"readlink", "/proc/self/ns/pid"}).out !=
              run({"readlink", "/proc/" + std::to_string(m.init_pid()) + "/ns/pid"}).out);
        RunResult start = m.run({"systemctl", "start", "myr-hello.service"});
        REQUIRE_MESSAGE(start.exit_code == 0, start.err);
        CHECK(unit_property(m, "myr-hello.service", "ActiveState") == "active");
        // The host reaches the machine's files; what it writes stays in the overlay.
        write_file(m.root() + "/etc/myr-written-from-host", "x\n");
        CHECK(m.run({"cat", "/etc/myr-written-from-host"}).out == "x\n");
        t_halt = std::chrono::steady_clock::now();
    }
    MESSAGE("halt: " << since(t_halt).count() << " ms");
    // Nothing left behind: the lower layer is untouched, and no mount of the machine's stayed.
    CHECK_FALSE(exists(rootfs + "/etc/myr-written-from-host"));
    CHECK_FALSE(exists(rootfs + "/etc/systemd/system/myr-hello.service"));
    CHECK(read_file("/proc/self/mountinfo") == mounts_before);
}

// SystemdUnit reads `systemctl show` (src/service/systemd_unit.hpp): its mapping checked against
// what systemd 252 itself answers for a unit that crash-loops until its start limit.
TEST_CASE(
    "host rig: a real unit's restarts and start limit map to waiting_to_restart and gave_up") {
    const std::string rootfs = bootable_rootfs();
    if (rootfs.empty()) return;
    TempDir seed;
    // Fails at once, restarted 1 s later, 3 starts within a minute at most: the fourth is refused.
    seed_unit(seed, "myr-crash.service",
              "[Unit]\nStartLimitIntervalSec=60\nStartLimitBurst=3\n"
              "[Service]\nExecStart=/bin/false\nRestart=always\nRestartSec=1\n");
    BootedSystemd m(rootfs, {seed.path()});
    REQUIRE_MESSAGE(m.booted(), m.boot_state());
    auto status = [&] {
        RunResult r = m.run({"systemctl", "show", "-p", myr::service::unit_status_properties(),
                             "myr-crash.service"});
        auto st = myr::service::parse_unit_status(r.out);
        REQUIRE_MESSAGE(st.ok(), r.out << r.err);
        return *st;
    };
    CHECK(myr::service::to_state(status()) == myr::service::State::stopped);  // never started
    CHECK_FALSE(myr::service::gave_up(status()));
    REQUIRE(m.run({"systemctl", "start", "myr-crash.service"}).exit_code == 0);
    bool restarting = wait_until(
        [&] { return myr::service::to_state(status()) == myr::service::State::waiting_to_restart; },
        20s, 100ms);
    CHECK_MESSAGE(restarting, "never seen in auto-restart");
    myr::service::UnitStatus last;
    bool gave = wait_until(
        [&] {
            last = status();
            return myr::service::gave_up(last);
        },
        30s, 100ms);
    REQUIRE_MESSAGE(gave,
                    "last: " << last.active_state << "/" << last.sub_state << " " << last.result);
    // What systemd 252 leaves: the last process's Result, not start-limit-hit (that is what a
    // refused manual start says), and the restarts it scheduled, the refused one included.
    CHECK(last.result == "exit-code");
    CHECK(last.n_restarts == 3);
    CHECK(last.main_pid == 0);
    CHECK(myr::service::to_state(last) == myr::service::State::stopped);
}

// The controller itself on the real loop and reaper, its systemctl run inside the machine.
TEST_CASE("host rig: SystemdUnit starts, follows and stops a real unit, and sees its crash loop") {
    using namespace myr;
    const std::string rootfs = bootable_rootfs();
    if (rootfs.empty()) return;
    TempDir seed;
    seed_unit(seed, "myr-sup.service",
              "[Service]\nExecStart=/bin/sleep infinity\nRestart=always\nRestartSec=1\n");
    seed_unit(seed, "myr-crash.service",
              "[Unit]\nStartLimitIntervalSec=60\nStartLimitBurst=3\n"
              "[Service]\nExecStart=/bin/false\nRestart=always\nRestartSec=1\n");
    BootedSystemd m(rootfs, {seed.path()});
    REQUIRE_MESSAGE(m.booted(), m.boot_state());
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        auto runner = service::systemctl_runner(
            reaper, sched, {"nsenter", "-t", std::to_string(m.init_pid()), "-a", "systemctl"});
        service::SystemdUnit sup(runner, sched, {"myr-sup.service", 200ms, 30s, 30s});
        int events = 0;
        sup.on_change([&] { ++events; });
        sup.watch();
        std::optional<Status> started;
        sup.start([&](Status st) { started = st; });
        REQUIRE(loop.run_until([&] { return started.has_value(); }, 30s));
        REQUIRE_MESSAGE(started->ok(), started->error().message());
        CHECK(sup.state() == service::State::running);
        const pid_t first = sup.status().main_pid;
        CHECK(first > 0);
        // The main process dies of the signal (sent through systemd, into the machine's PID
        // namespace); systemd restarts it: seen through the poll.
        CHECK(sup.forward(SIGTERM) == first);
        CHECK(loop.run_until(
            [&] { return sup.status().n_restarts == 1 && sup.status().main_pid > 0; }, 30s));
        CHECK(sup.status().main_pid != first);
        CHECK(sup.desired() == service::Desired::running);
        CHECK(events >= 2);
        std::optional<Status> stopped;
        sup.stop([&](Status st) { stopped = st; });
        REQUIRE(loop.run_until([&] { return stopped.has_value(); }, 30s));
        CHECK(stopped->ok());
        CHECK(sup.state() == service::State::stopped);
        CHECK(sup.desired() == service::Desired::stopped);

        service::SystemdUnit crash(runner, sched, {"myr-crash.service", 200ms, 30s, 30s});
        crash.watch();
        crash.start([](Status) {});
        CHECK(loop.run_until([&] { return crash.desired() == service::Desired::gave_up; }, 40s));
        MESSAGE(crash.describe());
        CHECK(crash.describe() ==
              "unit myr-crash.service failed and will not be restarted (Result=exit-code, 3 "
              "restarts)");
    }
    CHECK(loop.close() == 0);
}
