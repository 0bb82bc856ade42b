#include "update/health_rounds.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include "fake_ports.hpp"

using namespace myr;
using namespace myr::update;
using namespace myr::update::testing;
using namespace std::chrono_literals;

namespace {

const Url kSupervisor = kSupervisorHealth;
const Url kCollector = kCollectorHealth;
const Url kExtra{"http", "127.0.0.1", 9000, "/ready"};

RoundsSettings rounds(Duration timeout = 60s, uint32_t successes = 3) {
    return RoundsSettings{timeout, successes, 2s, 5s};
}

struct Rig : FakeParts {
    std::vector<HealthVerdict> verdicts;
    std::optional<MonoTime> answered_at;
    std::unique_ptr<HealthRounds> hr;

    explicit Rig(std::vector<HealthCheck> checks = {{"supervisor", kSupervisor},
                                                    {"collector", kCollector}},
                 RoundsSettings s = rounds()) {
        hr = std::make_unique<HealthRounds>(sched, health, service, std::move(checks), s);
    }
    void start() {
        hr->start([this](HealthVerdict v) {
            verdicts.push_back(std::move(v));
            answered_at = sched.now();
        });
    }
    // Moves time until the verdict (or `limit`); returns how long it took.
    Duration run(Duration limit = 10min) {
        MonoTime t0 = sched.now();
        for (Duration t = 0s; t < limit && verdicts.empty(); t += 100ms) {
            sched.run_pending();
            if (!verdicts.empty()) break;
            sched.advance(100ms);
        }
        sched.run_pending();
        REQUIRE(answered_at.has_value());
        return std::chrono::duration_cast<Duration>(*answered_at - t0);
    }
};

}  // namespace

TEST_CASE("health rounds: N rounds in a row, every probe each round, then healthy") {
    Rig rig;
    rig.start();
    rig.sched.run_pending();
    CHECK(rig.verdicts.empty());  // never from inside start(), and not before the first interval
    CHECK(rig.run() == 6s);
    REQUIRE(rig.verdicts.size() == 1);
    CHECK(rig.verdicts[0].healthy);
    CHECK(rig.health.gets == 6);
    CHECK(rig.trace[0] == "get:" + kSupervisor.str());
    CHECK(rig.trace[1] == "get:" + kCollector.str());
    CHECK(rig.sched.armed_timers() == 0);
}

TEST_CASE("health rounds: a failed round resets the count") {
    Rig rig({{"collector", kCollector}});
    std::vector<int> answers = {200, 200, 503, 200, 200};  // then 200
    size_t at = 0;
    rig.health.answer = [&](const Url&) -> Result<int> {
        return at < answers.size() ? answers[at++] : 200;
    };
    rig.start();
    CHECK(rig.run() == 12s);
    CHECK(rig.verdicts.at(0).healthy);
    CHECK(rig.health.gets == 6);
    CHECK(rig.sched.armed_timers() == 0);
}

TEST_CASE("health rounds: the first failing probe ends its round") {
    Rig rig;
    rig.health.answer = [](const Url& u) -> Result<int> {
        if (u == kSupervisor) return fail(Errc::network, "connection refused");
        return 200;
    };
    rig.start();
    rig.run();
    CHECK_FALSE(rig.verdicts.at(0).healthy);
    CHECK(rig.trace.size() == static_cast<size_t>(rig.health.gets));
    for (const std::string& t : rig.trace) CHECK(t == "get:" + kSupervisor.str());
}

TEST_CASE("health rounds: at the deadline, unhealthy with the last failure and its count") {
    Rig rig({{"collector", kCollector}}, rounds(20s));
    rig.health.answer = [](const Url&) -> Result<int> { return 503; };
    rig.start();
    CHECK(rig.run() == 20s);
    REQUIRE(rig.verdicts.size() == 1);
    CHECK_FALSE(rig.verdicts[0].healthy);
    // Rounds at 2 s … 18 s; the deadline, armed first, fires before the round due with it.
    CHECK(rig.verdicts[0].why == "collector " + kCollector.str() + ": 503 x9");
    CHECK(rig.sched.armed_timers() == 0);
}

TEST_CASE("health rounds: at the deadline without a failure, how many rounds passed") {
    Rig rig({{"collector", kCollector}}, rounds(10s, 100));
    rig.start();
    CHECK(rig.run() == 10s);
    CHECK_FALSE(rig.verdicts.at(0).healthy);
    CHECK(rig.verdicts[0].why == "4 of 100 rounds passed within " + format_duration(10s));
}

TEST_CASE("health rounds: a service that gave up ends the rounds at once") {
    Rig rig;
    rig.service.state_ = service::State::waiting_to_restart;
    rig.service.desired_ = service::Desired::gave_up;
    rig.start();
    CHECK(rig.run() == 2s);
    CHECK_FALSE(rig.verdicts.at(0).healthy);
    CHECK(rig.verdicts[0].why == std::string("supervisor not running (") +
                                     service::to_string(service::State::waiting_to_restart) +
                                     ") x1");
    CHECK(rig.health.gets == 0);
    CHECK(rig.sched.armed_timers() == 0);
}

TEST_CASE("health rounds: a service not running fails the round without a probe") {
    Rig rig({{"collector", kCollector}}, rounds(7s));
    rig.service.state_ = service::State::waiting_to_restart;
    rig.start();
    rig.run();
    CHECK(rig.health.gets == 0);
    CHECK(rig.verdicts.at(0).why.find(") x3") != std::string::npos);
}

TEST_CASE("health rounds: a list of 0, 1, 2 or 3 probes") {
    const std::vector<HealthCheck> all = {
        {"supervisor", kSupervisor}, {"collector", kCollector}, {"extra", kExtra}};
    for (size_t n = 0; n <= all.size(); ++n) {
        CAPTURE(n);
        Rig rig(std::vector<HealthCheck>(all.begin(), all.begin() + static_cast<long>(n)));
        rig.start();
        CHECK(rig.run() == 6s);
        CHECK(rig.verdicts.at(0).healthy);
        CHECK(rig.health.gets == static_cast<int>(3 * n));
        CHECK(rig.sched.armed_timers() == 0);
    }
}

TEST_CASE("health rounds: stop() cancels: no verdict afterwards, no timer armed") {
    Rig rig;
    rig.health.answers.hold = true;
    rig.start();
    rig.sched.advance(2s);
    rig.sched.run_pending();
    REQUIRE(rig.health.answers.held.size() == 1);
    rig.hr->stop();
    CHECK(rig.health.answers.cancelled() == 1);
    CHECK(rig.sched.armed_timers() == 0);
    rig.health.answers.release();
    rig.sched.advance(5min);
    rig.sched.run_pending();
    CHECK(rig.verdicts.empty());
}

TEST_CASE("health rounds: started again from its own verdict, it runs afresh") {
    Rig rig({{"collector", kCollector}}, rounds(4s, 1));
    int bad = 1;  // the first verdict fails at its deadline, the next one passes
    rig.health.answer = [&](const Url&) -> Result<int> { return bad ? 503 : 200; };
    rig.hr->start([&](HealthVerdict v) {
        CHECK_FALSE(v.healthy);
        bad = 0;
        rig.start();
    });
    rig.run();
    REQUIRE(rig.verdicts.size() == 1);
    CHECK(rig.verdicts[0].healthy);
    CHECK(rig.sched.armed_timers() == 0);
}
