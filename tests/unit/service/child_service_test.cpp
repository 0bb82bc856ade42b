#include "service/child_service.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include "loop/fake_scheduler.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"
#include "proc/fake_processes.hpp"
#include "proc/reaper.hpp"

using namespace myr;
using namespace myr::service;
using namespace std::chrono_literals;
using proc::FakeProcesses;

namespace {

ChildSettings settings(Duration restart_delay = 2s, uint32_t max_restarts = 3) {
    ChildSettings s;
    s.command = {"/usr/bin/opampsupervisor", "--config", "/etc/supervisor.yaml"};
    s.stop_timeout = 30s;
    s.restart = {restart_delay, max_restarts, 10min};
    return s;
}

// A child service on fake processes and a fake clock.
struct Rig {
    loop::FakeScheduler sched;
    FakeProcesses procs;
    ChildService child;
    explicit Rig(ChildSettings s = settings()) : child(procs, sched, std::move(s)) {}

    // start() and its answer.
    Status start() {
        std::optional<Status> got;
        child.start([&](Status st) { got = st; });
        CHECK_FALSE(got.has_value());  // never from inside the call
        sched.run_pending();
        REQUIRE(got.has_value());
        return *got;
    }
    std::vector<int> signals_to(pid_t pid) const {
        std::vector<int> out;
        for (auto [p, sig] : procs.signals) {
            if (p == pid) out.push_back(sig);
        }
        return out;
    }
};

}  // namespace

TEST_CASE("child service: start runs the command in its own process and answers later") {
    Rig rig;
    CHECK(rig.child.state() == State::stopped);
    REQUIRE(rig.start().ok());
    CHECK(rig.child.state() == State::running);
    CHECK(rig.procs.spawns == 1);
    CHECK(rig.procs.processes[rig.procs.last_pid].argv == settings().command);
    CHECK(rig.child.pid() == rig.procs.last_pid);
    CHECK(rig.child.describe() == "child running (pid " + std::to_string(rig.procs.last_pid) + ")");
}

TEST_CASE("child service: stop sends TERM to the group; the stop ends when the group is gone") {
    Rig rig;
    REQUIRE(rig.start().ok());
    const pid_t pid = rig.child.pid();
    std::optional<Status> stopped;
    rig.child.stop([&](Status st) { stopped = st; });
    CHECK(rig.child.state() == State::stopping);
    CHECK(rig.signals_to(-pid) == std::vector<int>{SIGTERM});
    // The leader goes first; its collector is still shutting down in the same group.
    rig.procs.end(pid, FakeProcesses::killed_by(SIGTERM), /*leftovers=*/true);
    rig.sched.advance(200ms);
    CHECK(rig.child.state() == State::stopping);
    rig.procs.end_group(pid);
    rig.sched.advance(50ms);
    CHECK(rig.child.state() == State::stopped);
    REQUIRE(stopped.has_value());
    CHECK(stopped->ok());
    // Stopped on purpose: nothing restarts it.
    rig.sched.advance(1h);
    CHECK(rig.child.state() == State::stopped);
    CHECK(rig.procs.spawns == 1);
}

TEST_CASE("child service: a child ignoring TERM gets KILL after stopTimeout") {
    Rig rig;
    REQUIRE(rig.start().ok());
    const pid_t pid = rig.child.pid();
    bool stopped = false;
    rig.child.stop([&](Status) { stopped = true; });
    rig.sched.advance(29s);
    CHECK(rig.signals_to(-pid) == std::vector<int>{SIGTERM});
    rig.sched.advance(1s);
    CHECK(rig.signals_to(-pid) == std::vector<int>{SIGTERM, SIGKILL});
    CHECK_FALSE(stopped);  // the leader's end is still to be reported
    rig.procs.end(pid, FakeProcesses::killed_by(SIGKILL));
    rig.sched.run_pending();
    CHECK(stopped);
    CHECK(rig.child.state() == State::stopped);
}

TEST_CASE("child service: container.stopSignal INT goes to the group first, KILL still follows") {
    // The upstream supervisor shuts down in order only on INT (docs/real-peers.md).
    ChildSettings s = settings();
    s.stop_signal = SIGINT;
    Rig rig(s);
    REQUIRE(rig.start().ok());
    const pid_t pid = rig.child.pid();
    rig.child.stop([](Status) {});
    CHECK(rig.signals_to(-pid) == std::vector<int>{SIGINT});
    rig.sched.advance(30s);
    CHECK(rig.signals_to(-pid) == std::vector<int>{SIGINT, SIGKILL});
    rig.procs.end(pid, FakeProcesses::killed_by(SIGKILL));
    rig.sched.run_pending();
    CHECK(rig.child.state() == State::stopped);
}

