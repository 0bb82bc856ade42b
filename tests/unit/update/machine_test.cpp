#include "update/machine.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

using namespace myr;
using namespace myr::update;
using S = State;
using E = Event;

namespace {

std::vector<State> all_states() {
    std::vector<State> v;
    for (size_t i = 0; i < kStateCount; ++i) v.push_back(static_cast<State>(i));
    return v;
}
std::vector<Event> all_events() {
    std::vector<Event> v;
    for (size_t i = 0; i < kEventCount; ++i) v.push_back(static_cast<Event>(i));
    return v;
}

// The whole table written out again, independently, as the design reads: every pair not listed
// here must be refused.
const std::map<std::pair<S, E>, S>& expected() {
    static const std::map<std::pair<S, E>, S> m = [] {
        std::map<std::pair<S, E>, S> t;
        t[{S::idle, E::offer}] = S::checking;
        t[{S::idle, E::shutdown}] = S::idle;
        t[{S::checking, E::passed}] = S::downloading;
        t[{S::checking, E::installed}] = S::committed;
        t[{S::checking, E::failed}] = S::failed;
        t[{S::checking, E::cancel}] = S::failed;
        t[{S::checking, E::shutdown}] = S::idle;
        const std::pair<S, S> chain[] = {{S::downloading, S::verifying},
                                         {S::verifying, S::staging},
                                         {S::staging, S::preflight},
                                         {S::preflight, S::stopping}};
        for (auto [from, to] : chain) {
            t[{from, E::done}] = to;
            t[{from, E::failed}] = S::failed;
            t[{from, E::cancel}] = S::failed;
            t[{from, E::shutdown}] = S::idle;
        }
        const std::pair<S, S> critical_chain[] = {{S::stopping, S::swapping},
                                                  {S::swapping, S::starting},
                                                  {S::starting, S::health_checking},
                                                  {S::health_checking, S::trial}};
        for (auto [from, to] : critical_chain) {
            t[{from, E::done}] = to;
            t[{from, E::failed}] = S::rolling_back;
            t[{from, E::cancel}] = from;
            t[{from, E::shutdown}] = from;
        }
        for (S end : {S::committed, S::rolled_back}) {
            t[{end, E::done}] = S::idle;
            t[{end, E::failed}] = S::idle;
            t[{end, E::cancel}] = end;
            t[{end, E::shutdown}] = end;
        }
        t[{S::committed, E::undo}] = S::rolling_back;
        // The trial: outside the critical section, a crash loop rolls back, a newer offer ends
        // it as passed, a shutdown leaves it to the next start (the journal counts the boot).
        t[{S::trial, E::done}] = S::committed;
        t[{S::trial, E::failed}] = S::rolling_back;
        t[{S::trial, E::cancel}] = S::committed;
        t[{S::trial, E::shutdown}] = S::idle;
        t[{S::failed, E::done}] = S::idle;
        t[{S::failed, E::failed}] = S::idle;
        t[{S::failed, E::cancel}] = S::failed;
        t[{S::failed, E::shutdown}] = S::idle;
        t[{S::rolling_back, E::done}] = S::rolled_back;
        t[{S::rolling_back, E::failed}] = S::rolled_back;
        t[{S::rolling_back, E::cancel}] = S::rolling_back;
        t[{S::rolling_back, E::shutdown}] = S::rolling_back;
        return t;
    }();
    return m;
}

}  // namespace

TEST_CASE("update machine: every (state, event) pair goes where the design says, or is refused") {
    size_t known = 0, refused = 0;
    for (S s : all_states()) {
        for (E e : all_events()) {
            CAPTURE(to_string(s));
            CAPTURE(to_string(e));
            auto r = next(s, e);
            auto it = expected().find({s, e});
            if (it == expected().end()) {
                REQUIRE_FALSE(r.ok());
                CHECK(r.error().code() == Errc::invalid);
                // Loud: both names are in the message.
                CHECK(r.error().message().find(std::string("state ") + to_string(s)) !=
                      std::string::npos);
                CHECK(r.error().message().find(std::string("event ") + to_string(e)) !=
                      std::string::npos);
                ++refused;
            } else {
                REQUIRE(r.ok());
                CHECK(*r == it->second);
                ++known;
            }
        }
    }
    CHECK(known == expected().size());
    CHECK(known + refused == kStateCount * kEventCount);
}

TEST_CASE("update machine: a failure before stopping never rolls back, one after always does") {
    for (S s : {S::checking, S::downloading, S::verifying, S::staging, S::preflight}) {
        CAPTURE(to_string(s));
        CHECK(*next(s, E::failed) == S::failed);
        CHECK_FALSE(critical(s));
    }
    for (S s : {S::stopping, S::swapping, S::starting, S::health_checking}) {
        CAPTURE(to_string(s));
        CHECK(*next(s, E::failed) == S::rolling_back);
        CHECK(critical(s));
    }
}

TEST_CASE("update machine: the critical section holds a shutdown and a newer offer until its end") {
    for (S s : all_states()) {
        CAPTURE(to_string(s));
        if (!critical(s)) continue;
        CHECK(*next(s, E::shutdown) == s);
        CHECK(*next(s, E::cancel) == s);
    }
    // Outside it a shutdown drops the install without any further step on the volume.
    for (S s : {S::checking, S::downloading, S::verifying, S::staging, S::preflight, S::failed}) {
        CAPTURE(to_string(s));
        CHECK(*next(s, E::shutdown) == S::idle);
    }
}

TEST_CASE("update machine: a journaled state writes its name as the journal phase") {
    std::set<S> j = {S::downloading, S::verifying,   S::staging,  S::preflight,
                     S::stopping,    S::swapping,    S::starting, S::health_checking,
                     S::trial,       S::rolling_back};
    std::set<std::string_view> phases;
    for (S s : all_states()) {
        CAPTURE(to_string(s));
        CHECK(journaled(s) == (j.count(s) == 1));
        CHECK(phase(s).empty() == !journaled(s));
        if (!journaled(s)) continue;
        phases.insert(phase(s));
        CHECK(phase(s) == to_string(s));
    }
    CHECK(phases.size() == j.size());  // no two states share a phase
    // Journals on disk and the crash matrix's fault points (update.<phase>.before) use these.
    CHECK(phases == std::set<std::string_view>{"downloading", "verifying", "staging", "preflight",
                                               "stopping", "swapping", "starting",
                                               "health-checking", "trial", "rolling-back"});
}

TEST_CASE("update machine: the trial is outside the critical section and fails into a rollback") {
    CHECK_FALSE(critical(S::trial));
    CHECK(journaled(S::trial));
    CHECK(*next(S::trial, E::failed) == S::rolling_back);
    // Recovery reads this one phase (journal::phase::trial).
    CHECK(phase(S::trial) == "trial");
}

TEST_CASE("update machine: names are distinct") {
    std::set<std::string> names;
    for (S s : all_states()) names.insert(to_string(s));
    CHECK(names.size() == kStateCount);
    std::set<std::string> events;
    for (E e : all_events()) events.insert(to_string(e));
    CHECK(events.size() == kEventCount);
}
