// What the installer tells an observer as it goes, for counting (runtime/ turns these into
// /metrics; update/ knows nothing of the format). Every callback runs on the loop, after the
// installer's own state is updated; an empty function is not called.
#pragma once

#include <cstdint>
#include <functional>

#include "core/time.hpp"
#include "update/check.hpp"
#include "update/machine.hpp"
#include "update/outcome.hpp"

namespace myr::update {

// How an install (or an offer that Checking turned down) ended. Superseded installs (a newer
// offer) and installs a shutdown dropped are not endings: the offer is worked on again.
struct Ending {
    enum class Kind {
        installed,    // committed: the new version stays
        failed,       // ended before the swap (Checking's refusals included: see rule)
        rolled_back,  // swapped in, then the previous version restored
    };
    Kind kind = Kind::installed;
    Failure code = Failure::none;  // failed, rolled_back: the step that failed
    Rule rule = Rule::none;        // code policy or room: the Checking rule that refused it
    FailureClass cls = FailureClass::deterministic;  // failed, rolled_back
    // rolled_back after health checks: the supervisor gave up restarting (a crash loop) rather
    // than answering unhealthy until the deadline.
    bool crash_loop = false;
};

struct Observer {
    std::function<void(State)> state;
    std::function<void(const Ending&)> ended;
    // A fetch that completed: the artifact's size and how long that fetch took.
    std::function<void(uint64_t bytes, Duration took)> downloaded;
};

}  // namespace myr::update
