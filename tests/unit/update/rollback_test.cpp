#include "update/rollback.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <optional>

#include "fake_ports.hpp"

using namespace myr;
using namespace myr::update;
using namespace myr::update::testing;
using namespace std::chrono_literals;

namespace {

struct Rig : FakeParts {
    HealthRounds rounds{
        sched, health, service, {{"collector", kCollectorHealth}}, RoundsSettings{10s, 2, 2s, 1s}};
    Rollback rollback{service, volume, rounds};
    std::optional<RollbackResult> result;
    bool switched_seen = false;

    void run(const std::string& from = "0.116.0") {
        rollback.start(
            from, [this] { switched_seen = true; }, [this](RollbackResult r) { result = r; });
        for (int i = 0; i < 200 && !result; ++i) {
            sched.run_pending();
            if (!result) sched.advance(100ms);
        }
        REQUIRE(result.has_value());
    }
};

}  // namespace

TEST_CASE("rollback: stop, switch back, start, health: switched and healthy") {
    Rig rig;
    rig.run();
    CHECK(rig.result->switched);
    CHECK(rig.result->healthy);
    CHECK(rig.result->failure.empty());
    CHECK(rig.switched_seen);
    CHECK(rig.trace == Trace{"stop", "switch_back:0.116.0", "start",
                             "get:" + kCollectorHealth.str(), "get:" + kCollectorHealth.str()});
    CHECK(rig.sched.armed_timers() == 0);
}

TEST_CASE("rollback: a stopped supervisor is not stopped again") {
    Rig rig;
    rig.service.state_ = service::State::stopped;
    rig.run();
    CHECK(rig.trace.at(0) == "switch_back:0.116.0");
    CHECK(rig.result->healthy);
}

TEST_CASE("rollback: a failed stop is only logged; the switch happens anyway") {
    Rig rig;
    rig.service.stop_result = fail(Errc::timeout, "still running");
    rig.run();
    CHECK(rig.result->switched);
    CHECK(rig.result->healthy);
}

TEST_CASE("rollback: where it ends when a step fails") {
    struct Case {
        const char* name;
        std::string from;
        std::function<void(Rig&)> fault;
        bool switched;
        std::string failure;
    };
    const Case cases[] = {
        {"nothing was active before", "", [](Rig&) {}, false, "nothing was active before"},
        {"the switch back", "0.116.0",
         [](Rig& r) { r.volume.switch_result = fail(Errc::system, "rename: EIO"); }, false,
         "switch back to 0.116.0: rename: EIO"},
        {"the start", "0.116.0",
         [](Rig& r) { r.service.start_result = fail(Errc::process, "exec: ENOENT"); }, true,
         "start 0.116.0: exec: ENOENT"},
        {"the health rounds", "0.116.0",
         [](Rig& r) { r.health.answer = [](const Url&) -> Result<int> { return 503; }; }, true,
         "health check failed: collector " + kCollectorHealth.str() + ": 503 x4"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        Rig rig;
        c.fault(rig);
        rig.run(c.from);
        CHECK(rig.result->switched == c.switched);
        CHECK(rig.switched_seen == c.switched);
        CHECK_FALSE(rig.result->healthy);
        CHECK(rig.result->failure == c.failure);
        CHECK(rig.sched.armed_timers() == 0);
    }
}

TEST_CASE("rollback: cancelled, it answers nothing and leaves no timer armed") {
    Rig rig;
    rig.health.answers.hold = true;
    rig.rollback.start(
        "0.116.0", [] {}, [&](RollbackResult r) { rig.result = r; });
    for (int i = 0; i < 50; ++i) {
        rig.sched.run_pending();
        rig.sched.advance(100ms);
    }
    REQUIRE(rig.health.answers.held.size() == 1);
    rig.rollback.cancel();
    rig.health.answers.release();
    rig.sched.advance(1min);
    rig.sched.run_pending();
    CHECK_FALSE(rig.result.has_value());
    CHECK(rig.sched.armed_timers() == 0);
}

TEST_CASE("rollback: the reason in the report and the unhealthy text say what it did") {
    RollbackResult good{true, true, ""};
    CHECK(rolled_back_reason("health check failed: x", "0.116.0", good) ==
          "health check failed: x; rolled back to 0.116.0");
    CHECK(unhealthy_after("0.116.0", good).empty());
    RollbackResult unproven{true, false, "start 0.116.0: boom"};
    CHECK(rolled_back_reason("w", "0.116.0", unproven) ==
          "w; rolled back to 0.116.0, which fails its health check too: start 0.116.0: boom");
    CHECK(unhealthy_after("0.116.0", unproven) ==
          "rolled back to 0.116.0, unhealthy: start 0.116.0: boom");
    RollbackResult stuck{false, false, "switch back to 0.116.0: EIO"};
    CHECK(rolled_back_reason("w", "0.116.0", stuck) ==
          "w; rollback failed: switch back to 0.116.0: EIO");
    CHECK(unhealthy_after("0.116.0", stuck) ==
          "rollback to 0.116.0 failed: switch back to 0.116.0: EIO");
}
