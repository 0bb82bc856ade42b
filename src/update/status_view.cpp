#include "update/status_view.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "statedir/state_dir.hpp"
#include "update/state_files.hpp"

namespace myr::update {
namespace {

// A volume or spool a hostile hand filled with entries still gives a short answer: the first
// kMaxEntries names (sorted) are shown, the rest counted as a problem.
constexpr size_t kMaxEntries = 64;

// Keeps the first kMaxEntries of `names`; says how many were dropped.
void cap(std::vector<std::string>& names, const std::string& where, StatusView& v) {
    if (names.size() <= kMaxEntries) return;
    v.problems.push_back(where + ": " + std::to_string(names.size()) + " entries, the first " +
                         std::to_string(kMaxEntries) + " shown");
    names.resize(kMaxEntries);
}

void read_versions(const store::Volume& vol, StatusView& v) {
    auto names = fsx::list_dir(vol.versions_fd());
    if (!names) {
        v.problems.push_back(names.error().context("list " + vol.path() + "/versions").message());
        return;
    }
    cap(*names, vol.path() + "/versions", v);
    for (const std::string& name : *names) {
        VersionFacts f{name, std::nullopt, {}};
        auto marker = store::check_present(vol, name);
        if (marker) {
            f.marker = std::move(*marker);
        } else {
            f.problem = marker.error().message();
            v.problems.push_back(vol.path() + "/versions/" + name + ": not intact: " + f.problem);
        }
        v.versions.push_back(std::move(f));
    }
}

// `current` as Checking reads it, but without hashing the binary (read_versions says whether the
// directory it names is intact).
void read_current(const store::Volume& vol, StatusView& v) {
    auto st = fsx::stat_at(vol.root_fd(), "current");
    if (!st) {
        v.problems.push_back(st.error().context("stat " + vol.path() + "/current").message());
        return;
    }
    if (!st->has_value()) return;
    auto target = store::current_target(vol);
    if (!target) {
        v.problems.push_back(target.error().context(vol.path()).message());
        return;
    }
    v.current = *target;
    v.current_state = store::Active::State::broken;
    if (v.current.empty()) {
        v.current_problem = "current is not a symlink to versions/<version>";
    } else if (auto marker = store::check_present(vol, v.current); !marker) {
        v.current_problem = marker.error().message();
    } else {
        v.current_state = store::Active::State::intact;
        v.previous = marker->previous_version;
    }
    if (!v.current_problem.empty()) {
        v.problems.push_back(vol.path() + "/current: " + v.current_problem);
    }
}

void read_spool(const statedir::StateDir& dir, StatusView& v) {
    auto spool = fsx::open_dir_at(dir.fd(), statedir::entry::spool);
    if (!spool) {
        // Absent until the first download.
        if (spool.error().sys_errno() != ENOENT) {
            v.problems.push_back(
                spool.error().context("open " + dir.path_of(statedir::entry::spool)).message());
        }
        return;
    }
    auto names = fsx::list_dir(spool->get());
    if (!names) {
        v.problems.push_back(
            names.error().context("list " + dir.path_of(statedir::entry::spool)).message());
        return;
    }
    cap(*names, dir.path_of(statedir::entry::spool), v);
    for (const std::string& name : *names) {
        // A file being replaced atomically (the part's metadata): not a download of its own.
        if (fsx::is_temp_name(name)) continue;
        auto st = fsx::stat_at(spool->get(), name);
        // Gone between the listing and the stat: the download moved on.
        if (!st || !st->has_value()) continue;
        v.spool.push_back({name, static_cast<uint64_t>((*st)->st_size)});
    }
}

void read_state(const statedir::StateDir& dir, StatusView& v) {
    auto journal = journal::Journal(dir).load();
    if (!journal) {
        v.problems.push_back(journal.error().message());
    } else {
        v.journal = std::move(*journal);
        if (v.journal.kind == journal::Loaded::Kind::corrupt) {
            v.problems.push_back(
                dir.path_of(statedir::entry::journal) +
                ": unreadable (recovery moves it aside at the next start): " + v.journal.reason);
        }
    }
    if (auto a = load_attempt(dir); !a) {
        v.problems.push_back(a.error().message());
    } else {
        v.last_attempt = std::move(*a);
    }
    if (auto p = load_installed(dir); !p) {
        v.problems.push_back(p.error().message());
    } else {
        v.last_offer = std::move(*p);
    }
    read_spool(dir, v);
}

// What a volume or state directory that cannot be opened means to the person who asked.
std::string unopened(const char* key, const Error& e) {
    std::string why = std::string(key) + ": " + e.message();
    if (e.sys_errno() == ENOENT) why += " (nothing there yet: the updater creates it at its start)";
    return why;
}

}  // namespace

bool StatusView::on_trial() const {
    return journal.kind == journal::Loaded::Kind::ok && journal.record.op == journal::Op::update &&
           journal.record.phase == journal::phase::trial;
}

bool StatusView::quarantined() const {
    if (!last_attempt || !quarantines(*last_attempt)) return false;
    auto end = quarantine_end(*last_attempt, in.quarantine_for);
    return !end || in.now < *end;
}

StatusView read_status(const StatusInputs& in) {
    StatusView v;
    v.in = in;
    auto vol = store::Volume::open_read_only(in.install_dir, in.binary);
    if (!vol) {
        v.volume_problem = unopened("collector.installDir", vol.error());
        v.problems.push_back(v.volume_problem);
    } else {
        read_versions(*vol, v);
        read_current(*vol, v);
    }
    auto dir = statedir::StateDir::open_existing(in.state_dir);
    if (!dir) {
        v.state_problem = unopened("collector.stateDir", dir.error());
        v.problems.push_back(v.state_problem);
    } else {
        read_state(*dir, v);
    }
    return v;
}

}  // namespace myr::update
