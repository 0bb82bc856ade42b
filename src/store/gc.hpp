// Garbage collection of versions/ (volume.md, step 6 of an activation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "store/volume.hpp"

namespace myr::store {

struct GcResult {
    std::vector<std::string> kept;     // version directories left in place
    std::vector<std::string> removed;  // entries removed from versions/
};

// Keeps the version `current` names and `keep_versions` versions besides it: its marker's
// previousVersion always (even with 0: the one-step return must stay possible), then the newest
// others while places are left. Every name in `protect` (what a journal still names) is kept on
// top of that. Removes the rest,
// and any entry of versions/ that is not a directory with a canonical version name (a planted
// symlink or file: the entry is removed, never its target). An entry leaves versions/ in one
// rename into .staging/ before it is deleted, so a crash never leaves a half-deleted version
// directory under versions/. Fault points `store.gc.retire.before`/`.after` and
// `store.gc.remove.before`/`.after`, once per removed entry.
[[nodiscard]] Result<GcResult> gc(const Volume& vol, uint32_t keep_versions,
                                  const std::vector<std::string>& protect = {});

}  // namespace myr::store
