#include "service/systemd_unit.hpp"

#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <deque>
#include <set>

#include "loop/fake_scheduler.hpp"

using namespace myr;
using namespace myr::service;
using namespace std::chrono_literals;

namespace {

std::string show(const std::string& active, const std::string& sub, const std::string& result,
                 int restarts = 0, int pid = 0) {
    return "LoadState=loaded\nActiveState=" + active + "\nSubState=" + sub + "\nResult=" + result +
           "\nNRestarts=" + std::to_string(restarts) + "\nMainPID=" + std::to_string(pid) + "\n";
}

// A systemctl that records its calls and answers each `show` with the unit's current text, each
// job with exit 0 (or what the test queued), always on a later turn.
struct FakeSystemctl {
    loop::FakeScheduler& sched;
    std::string unit_text;
    std::vector<std::vector<std::string>> calls;
    std::deque<int> job_exits;  // exit codes of the next start/stop/reset-failed calls
    std::string job_output;

    SystemctlRunner runner() {
        return [this](const std::vector<std::string>& args, Duration,
                      std::function<void(Result<proc::Captured>)> done) {
            calls.push_back(args);
            proc::Captured c;
            if (args.at(0) == "show") {
                c.output = unit_text;
            } else if (!job_exits.empty()) {
                c.wait_status = (job_exits.front() & 0xff) << 8;
                c.output = job_output;
                job_exits.pop_front();
            }
            sched.post([done, c] { done(c); });
        };
    }
    size_t count(const std::string& verb) const {
        size_t n = 0;
        for (auto& c : calls) n += c.at(0) == verb;
        return n;
    }
};

struct Rig {
    loop::FakeScheduler sched;
    FakeSystemctl systemctl{sched, show("active", "running", "success", 0, 4242), {}, {}, {}};
    SystemdUnit unit{systemctl.runner(), sched, {"opampsupervisor.service", 1s, 90s, 90s}};
    int changes = 0;
    Rig() {
        unit.on_change([this] { ++changes; });
    }

    // Polls from now on, and reads the unit once.
    void watch() {
        unit.watch();
        sched.run_pending();
    }
    // The unit becomes `text`, and the next poll reads it.
    void becomes(const std::string& text) {
        systemctl.unit_text = text;
        sched.advance(1s);
    }

    Status call(void (SystemdUnit::*fn)(Done)) {
        std::optional<Status> got;
        (unit.*fn)([&](Status st) { got = st; });
        CHECK_FALSE(got.has_value());  // never from inside the call
        sched.run_pending();
        REQUIRE(got.has_value());
        return *got;
    }
};

}  // namespace

TEST_CASE("systemd unit: systemctl show parses into the unit's state") {
    auto st = parse_unit_status(show("activating", "auto-restart", "exit-code", 3, 0));
    REQUIRE(st.ok());
    CHECK(st->active_state == "activating");
    CHECK(st->n_restarts == 3);
    CHECK(to_state(*st) == State::waiting_to_restart);
    CHECK_FALSE(gave_up(*st));
    CHECK(to_state(*parse_unit_status(show("active", "running", "success"))) == State::running);
    CHECK(to_state(*parse_unit_status(show("activating", "start", "success"))) == State::running);
    CHECK(to_state(*parse_unit_status(show("deactivating", "stop-sigterm", "success"))) ==
          State::stopping);
    CHECK(to_state(*parse_unit_status(show("inactive", "dead", "success"))) == State::stopped);
    auto limit = parse_unit_status(show("failed", "failed", "exit-code", 5));
    CHECK(to_state(*limit) == State::stopped);
    CHECK(gave_up(*limit));
    auto bad = parse_unit_status("Failed to connect to bus: No such file or directory\n");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message().find("no ActiveState") != std::string::npos);
}

TEST_CASE(
    "systemd unit: a unit found running is meant to run, and its main process gets the signals") {
    Rig rig;
    CHECK(rig.unit.desired() == Desired::not_started);
    rig.watch();
    CHECK(rig.unit.state() == State::running);
    CHECK(rig.unit.desired() == Desired::running);
    CHECK(rig.changes == 1);
    CHECK(rig.unit.describe() == "unit opampsupervisor.service running (pid 4242)");
    CHECK(rig.unit.forward(SIGHUP) == 4242);
    CHECK(rig.systemctl.calls.back() == std::vector<std::string>{"kill", "--kill-whom=main",
                                                                 "--signal=HUP", "--",
                                                                 "opampsupervisor.service"});
}

