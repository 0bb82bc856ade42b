// Which outcome counts where (docs/metrics.md's table, runtime/metrics_feed.hpp): each row.
#include "runtime/metrics_feed.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <string>

#include "harness.hpp"
#include "loop/fake_scheduler.hpp"
#include "update/state_files.hpp"

using namespace myr::runtime;
namespace update = myr::update;
namespace metrics = myr::metrics;
using metrics::AttemptResult;
using metrics::RollbackReason;
using update::Ending;
using update::Failure;
using update::Rule;

namespace {

void expect(const Ending& e, AttemptResult result, std::optional<RollbackReason> reason) {
    Counted c = classify(e);
    CHECK(c.result == result);
    CHECK(c.reason == reason);
}

}  // namespace

TEST_CASE("metrics feed: each ending counts as docs/metrics.md says") {
    using K = Ending::Kind;
    constexpr auto D = update::FailureClass::deterministic;
    constexpr auto R = update::FailureClass::refused;
    expect({K::installed, Failure::none, Rule::none, D, false}, AttemptResult::installed, {});
    // Turned down at Checking.
    expect({K::failed, Failure::policy, Rule::quarantined, D, false}, AttemptResult::quarantined,
           {});
    expect({K::failed, Failure::policy, Rule::downgrade, R, false}, AttemptResult::refused, {});
    expect({K::failed, Failure::room, Rule::no_room, R, false}, AttemptResult::refused, {});
    // Refused later by our policy or the node (issue 35): a 4xx, the transport rule, no root.
    for (Failure f : {Failure::download, Failure::signature, Failure::journal}) {
        CAPTURE(update::to_string(f));
        expect({K::failed, f, Rule::none, R, false}, AttemptResult::refused, {});
    }
    // Ended before the swap; verify and preflight refused the new version.
    expect({K::failed, Failure::integrity, Rule::none, D, false}, AttemptResult::failed,
           RollbackReason::verify);
    expect({K::failed, Failure::signature, Rule::none, D, false}, AttemptResult::failed,
           RollbackReason::verify);
    expect({K::failed, Failure::preflight, Rule::none, D, false}, AttemptResult::failed,
           RollbackReason::preflight);
    for (Failure f : {Failure::download, Failure::stage, Failure::journal, Failure::inspect}) {
        CAPTURE(update::to_string(f));
        expect({K::failed, f, Rule::none, D, false}, AttemptResult::failed, {});
    }
    // Swapped in, then the previous version restored.
    expect({K::rolled_back, Failure::health, Rule::none, D, false}, AttemptResult::rolled_back,
           RollbackReason::health);
    expect({K::rolled_back, Failure::health, Rule::none, D, true}, AttemptResult::rolled_back,
           RollbackReason::crashloop);
    expect({K::rolled_back, Failure::trial, Rule::none, D, false}, AttemptResult::rolled_back,
           RollbackReason::trial);
    for (Failure f : {Failure::start, Failure::stop, Failure::activation, Failure::commit}) {
        CAPTURE(update::to_string(f));
        expect({K::rolled_back, f, Rule::none, D, false}, AttemptResult::rolled_back,
               RollbackReason::health);
    }
}

TEST_CASE("metrics feed: what recovery found at the start") {
    update::Attempt a;
    a.outcome = update::Outcome::rolled_back;  // update.trialMaxBoots used up
    CHECK(classify_recovered(a, true).result == AttemptResult::rolled_back);
    CHECK(classify_recovered(a, true).reason == RollbackReason::recovery);
    a.outcome = update::Outcome::interrupted;
    CHECK(classify_recovered(a, true).result == AttemptResult::rolled_back);
    CHECK(classify_recovered(a, true).reason == RollbackReason::recovery);
    CHECK(classify_recovered(a, false).result == AttemptResult::failed);
    CHECK(!classify_recovered(a, false).reason);
    for (const char* p : {"starting", "health-checking", "rolling-back"}) {
        CAPTURE(p);
        CHECK(update::swapped_in(p));
    }
    for (const char* p : {"downloading", "preflight", "stopping", "swapping"}) {
        CAPTURE(p);
        CHECK(!update::swapped_in(p));
    }
}

TEST_CASE("volume room: scrapes serve the last reading; one statvfs per period, off the loop") {
    myr::loop::FakeScheduler clock;
    std::atomic<int> calls{0};
    std::promise<void> release;
    std::shared_future<void> gate = release.get_future().share();
    VolumeRoom room(clock, "/vol", std::chrono::seconds(10),
                    [&calls, gate](const std::string& path) -> std::optional<uint64_t> {
                        int n = ++calls;
                        gate.wait();  // a statvfs hung on a network filesystem, until released
                        if (path != "/vol") return std::nullopt;
                        return 1000 + static_cast<uint64_t>(n);
                    });
    // The first scrape starts a reading and does not wait for it; while it hangs, scrapes go on
    // without the value and start no second one, however much time passes.
    CHECK_FALSE(room.get().has_value());
    CHECK(room.in_flight());
    int served = 0;
    for (int i = 0; i < 1000; ++i) served += room.get().has_value() ? 1 : 0;
    clock.advance(std::chrono::minutes(5));
    served += room.get().has_value() ? 1 : 0;
    CHECK(served == 0);
    // The one reading has begun (its thread may start after the scrapes) and hangs.
    CHECK(myr::test::wait_until([&] { return calls == 1; }, std::chrono::seconds(5)));
    CHECK(room.in_flight());
    CHECK(calls == 1);

    release.set_value();
    REQUIRE(myr::test::wait_until([&] { return !room.in_flight(); }, std::chrono::seconds(5)));
    // The reading started 5 min ago: served, and a fresh one started behind it.
    CHECK(room.get() == std::optional<uint64_t>(1001));
    REQUIRE(myr::test::wait_until([&] { return !room.in_flight(); }, std::chrono::seconds(5)));
    CHECK(calls == 2);
    CHECK(room.get() == std::optional<uint64_t>(1002));
    // Within the period every scrape serves it without a statvfs.
    for (int i = 0; i < 1000; ++i) (void)room.get();
    clock.advance(std::chrono::seconds(9));
    CHECK(room.get() == std::optional<uint64_t>(1002));
    CHECK(calls == 2);
    clock.advance(std::chrono::seconds(1));
    (void)room.get();
    REQUIRE(myr::test::wait_until([&] { return !room.in_flight(); }, std::chrono::seconds(5)));
    CHECK(calls == 3);
    CHECK(room.get() == std::optional<uint64_t>(1003));
}

TEST_CASE("volume room: a failed reading leaves the gauge out and is retried at the next scrape") {
    myr::loop::FakeScheduler clock;
    std::atomic<int> calls{0};
    VolumeRoom room(clock, "/missing", std::chrono::seconds(10),
                    [&calls](const std::string&) -> std::optional<uint64_t> {
                        return ++calls < 2 ? std::nullopt : std::optional<uint64_t>(7);
                    });
    room.refresh();
    REQUIRE(myr::test::wait_until([&] { return !room.in_flight(); }, std::chrono::seconds(5)));
    CHECK_FALSE(room.get().has_value());  // the failure, served; a retry started
    REQUIRE(myr::test::wait_until([&] { return !room.in_flight(); }, std::chrono::seconds(5)));
    CHECK(room.get() == std::optional<uint64_t>(7));
    CHECK(calls == 2);
}
