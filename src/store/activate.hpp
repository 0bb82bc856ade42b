// Activating a version (volume.md, "Activating a version"): staging with hashing while copying,
// fsync, hash check, marker, rename into versions/, `current` switch, directory fsyncs.
//
// What a crash at each point leaves behind, and why recovery can always clean up:
// clang-format off
//   crash                     on the volume                                     `current`
//   before/while staging      .staging/<id>/ (partial, maybe a temp file)       unchanged
//   after the marker          .staging/<id>/ complete                           unchanged
//   after the rename          versions/<v> complete and intact                  unchanged
//   after an exchange         versions/<v> new and intact, the old one in       unchanged
//                             .staging/
//   after the switch          current -> versions/<v>                           switched (the
//                                                                               caller journals)
// clang-format on
// Nothing outside .staging/ is ever partial: versions/<v> appears by one rename of a complete,
// fsynced directory, and `current` changes by one rename of a symlink.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/fd.hpp"
#include "core/result.hpp"
#include "store/marker.hpp"
#include "store/volume.hpp"

namespace myr::store {

// One in-flight activation directory `.staging/<id>/`.
struct Staging {
    std::string id;
    UniqueFd fd;
};

// Creates `.staging/<random id>/` durably. Fault points `store.stage.mkdir.before`/`.after`.
[[nodiscard]] Result<Staging> create_staging(const Volume& vol);
// `<installDir>/.staging/<id>`: the directory of one activation in flight.
std::string staging_dir_path(const Volume& vol, const std::string& id);
// `<installDir>/.staging/<id>/<binary>`: where the installer extracts to and runs the preflight.
std::string staged_binary_path(const Volume& vol, const std::string& id);
// Removes `.staging/<id>` and everything in it. Fault points `store.stage.discard.before`/`.after`.
[[nodiscard]] Status discard_staging(const Volume& vol, const std::string& id);
// Removes every entry under `.staging/` (recovery: nothing is in flight at start).
[[nodiscard]] Result<int> clear_staging(const Volume& vol);

// The side effects of an activation, announced to the caller before each happens so that it can
// journal the phase durably first.
enum class Step { stage, install, switch_current };
const char* to_string(Step s);
using StepHook = std::function<Status(Step)>;

struct ActivateRequest {
    std::string version;  // canonical; names versions/<version>
    Source source = Source::image;
    // Exactly one of: a file to copy from its start (the image binary), or the id of a staging
    // directory that already holds `<binary>` (an extracted update).
    int image_fd = -1;
    std::string staged_id;
    // Lower-case hex; the copy or staged file must match it. May be empty with `image_fd`: the
    // bytes copied then are the version, and an existing directory of it is never reused (seeding
    // hashes the image beforehand only when such a directory exists, to reuse it).
    std::string expected_sha256;
    // The caller's active() from just before, when it has one: the active binary is then not
    // hashed a second time. The store has a single writer, so nothing changed in between.
    const Active* known_active = nullptr;
    // previousVersion for the marker; by default the version active now (when intact and different
    // from `version`; for a re-activation of the same version, that marker's previousVersion).
    std::optional<std::string> previous_version;
};

struct Activation {
    Marker marker;           // as written (or kept) in versions/<version>/install.json
    bool reused = false;     // an intact directory with the same hash was already there: no copy
    std::string was_active;  // the version `current` named before ("" when none)
};

// Activates a version. An intact versions/<version> with the expected hash is reused (its marker
// rewritten when source or previousVersion change) and the image is then not copied at all. A
// directory of that version that is broken or holds other bytes is exchanged atomically for the new
// one. On failure before the switch, `current` is unchanged and the staging directory is removed.
[[nodiscard]] Result<Activation> activate(const Volume& vol, const ActivateRequest& req,
                                          const StepHook& hook = {});

}  // namespace myr::store

namespace myr::store {

// The version a rollback returns to: the previousVersion of the active marker. The marker is read
// without hashing the active binary (a rollback is wanted precisely when the active one is bad).
[[nodiscard]] Result<std::string> rollback_target(const Volume& vol);

// The switch of journal::rollback (which journals around it): points `current` at the active
// marker's previousVersion, which must be intact. The installer switches back with
// switch_current to the version it journaled as `from` instead. Returns that version. Fault points
// `store.rollback.switch.before`/`.after`.
[[nodiscard]] Result<std::string> rollback(const Volume& vol);

}  // namespace myr::store
