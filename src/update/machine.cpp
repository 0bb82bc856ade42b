#include "update/machine.hpp"

#include <array>

namespace myr::update {
namespace {

struct Transition {
    State from;
    Event event;
    State to;
};

using S = State;
using E = Event;

// Every pair the installer can meet. Failures before the swap end in failed (`current` never
// changed); from stopping on they end in rolling_back (the child was stopped on purpose and must
// run again, on the version `current` named before). A commit that fails after a swap is undone
// the same way (undo): the journal still names the install, so the version that runs and the one
// the next start keeps must not differ; one that fails after Checking found the offer installed
// has nothing to undo (failed). A cancel or a shutdown inside the critical section stays: it is
// acted on when the section is over.
// clang-format off
constexpr Transition kTable[] = {
    // from                event          to
    {S::idle,             E::offer,      S::checking},
    {S::idle,             E::shutdown,   S::idle},

    {S::checking,         E::passed,     S::downloading},
    {S::checking,         E::installed,  S::committed},
    {S::checking,         E::failed,     S::failed},
    {S::checking,         E::cancel,     S::failed},
    {S::checking,         E::shutdown,   S::idle},

    {S::downloading,      E::done,       S::verifying},
    {S::downloading,      E::failed,     S::failed},
    {S::downloading,      E::cancel,     S::failed},
    {S::downloading,      E::shutdown,   S::idle},

    {S::verifying,        E::done,       S::staging},
    {S::verifying,        E::failed,     S::failed},
    {S::verifying,        E::cancel,     S::failed},
    {S::verifying,        E::shutdown,   S::idle},

    {S::staging,          E::done,       S::preflight},
    {S::staging,          E::failed,     S::failed},
    {S::staging,          E::cancel,     S::failed},
    {S::staging,          E::shutdown,   S::idle},

    {S::preflight,        E::done,       S::stopping},
    {S::preflight,        E::failed,     S::failed},
    {S::preflight,        E::cancel,     S::failed},
    {S::preflight,        E::shutdown,   S::idle},

    {S::stopping,         E::done,       S::swapping},
    {S::stopping,         E::failed,     S::rolling_back},
    {S::stopping,         E::cancel,     S::stopping},
    {S::stopping,         E::shutdown,   S::stopping},

    {S::swapping,         E::done,       S::starting},
    {S::swapping,         E::failed,     S::rolling_back},
    {S::swapping,         E::cancel,     S::swapping},
    {S::swapping,         E::shutdown,   S::swapping},

    {S::starting,         E::done,       S::health_checking},
    {S::starting,         E::failed,     S::rolling_back},
    {S::starting,         E::cancel,     S::starting},
    {S::starting,         E::shutdown,   S::starting},

    {S::health_checking,  E::done,       S::trial},
    {S::health_checking,  E::failed,     S::rolling_back},
    {S::health_checking,  E::cancel,     S::health_checking},
    {S::health_checking,  E::shutdown,   S::health_checking},

    {S::trial,            E::done,       S::committed},
    {S::trial,            E::failed,     S::rolling_back},
    {S::trial,            E::cancel,     S::committed},
    {S::trial,            E::shutdown,   S::idle},

    {S::committed,        E::done,       S::idle},
    {S::committed,        E::failed,     S::idle},
    {S::committed,        E::undo,       S::rolling_back},
    {S::committed,        E::cancel,     S::committed},
    {S::committed,        E::shutdown,   S::committed},

    {S::failed,           E::done,       S::idle},
    {S::failed,           E::failed,     S::idle},
    {S::failed,           E::cancel,     S::failed},
    {S::failed,           E::shutdown,   S::idle},

    {S::rolling_back,     E::done,       S::rolled_back},
    {S::rolling_back,     E::failed,     S::rolled_back},
    {S::rolling_back,     E::cancel,     S::rolling_back},
    {S::rolling_back,     E::shutdown,   S::rolling_back},

    {S::rolled_back,      E::done,       S::idle},
    {S::rolled_back,      E::failed,     S::idle},
    {S::rolled_back,      E::cancel,     S::rolled_back},
    {S::rolled_back,      E::shutdown,   S::rolled_back},
};

struct Traits {
    const char* name;  // also the journal phase of a journaled state: keep it stable
    bool journaled;
    bool critical;
};

// Indexed by State; the static_assert below keeps it in step with the enum.
constexpr std::array<Traits, kStateCount> kTraits = {{
    // name               journaled  critical
    {"idle",              false,     false},
    {"checking",          false,     false},
    {"downloading",       true,      false},
    {"verifying",         true,      false},
    {"staging",           true,      false},
    {"preflight",         true,      false},
    {"stopping",          true,      true},
    {"swapping",          true,      true},
    {"starting",          true,      true},
    {"health-checking",   true,      true},
    {"trial",             true,      false},
    {"committed",         false,     true},
    {"failed",            false,     false},
    {"rolling-back",      true,      true},
    {"rolled-back",       false,     true},
}};
// clang-format on
static_assert(static_cast<size_t>(State::rolled_back) + 1 == kStateCount);
static_assert(static_cast<size_t>(Event::shutdown) + 1 == kEventCount);

const Traits& traits(State s) {
    return kTraits[static_cast<size_t>(s)];
}

}  // namespace

const char* to_string(State s) {
    return traits(s).name;
}

const char* to_string(Event e) {
    switch (e) {
        case Event::offer:
            return "offer";
        case Event::passed:
            return "passed";
        case Event::installed:
            return "installed";
        case Event::done:
            return "done";
        case Event::failed:
            return "failed";
        case Event::cancel:
            return "cancel";
        case Event::undo:
            return "undo";
        case Event::shutdown:
            return "shutdown";
    }
    return "?";
}

bool journaled(State s) {
    return traits(s).journaled;
}

bool critical(State s) {
    return traits(s).critical;
}

std::string_view phase(State s) {
    return traits(s).journaled ? traits(s).name : "";
}

Result<State> next(State from, Event ev) {
    for (const Transition& t : kTable) {
        if (t.from == from && t.event == ev) return t.to;
    }
    return fail(Errc::invalid, std::string("update: no transition from state ") + to_string(from) +
                                   " on event " + to_string(ev));
}

}  // namespace myr::update