TEST_CASE("child service: an unexpected end restarts after the delay, doubling each time") {
    Rig rig(settings(2s, 10));
    REQUIRE(rig.start().ok());
    for (Duration delay : {2s, 4s, 8s}) {
        CAPTURE(delay.count());
        const int before = rig.procs.spawns;
        rig.procs.end(rig.child.pid(), FakeProcesses::exited(1));
        CHECK(rig.child.state() == State::waiting_to_restart);
        rig.sched.advance(delay - 1ms);
        CHECK(rig.procs.spawns == before);
        rig.sched.advance(1ms);
        CHECK(rig.procs.spawns == before + 1);
        CHECK(rig.child.state() == State::running);
    }
}

TEST_CASE("child service: leftovers of a crashed child's group are killed before the restart") {
    Rig rig;
    REQUIRE(rig.start().ok());
    const pid_t pid = rig.child.pid();
    rig.procs.end(pid, FakeProcesses::killed_by(SIGSEGV), /*leftovers=*/true);
    CHECK(rig.signals_to(-pid) == std::vector<int>{SIGKILL});
    rig.sched.advance(2s);
    CHECK(rig.procs.spawns == 2);
}

TEST_CASE("child service: more than maxRestarts ends within the window give up, with the reason") {
    Rig rig(settings(50ms, 3));
    REQUIRE(rig.start().ok());
    for (int i = 0; i < 4 && rig.child.desired() != Desired::gave_up; ++i) {
        rig.procs.end(rig.child.pid(), FakeProcesses::exited(3));
        rig.sched.advance(1s);
    }
    CHECK(rig.child.desired() == Desired::gave_up);
    CHECK(rig.child.give_up_reason() == "4 unexpected ends within 10m (maxRestarts 3)");
    CHECK(rig.child.describe() ==
          "child not running: gave up: 4 unexpected ends within 10m (maxRestarts 3)");
    CHECK(rig.procs.spawns == 4);  // the first start and 3 restarts
    CHECK(rig.child.state() == State::stopped);
    rig.sched.advance(1h);
    CHECK(rig.procs.spawns == 4);
    // The shutdown that follows keeps the reason.
    rig.child.stop([](Status) {});
    rig.sched.run_pending();
    CHECK(rig.child.desired() == Desired::gave_up);
}

TEST_CASE("child service: a start on purpose is not charged the crashes of the run before") {
    // A broken release crashes twice under the installer, which then stops the child and starts
    // the restored version: that one gets the whole budget and the first delay again.
    Rig rig(settings(2s, 2));
    REQUIRE(rig.start().ok());
    rig.procs.end(rig.child.pid(), FakeProcesses::exited(1));
    rig.sched.advance(10s);
    rig.procs.end(rig.child.pid(), FakeProcesses::exited(1));
    // Two ends of maxRestarts 2: one more would give up. The installer stops it in the backoff.
    CHECK(rig.child.state() == State::waiting_to_restart);
    CHECK(rig.child.desired() == Desired::running);
    rig.child.stop([](Status) {});
    rig.sched.run_pending();
    REQUIRE(rig.start().ok());
    const int spawns = rig.procs.spawns;
    rig.procs.end(rig.child.pid(), FakeProcesses::exited(1));
    CHECK(rig.child.desired() == Desired::running);
    CHECK(rig.child.state() == State::waiting_to_restart);
    rig.sched.advance(1999ms);
    CHECK(rig.procs.spawns == spawns);
    rig.sched.advance(1ms);
    CHECK(rig.procs.spawns == spawns + 1);  // restartDelay, not the doubled 8 s
}

TEST_CASE(
    "child service: desired state tells never started, stopped on request and running apart") {
    Rig rig;
    CHECK(rig.child.desired() == Desired::not_started);
    CHECK(rig.child.describe() == "child not running: not started yet");
    REQUIRE(rig.start().ok());
    CHECK(rig.child.desired() == Desired::running);
    // An unexpected end changes what the process does, not what is wanted of it.
    rig.procs.end(rig.child.pid(), FakeProcesses::exited(1));
    CHECK(rig.child.state() == State::waiting_to_restart);
    CHECK(rig.child.desired() == Desired::running);
    rig.child.stop([](Status) {});
    rig.sched.run_pending();
    CHECK(rig.child.desired() == Desired::stopped);
    CHECK(rig.child.describe() == "child not running: stopped");
}

