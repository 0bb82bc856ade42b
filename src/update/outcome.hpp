// Why an install ended, as codes for programs; the words for people stay next to them (RAUC's
// error domains, dinit's stopped_reason_t). Nothing in the installer branches on a message: it
// branches on these, and text is made at the edges (the report, the log, last-attempt.json).
#pragma once

#include <cstdint>
#include <string>

namespace myr::update {

// The outcome recorded in last-attempt.json. Its words ("rolled-back", "in-progress", …) are
// the file's and live only in state_files.cpp.
enum class Outcome {
    installed,
    failed,
    rolled_back,
    interrupted,  // recovery undid it at the next start
    in_progress,  // written with the first journal entry of an install
};

// The step an install failed in, or the rule that refused it.
enum class Failure {
    none,
    inspect,  // the volume could not be read
    policy,   // Checking refused the offer (check.hpp names the rule)
    room,     // Checking found no room on the volume: refused, not settled (check.hpp)
    journal,  // the journal could not be written before a step
    download,
    integrity,   // the downloaded digest is not the offered content hash
    signature,   // missing where required, or it does not verify
    stage,       // extraction into the store's staging
    preflight,   // --version or validate of the staged binary
    stop,        // stopping the supervisor before the swap
    activation,  // switching `current` to the new version
    start,       // starting the supervisor on the new version
    health,      // the health rounds did not pass in time
    commit,      // the end of a good install could not be written
    trial,       // the supervisor crash-looped on the new version during its trial
    cancelled,   // a newer offer superseded it
};
const char* to_string(Failure f);

// What a failure says about the next try of the same offer (docs/update.md, "Failure classes"):
// the class decides what happens next, and last-attempt.json keeps it under its word.
enum class FailureClass : uint8_t {
    // The package or its signature is wrong, or the new version failed on this node: the same
    // offer is quarantined (update.quarantineFor, check.cpp) and answered from the record.
    deterministic,
    // The world may change by itself (an outage, a 5xx, a stall, a deadline, a disk that filled
    // up meanwhile): Downloading fetches again within update.retryFor; once that ran out the
    // same offer sent again is fetched again.
    transient,
    // Our own policy or the node's state said no (the transport rule, an allowlist, a size limit,
    // not enough space known in advance, a refused request, no usable trusted root): ended at
    // once, not retried and not quarantined; the same offer sent again after the operator fixed
    // the node or the configuration installs.
    refused,
};
const char* to_string(FailureClass c);

// A failure with what to tell people about it.
struct Why {
    Failure code = Failure::none;
    std::string text;  // one line
    FailureClass cls = FailureClass::deterministic;
};

// Reasons go into one report field and one log line: multi-line output (a preflight's last lines)
// is joined, bytes that are not UTF-8 are replaced (U+FFFD), and a runaway message is cut on a
// code point boundary (600 bytes with the "…").
std::string one_line(std::string s);

}  // namespace myr::update