TEST_CASE("systemd unit: the poll turns the unit's changes into events, one read at a time") {
    Rig rig;
    rig.watch();
    rig.becomes(show("activating", "auto-restart", "exit-code", 1));
    CHECK(rig.unit.state() == State::waiting_to_restart);
    CHECK(rig.changes == 2);
    // A restart between two polls leaves the same state but a new NRestarts and pid: an event.
    rig.becomes(show("active", "running", "success", 2, 77));
    rig.becomes(show("active", "running", "success", 3, 78));
    CHECK(rig.changes == 4);
    size_t shows = rig.systemctl.count("show");
    rig.sched.advance(1s);  // nothing changed: a read, no event
    CHECK(rig.systemctl.count("show") == shows + 1);
    CHECK(rig.changes == 4);
}

TEST_CASE("systemd unit: a failed unit nothing restarts is a crash loop until it runs again") {
    Rig rig;
    rig.watch();
    rig.becomes(show("failed", "failed", "exit-code", 5));
    CHECK(rig.unit.state() == State::stopped);
    CHECK(rig.unit.desired() == Desired::gave_up);
    CHECK(rig.unit.describe() ==
          "unit opampsupervisor.service failed and will not be restarted "
          "(Result=exit-code, 5 restarts)");
    // start() clears the start limit first, or systemd would refuse the start.
    rig.systemctl.unit_text = show("active", "running", "success", 0, 99);
    REQUIRE(rig.call(&SystemdUnit::start).ok());
    REQUIRE(rig.systemctl.calls.size() >= 3);
    auto n = rig.systemctl.calls.size();
    CHECK(rig.systemctl.calls[n - 3] ==
          std::vector<std::string>{"reset-failed", "--", "opampsupervisor.service"});
    CHECK(rig.systemctl.calls[n - 2] ==
          std::vector<std::string>{"start", "--", "opampsupervisor.service"});
    CHECK(rig.unit.desired() == Desired::running);
    CHECK(rig.unit.state() == State::running);
}

TEST_CASE("systemd unit: stop answers after systemd's job, with the state read afterwards") {
    Rig rig;
    rig.watch();
    rig.systemctl.unit_text = show("inactive", "dead", "success");
    REQUIRE(rig.call(&SystemdUnit::stop).ok());
    CHECK(rig.unit.state() == State::stopped);
    CHECK(rig.unit.desired() == Desired::stopped);  // stopped on purpose: not a crash loop
    CHECK(rig.systemctl.calls.back().at(0) == "show");
    CHECK_FALSE(rig.unit.forward(SIGHUP).has_value());
}

TEST_CASE("systemd unit: a refused job fails with systemctl's own words") {
    Rig rig;
    rig.systemctl.job_exits = {5};
    rig.systemctl.job_output = "Failed to start nope.service: Unit nope.service not found.\n";
    auto st = rig.call(&SystemdUnit::start);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code() == Errc::process);
    CHECK(st.error().message() ==
          "systemctl start opampsupervisor.service: exit 5: Failed to start nope.service: Unit "
          "nope.service not found.");
}

TEST_CASE("systemd unit: every systemctl call puts -- before the unit, so a name is no option") {
    loop::FakeScheduler sched;
    FakeSystemctl systemctl{sched, show("failed", "failed", "exit-code", 5, 0), {}, {}, {}};
    const std::string hostile = "--host=attacker@evil.example.service";
    SystemdUnit unit{systemctl.runner(), sched, {hostile, 1s, 90s, 90s}};
    unit.watch();
    sched.run_pending();
    unit.start([](Status) {});  // failed: reset-failed, then start
    sched.run_pending();
    systemctl.unit_text = show("active", "running", "success", 0, 4242);
    sched.advance(1s);
    CHECK(unit.forward(SIGHUP) == 4242);
    unit.stop([](Status) {});
    sched.run_pending();
    std::set<std::string> verbs;
    for (const auto& call : systemctl.calls) {
        CAPTURE(call.size());
        REQUIRE(call.size() >= 3);
        CHECK(call.back() == hostile);
        CHECK(call[call.size() - 2] == "--");
        // The name appears once, after the `--`.
        CHECK(std::count(call.begin(), call.end(), hostile) == 1);
        verbs.insert(call.front());
    }
    CHECK(verbs == std::set<std::string>{"show", "reset-failed", "start", "kill", "stop"});
}
