// Which outcome counts where (docs/metrics.md's table, runtime/metrics_feed.hpp): each row.
#include "runtime/metrics_feed.hpp"

#include <doctest/doctest.h>

#include <string>

#include "harness.hpp"
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
