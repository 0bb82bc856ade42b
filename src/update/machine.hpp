// The installer's state machine as data (design/update.md; style.md: Mender's table, dinit's enum).
//
// States, whether each writes the journal before its work (J: op update, its name as the phase),
// and what a crash while in it leaves behind. Recovery at the next start (journal/recover.cpp)
// needs no phase for that: for op update it always points `current` back at the journal's `from`,
// which before the switch is where it still points. The phase is for people (the log, the
// "interrupted while <phase>" reason) and names the crash matrix's fault points
// (`update.<phase>.before`/`.after`, docs/volume.md):
//
// clang-format off
//   state           J  critical  work (one asynchronous step)           a crash here leaves
//   idle            -  -         none                                    nothing to do
//   checking        -  -         read the volume and last-attempt.json;  nothing to do
//                                the Sigstore bundle against the
//                                offered content hash
//   downloading     J  -         artifact into stateDir/spool/           spool partial: cleaned
//   verifying       J  -         digest against the offered hash         spool complete: cleaned
//   staging         J  -         extract into .staging/<id>/             staging: cleaned
//   preflight       J  -         --version, validate                     staging: cleaned
//   stopping        J  yes       stop the child                          child gone, current old
//   swapping        J  yes       activate the staged version             current old or new:
//                                                                        back to `from`
//   starting        J  yes       start the child                         current new: back
//   health_checking J  yes       health rounds                           current new: back
//   trial           J  -         packages.json; watch the supervisor     current new: kept, a
//                                until update.trialPeriod ends           boot counted (at
//                                                                        trialMaxBoots: back)
//   committed       -  yes       clear journal, packages.json, GC        journal gone: new kept
//   failed          -  -         clean up, last-attempt.json             journal maybe: cleaned
//   rolling_back    J  yes       stop, switch back, start, health        back to `from`
//   rolled_back     -  yes       clear journal, last-attempt.json        journal maybe: back
// clang-format on
//
// The signature moved from verifying to checking (issue 24: a refused one costs no download); the
// phase `verifying` still means "the artifact is in the spool, being checked", so a journal an
// earlier version wrote is recovered the same way.
//
// The trial (skipped when update.trialPeriod is 0) is outside the critical section: the new
// version serves, /readyz is 200 and a shutdown does not wait for it; the journal it keeps makes
// the next start count a boot and go on with it. A newer offer ends it as passed (committed, then
// the new install starts from this version).
//
// Invariants: `current` changes only in swapping and rolling_back, both journaled first, so a
// crash with `current` naming an unproven version always has a journal saying so; the journal is
// cleared only after the outcome is decided (committed, failed, rolled_back); an install never
// starts while another one runs (offers that arrive meanwhile are remembered, latest wins).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace myr::update {

enum class State {
    idle,
    checking,
    downloading,
    verifying,
    staging,
    preflight,
    stopping,
    swapping,
    starting,
    health_checking,
    trial,
    committed,
    failed,
    rolling_back,
    rolled_back,
};
inline constexpr size_t kStateCount = 15;

enum class Event {
    offer,      // an offer to work on (a new one, or the one remembered during an install)
    passed,     // checking: the policy allows it and it is not installed yet
    installed,  // checking: the offered version is already active and intact
    done,       // the state's step succeeded
    failed,     // the state's step failed (or checking refused the offer)
    cancel,     // a different offer arrived: it supersedes the one in progress
    undo,       // committed: the commit failed after a swap, which is undone
    shutdown,   // TERM or INT
};
inline constexpr size_t kEventCount = 8;

const char* to_string(State s);
const char* to_string(Event e);

// Journaled states write the journal durably on entry, before their work.
bool journaled(State s);
// The critical section (stopping … committed/rolled_back): the child is down or unproven,
// /readyz says why, and a shutdown waits for its end instead of cancelling.
bool critical(State s);
// The journal phase of a journaled state, its name ("" for the others). The installer owns this
// vocabulary; journal/ stores a phase as text and never reads meaning into it.
std::string_view phase(State s);

// The transition table. `next == from` means the event is taken note of and the state's step goes
// on (an offer remembered during an install, a shutdown waiting for the critical section): no
// entry action runs again. A pair that is not in the table is an error naming both.
[[nodiscard]] Result<State> next(State from, Event ev);

}  // namespace myr::update