TEST_CASE("child service: changes are announced on a later turn, once per burst") {
    Rig rig;
    std::vector<State> seen;
    rig.child.on_change([&] { seen.push_back(rig.child.state()); });
    rig.child.start([](Status) {});
    CHECK(seen.empty());  // never from inside the call
    rig.sched.run_pending();
    CHECK(seen == std::vector<State>{State::running});
    // The end and the restart decision are one change.
    rig.procs.end(rig.child.pid(), FakeProcesses::exited(1));
    rig.sched.run_pending();
    CHECK(seen == std::vector<State>{State::running, State::waiting_to_restart});
    rig.sched.advance(2s);
    CHECK(seen.back() == State::running);
    const size_t before = seen.size();
    rig.sched.advance(1h);  // nothing happens: nothing is announced
    CHECK(seen.size() == before);
    rig.child.stop([](Status) {});
    rig.procs.end(rig.child.pid(), FakeProcesses::killed_by(SIGTERM));
    rig.sched.run_pending();
    CHECK(seen.back() == State::stopped);
}

TEST_CASE("child service: start during the restart delay starts at once; stop cancels it") {
    Rig rig(settings(60s));
    REQUIRE(rig.start().ok());
    rig.procs.end(rig.child.pid(), FakeProcesses::exited(1));
    CHECK(rig.child.state() == State::waiting_to_restart);
    rig.sched.advance(20s);
    CHECK(rig.child.describe() == "child not running: restarting in 40s");
    REQUIRE(rig.start().ok());
    CHECK(rig.procs.spawns == 2);
    CHECK(rig.child.state() == State::running);

    rig.procs.end(rig.child.pid(), FakeProcesses::exited(1));
    bool stopped = false;
    rig.child.stop([&](Status st) { stopped = st.ok(); });
    rig.sched.run_pending();
    CHECK(stopped);
    CHECK(rig.child.state() == State::stopped);
    rig.sched.advance(1h);
    CHECK(rig.procs.spawns == 2);
}

TEST_CASE("child service: an exec failure is reported and counts as an unexpected end") {
    Rig rig;
    rig.procs.next_exec_errno = ENOENT;
    Status st = rig.start();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == "exec /usr/bin/opampsupervisor: No such file or directory");
    CHECK(st.error().code() == Errc::process);
    CHECK(st.error().sys_errno() == ENOENT);
    // The child exits 127 and the reaper reports it like any other end.
    rig.procs.end(rig.child.pid(), FakeProcesses::exited(127));
    CHECK(rig.child.state() == State::waiting_to_restart);
    rig.sched.advance(2s);
    CHECK(rig.procs.spawns == 2);
}

TEST_CASE("child service: a failed fork is an error and the restart policy still applies") {
    Rig rig;
    rig.procs.fail_next_spawn = Error("fork: Resource temporarily unavailable");
    Status st = rig.start();
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().message() == "start child: fork: Resource temporarily unavailable");
    CHECK(rig.child.state() == State::waiting_to_restart);
    rig.sched.advance(2s);
    CHECK(rig.procs.spawns == 1);
    CHECK(rig.child.state() == State::running);
}

TEST_CASE("child service: signals are forwarded to the child's pid, not its group") {
    Rig rig;
    CHECK_FALSE(rig.child.forward(SIGHUP).has_value());
    REQUIRE(rig.start().ok());
    CHECK(rig.child.forward(SIGHUP) == rig.child.pid());
    CHECK(rig.signals_to(rig.child.pid()) == std::vector<int>{SIGHUP});
    CHECK(rig.signals_to(-rig.child.pid()).empty());
}

TEST_CASE("child service: start while stopping is refused; stop while stopped succeeds") {
    Rig rig;
    std::optional<Status> st;
    rig.child.stop([&](Status s) { st = s; });
    rig.sched.run_pending();
    REQUIRE(st.has_value());
    CHECK(st->ok());
    REQUIRE(rig.start().ok());
    rig.child.stop([](Status) {});
    st.reset();
    rig.child.start([&](Status s) { st = s; });
    rig.sched.run_pending();
    REQUIRE(st.has_value());
    CHECK(st->error().message() == "start child: it is still stopping");
}

TEST_CASE("child service: a real child on the reaper starts, stops and is not restarted") {
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        ChildSettings s;
        s.command = {"/bin/sh", "-c", "exec sleep 30"};
        s.stop_timeout = 2s;
        ChildService child(reaper, sched, s);
        bool started = false;
        child.start([&](Status st) { started = st.ok(); });
        CHECK(loop.run_until([&] { return started; }, 5s));
        CHECK(child.state() == State::running);
        bool stopped = false;
        child.stop([&](Status st) { stopped = st.ok(); });
        CHECK(loop.run_until([&] { return stopped; }, 10s));
        CHECK(child.state() == State::stopped);
        CHECK(child.starts() == 1);
    }
    CHECK(loop.close() == 0);
}
