#include "store/gc.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "core/fault.hpp"
#include "core/log.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "version/version.hpp"

namespace myr::store {
namespace {

// The active version's previousVersion, read without hashing (GC only needs the name; a marker
// that does not parse protects nothing more).
std::string previous_of(const Volume& vol, const std::string& version) {
    auto dir = fsx::open_dir_at(vol.versions_fd(), version);
    if (!dir) return "";
    auto text = fsx::read_file_at(dir->get(), "install.json", kMaxMarkerSize);
    if (!text) return "";
    auto m = parse_marker(*text);
    return m ? m->previous_version : "";
}

Status retire(const Volume& vol, const std::string& name, int serial) {
    // A fixed prefix keeps the name distinct from staging ids (hex) of in-flight activations.
    const std::string aside = "gc-" + std::to_string(serial) + "-" + name;
    MYR_TRY(fault::point("store.gc.retire.before"), "gc");
    MYR_TRY(fsx::remove_tree_at(vol.staging_fd(), aside), "gc: clear .staging/" + aside);
    MYR_TRY(fsx::rename_at(vol.versions_fd(), name, vol.staging_fd(), aside),
            "gc: move versions/" + name + " to .staging");
    MYR_TRY(fsx::fsync_dir(vol.versions_fd()), "gc");
    MYR_TRY(fault::point("store.gc.retire.after"), "gc");
    MYR_TRY(fault::point("store.gc.remove.before"), "gc");
    MYR_TRY(fsx::remove_tree_at(vol.staging_fd(), aside), "gc: remove .staging/" + aside);
    MYR_TRY(fsx::fsync_dir(vol.staging_fd()), "gc");
    MYR_TRY(fault::point("store.gc.remove.after"), "gc");
    return {};
}

}  // namespace

Result<GcResult> gc(const Volume& vol, uint32_t keep_versions,
                    const std::vector<std::string>& protect) {
    std::set<std::string> keep(protect.begin(), protect.end());
    auto cur = current_target(vol);
    if (!cur) return cur.fail("gc");
    std::string prev;
    if (!cur->empty()) {
        keep.insert(*cur);
        prev = previous_of(vol, *cur);
        if (!prev.empty()) keep.insert(prev);
    }

    auto names = fsx::list_dir(vol.versions_fd());
    if (!names) return names.fail("gc: list versions");
    GcResult out;
    std::vector<std::string> stray;
    std::vector<version::Version> others;
    for (const std::string& n : *names) {
        auto st = fsx::stat_at(vol.versions_fd(), n);
        if (!st) return st.fail("gc");
        if (!st->has_value()) continue;
        bool is_dir = S_ISDIR((*st)->st_mode);
        if (!is_dir || !version::is_canonical(n)) {
            stray.push_back(n);
        } else if (keep.count(n)) {
            out.kept.push_back(n);
        } else {
            others.push_back(*version::parse(n));
        }
    }
    // keepVersions counts the versions kept besides the active one, and the previous version (the
    // one-step return) is always among them: it uses up one of the places when it is there.
    bool prev_present = !prev.empty() && *cur != prev &&
                        std::find(out.kept.begin(), out.kept.end(), prev) != out.kept.end();
    uint32_t other_places = keep_versions;
    if (prev_present) other_places = keep_versions > 0 ? keep_versions - 1 : 0;
    std::sort(others.begin(), others.end(),
              [](const version::Version& a, const version::Version& b) {
                  return version::compare(a, b) > 0;
              });
    int serial = 0;
    for (size_t i = 0; i < others.size(); ++i) {
        std::string n = version::to_string(others[i]);
        if (i < other_places) {
            out.kept.push_back(n);
            continue;
        }
        MYR_TRY(retire(vol, n, serial++), "gc");
        out.removed.push_back(n);
    }
    for (const std::string& n : stray) {
        log::warn("volume: removing an entry of versions/ that is not a version directory",
                  {{"name", n}});
        MYR_TRY(retire(vol, n, serial++), "gc");
        out.removed.push_back(n);
    }
    if (!out.removed.empty()) {
        std::string list;
        for (const auto& n : out.removed) list += (list.empty() ? "" : ",") + n;
        log::info("volume: garbage collected", {{"removed", list}});
    }
    return out;
}

}  // namespace myr::store
