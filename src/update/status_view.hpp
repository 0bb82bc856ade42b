// `myriarch-updater status` (docs/status.md): what the volume and the state directory say, read
// beside a running PID 1 by the readers that PID 1 itself uses (store::, journal::, the state
// files), and rendered for a person or as JSON (docs/status.schema.json).
//
// Reading only: the volume and the state directory are opened without creating anything, no lock
// is taken, nothing is written, and no symlink inside either is followed. Every file PID 1 changes
// is replaced by rename, so each is read whole, old or new, never half; the files are read one
// after another, so a view taken while an install moves on may mix two moments (the journal of a
// step and the spool of the next): each part is true of the instant it was read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "journal/journal.hpp"
#include "store/volume.hpp"
#include "update/ports.hpp"

namespace myr::update {

// One entry of versions/: the marker when the directory reads as intact but for the binary's hash
// (store::check_present), else why not.
struct VersionFacts {
    std::string name;
    std::optional<store::Marker> marker;
    std::string problem;
};

// A file of the download spool: an artifact being fetched (`<sha256>.part`) or kept for a resume.
struct SpoolFile {
    std::string name;
    uint64_t bytes = 0;
};

// What status is asked to read (from updater.yaml) and when.
struct StatusInputs {
    std::string install_dir, state_dir, binary;
    Duration quarantine_for{};
    uint32_t trial_max_boots = 0;
    WallTime now{};
};

struct StatusView {
    StatusInputs in;
    // The volume. `volume_problem`: it could not be opened (nothing else about it is known).
    std::string volume_problem;
    std::vector<VersionFacts> versions;
    store::Active::State current_state = store::Active::State::none;
    std::string current;          // the version `current` names
    std::string current_problem;  // when broken
    std::string previous;         // the active marker's previousVersion
    // The state directory. `state_problem`: it could not be opened.
    std::string state_problem;
    journal::Loaded journal;
    std::optional<Attempt> last_attempt;
    std::optional<Installed> last_offer;  // packages.json
    std::vector<SpoolFile> spool;
    // Set by the caller (verify/ is not this module's): the newest validity start among the
    // trusted root's keys and CAs, or why the file could not be read.
    std::optional<int64_t> trusted_root_start;
    std::string trusted_root_file, trusted_root_problem;
    // What could not be read, one line each (the exit code is 1 when there is any).
    std::vector<std::string> problems;

    // A trial in progress: the journal of an update in phase "trial".
    bool on_trial() const;
    // last_attempt quarantines its package hash now (update.quarantineFor not yet over).
    bool quarantined() const;
};

// Reads everything it can; a part that cannot be read is a problem, the rest is still read.
StatusView read_status(const StatusInputs& in);

// For a person, at most 100 columns a line (free text is wrapped).
std::string render_status_text(const StatusView& v);
// The JSON of docs/status.schema.json ("schemaVersion": 1), one line.
std::string render_status_json(const StatusView& v);

}  // namespace myr::update
