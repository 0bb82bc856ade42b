// The crash matrix of volume.md: every operation on the volume is killed at every fault point it
// passes (each pass of each point, enumerated with MYRIARCH_FAULT_TRACE), the volume is restarted
// (recovery, then seeding, as the container command does) and judged by the test's own oracle
// (volume_oracle.hpp: syscalls, json-c, its own SHA-256), never by the driver's `state`, which
// links the code under test. What is judged:
// - the four invariants, with the supervisor storage compared entry by entry; the scenarios plant
//   links from the volume into that storage where recovery removes entries, so code that followed
//   a link instead of removing it would change the storage;
// - the exact end state of each case: which version and which bytes are active, decided by where
//   the crash fell relative to the operation's commit (not by whether a journal happened to be
//   left), and which versions must still be on disk;
// - the fault points: every point the product passes is in docs/volume.md's list, and every
//   listed point is crashed by some case (less the allow-list below, each entry with its reason).
// For one crash point per scenario the restart itself is also killed at each of its points.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "fault_trace.hpp"
#include "volume_oracle.hpp"
#include "volume_support.hpp"

using namespace myr::test;

namespace {

using Releases = std::map<std::string, std::string>;  // key -> release file
using Args = std::vector<std::string>;
using Trace = std::vector<FaultPass>;

// Documented points the default matrix is allowed not to crash, each with the reason. Empty:
// every documented point has a scenario that creates its preconditions. An entry that is crashed
// after all, or that is not documented, fails the test (the list cannot go stale).
const std::map<std::string, std::string> kNotCrashed = {};

// A version and the release whose bytes it must hold.
struct End {
    std::string version;
    std::string release;  // key in Releases
};

// Where an operation takes effect, found in its own trace: the first `effect` point after the
// first (or last) pass of the step point `anchor`. A point is passed before its side effect, so a
// crash at or before that index must leave the operation undone (`before`), and a crash after it
// must end at the scenario's `end`.
struct Commit {
    std::string anchor;
    bool last_anchor = false;
    std::string effect;
    End before;
};

struct Scenario {
    std::string name{};
    std::function<void(Volume&, Releases&)> setup{};  // builds the initial volume, no faults
    std::function<Args(const Releases&)> op{};
    std::function<Args(const Releases&)> start{};
    End end{};                          // what the restart must end at (after the commit, if any)
    std::optional<Commit> commit{};     // none: every crash ends at `end`
    std::set<std::string> keep{};       // versions that must stay intact on disk
    std::set<std::string> broken_ok{};  // version directories the setup broke on purpose
    bool journal_aside = false;         // the setup's journal.json must end up moved aside, as is
    bool second_level = true;           // also crash the restart after a journaled crash point
};

struct Violation {
    std::string label, what;
};

struct Totals {
    std::set<std::string> traced;   // every point any run passed
    std::set<std::string> crashed;  // every point a case crashed at
    int cases = 0;
    int runs = 0;
    std::vector<Violation> violations;
};

void must(const RunResult& r, const std::string& what) {
    INFO(what << "\nstdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 0);
}

// The table between the fault-point markers of docs/volume.md: every name in backquotes in the
// first column of a row.
std::set<std::string> documented_points() {
    std::string doc = read_file(source_dir() + "/docs/volume.md");
    size_t from = doc.find("<!-- fault points: begin");
    size_t to = doc.find("<!-- fault points: end");
    REQUIRE_MESSAGE((from != std::string::npos && to != std::string::npos && from < to),
                    "docs/volume.md: the fault point list markers are missing");
    std::istringstream section(doc.substr(from, to - from));
    static const std::regex name("`([a-z_]+(?:\\.[a-z_]+)+)`");
    std::set<std::string> out;
    std::string line;
    while (std::getline(section, line)) {
        if (line.rfind("| ", 0) != 0) continue;
        std::string first = line.substr(2, line.find('|', 2) - 2);
        for (std::sregex_iterator it(first.begin(), first.end(), name), end; it != end; ++it) {
            out.insert((*it)[1]);
        }
    }
    REQUIRE(!out.empty());
    return out;
}

// Every pass of every point, in order. Unless MYRIARCH_VOLUME_CRASH_FULL=1, the file-level points
// of fsx (`fsx.write` once per 128 KiB chunk, …) are thinned to the first pass of each kind within
// each store/journal step: later passes of the same kind in the same step leave the same state
// behind, and the full matrix takes minutes on a loaded machine. A kept pass keeps its pass number
// counted over the whole trace, thinned passes included, as MYRIARCH_FAULT counts them.
Trace read_trace(const std::string& path, Totals& t) {
    const char* full_env = std::getenv("MYRIARCH_VOLUME_CRASH_FULL");
    bool full = full_env && std::string(full_env) == "1";
    Trace out;
    std::set<std::string> seen_in_step;
    for (FaultPass& p : read_fault_trace(path)) {
        t.traced.insert(p.point);
        bool file_level = p.point.rfind("fsx.", 0) == 0;
        if (!file_level) {
            seen_in_step.clear();
        } else if (!full && !seen_in_step.insert(p.point).second) {
            continue;
        }
        out.push_back(std::move(p));
    }
    return out;
}

// The index of the scenario's commit in `trace`, or nullopt when it has none.
std::optional<size_t> commit_index(const Scenario& s, const Trace& trace) {
    if (!s.commit) return std::nullopt;
    std::optional<size_t> anchor;
    for (size_t i = 0; i < trace.size(); ++i) {
        if (trace[i].point != s.commit->anchor) continue;
        anchor = i;
        if (!s.commit->last_anchor) break;
    }
    REQUIRE_MESSAGE(anchor.has_value(), s.name << ": the trace never passes " << s.commit->anchor);
    for (size_t i = *anchor + 1; i < trace.size(); ++i) {
        if (trace[i].point == s.commit->effect) return i;
    }
    FAIL(s.name << ": no " << s.commit->effect << " after " << s.commit->anchor);
    return std::nullopt;
}

// Everything a case starts from: the prepared volume (cloned for every case; the releases stay in
// its directory), the releases' hashes, the supervisor storage and the journal as set up.
struct Prepared {
    Volume tmpl;
    Releases rel;
    std::map<std::string, std::string> sha;  // release key -> SHA-256 (oracle's)
    oracle::Tree supervisor;
    std::string journal;  // fingerprint of journal.json after setup ("" when none)
};

void prepare(const Scenario& s, Prepared& p) {
    s.setup(p.tmpl, p.rel);
    for (const auto& [key, path] : p.rel) p.sha[key] = oracle::sha256_file_hex(path);
    p.supervisor = oracle::snapshot(p.tmpl.supervisor);
    p.journal = oracle::fingerprint(p.tmpl.state_dir + "/journal.json");
}

// Restarts after a crash and judges the volume; appends violations under `label`.
void restart_and_check(const Scenario& s, const Prepared& p, const Volume& vol, const End& want,
                       const std::string& label, Totals& t) {
    RunResult r = vol.driver(s.start(p.rel));
    ++t.runs;
    std::vector<std::string> bad;
    if (r.exit_code != 0)
        bad.push_back("restart: exit " + std::to_string(r.exit_code) + ": " + r.err);
    Json reported(r.out);
    oracle::Expected e;
    e.version = want.version;
    e.sha256 = p.sha.at(want.release);
    e.reported = reported.str("seed.activeVersion");
    e.keep = s.keep;
    e.broken_ok = s.broken_ok;
    if (s.journal_aside) e.aside = p.journal;
    for (const std::string& v : oracle::violations({vol.install, vol.state_dir}, e)) {
        bad.push_back(v);
    }
    for (const std::string& d :
         oracle::differences(p.supervisor, oracle::snapshot(vol.supervisor), "supervisor")) {
        bad.push_back("3: " + d);
    }
    if (bad.empty()) return;
    // The driver's own view, asked for only now (it hashes every version: costly over a thousand
    // restarts) to help reading the failure; it decides nothing.
    bad.back() += "\n    driver's state (not judged): " + vol.state();
    for (const std::string& b : bad) t.violations.push_back({label, b});
}

void run_scenario(const Scenario& s, Totals& t) {
    Prepared p;
    prepare(s, p);
    // Enumerate the points the operation passes.
    Trace trace;
    {
        Volume vol;
        vol.clone_from(p.tmpl);
        std::string trace_file = vol.tmp / "trace";
        RunResult r = vol.driver(s.op(p.rel), {{"MYRIARCH_FAULT_TRACE", trace_file}});
        ++t.runs;
        INFO(s.name << ": " << r.err);
        REQUIRE(r.exit_code == 0);
        trace = read_trace(trace_file, t);
        REQUIRE(!trace.empty());
    }
    std::optional<size_t> commit = commit_index(s, trace);
    auto expected = [&](size_t crash_index) {
        return commit && crash_index <= *commit ? s.commit->before : s.end;
    };

    std::optional<size_t> deep;  // a crash point that leaves a journal, for the second level
    for (size_t i = 0; i < trace.size(); ++i) {
        Volume vol;
        vol.clone_from(p.tmpl);
        std::string label = s.name + " @ " + trace[i].point + "#" + std::to_string(trace[i].pass);
        RunResult r = vol.driver(s.op(p.rel), {{"MYRIARCH_FAULT", crash_at(trace[i])}});
        ++t.runs;
        ++t.cases;
        if (r.exit_code != 137) {
            t.violations.push_back({label, "crash: did not crash (exit " +
                                               std::to_string(r.exit_code) + "): " + r.err});
            continue;
        }
        t.crashed.insert(trace[i].point);
        if (exists(vol.state_dir + "/journal.json")) deep = i;
        restart_and_check(s, p, vol, expected(i), label, t);
    }
    if (!s.second_level || !deep) return;

    // Second level: kill the restart (recovery and seeding) at each of its points.
    const std::string first = crash_at(trace[*deep]);
    Trace restart_trace;
    {
        Volume vol;
        vol.clone_from(p.tmpl);
        RunResult r = vol.driver(s.op(p.rel), {{"MYRIARCH_FAULT", first}});
        ++t.runs;
        REQUIRE(r.exit_code == 137);
        std::string trace_file = vol.tmp / "trace";
        r = vol.driver(s.start(p.rel), {{"MYRIARCH_FAULT_TRACE", trace_file}});
        ++t.runs;
        REQUIRE(r.exit_code == 0);
        restart_trace = read_trace(trace_file, t);
    }
    for (const FaultPass& at : restart_trace) {
        Volume vol;
        vol.clone_from(p.tmpl);
        std::string label = s.name + " @ " + trace[*deep].point + "#" +
                            std::to_string(trace[*deep].pass) + " then restart @ " + at.point +
                            "#" + std::to_string(at.pass);
        RunResult r = vol.driver(s.op(p.rel), {{"MYRIARCH_FAULT", first}});
        r = vol.driver(s.start(p.rel), {{"MYRIARCH_FAULT", crash_at(at)}});
        t.runs += 2;
        ++t.cases;
        if (r.exit_code != 137) {
            t.violations.push_back(
                {label, "crash: did not crash (exit " + std::to_string(r.exit_code) + ")"});
            continue;
        }
        t.crashed.insert(at.point);
        restart_and_check(s, p, vol, expected(*deep), label, t);
    }
}

Args seed_args(const std::string& image, const std::string& policy) {
    return {"seed", "--image", image, "--policy", policy};
}
Args start_args(const std::string& image, const std::string& policy) {
    return {"start", "--image", image, "--policy", policy};
}

void seed_with(Volume& v, const std::string& image, const std::string& policy = "newest") {
    must(v.driver(seed_args(image, policy)), "setup seed " + image);
}
void update_to(Volume& v, const std::string& file, const std::string& version) {
    must(v.driver({"activate", "--file", file, "--version", version, "--keep", "9"}),
         "setup activate " + version);
}

// The relative path from `dir` (below the volume's TempDir) up to the supervisor storage. Links
// are relative so that they still point into each case's own copy after clone_from.
std::string to_storage(const Volume& v, const std::string& dir) {
    std::string rel = dir.substr(v.tmp.path().size() + 1);
    std::string up;
    for (char c : rel + "/") {
        if (c == '/') up += "../";
    }
    return up + "supervisor";
}

void symlink_or_fail(const std::string& target, const std::string& path) {
    INFO(path << " -> " << target);
    REQUIRE(::symlink(target.c_str(), path.c_str()) == 0);
}

// Corrupt inputs are good ones with flipped bits (RAUC's flip_bits_filename).
void flip_byte(const std::string& path, size_t offset) {
    std::string bytes = read_file(path);
    REQUIRE(offset < bytes.size());
    bytes[offset] = static_cast<char>(bytes[offset] ^ 0xff);
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    write_file(path, bytes, st.st_mode & 07777);
}

// A journal in the format volume.md documents, written by the test (not by the code under test).
std::string journal_text(const std::string& op, const std::string& phase, const std::string& from,
                         const std::string& to) {
    return R"({"id":"3f0c2a9e-8d1b-4c6e-9a7f-2b5d8e1c4a60","op":")" + op + R"(","phase":")" +
           phase + R"(","from":")" + from + R"(","to":")" + to +
           R"(","startedAt":"2026-12-01T06:00:00.000Z","attempt":1})" + "\n";
}

// Every scenario: a link into the supervisor storage inside `.staging/`, which every recovery
// empties. Removing the entry is right; entering it would change the storage (invariant 3).
void plant_staging_link(Volume& v) {
    std::string staging = v.install + "/.staging";
    REQUIRE(run({"mkdir", "-p", staging}).exit_code == 0);
    symlink_or_fail(to_storage(v, staging), staging + "/zz-storage");
}

// An update from 0.116.0 to 0.117.0 cut short after its switch (phase health-checking), as a
// power loss would leave it: `current` at 0.117.0, the journal naming both versions.
void interrupted_update(Volume& v, Releases& r) {
    r["A"] = v.release("0.115.0");
    r["B"] = v.release("0.116.0");
    r["C"] = v.release("0.117.0");
    seed_with(v, r["B"]);
    update_to(v, r["C"], "0.117.0");
    write_file(v.state_dir + "/journal.json",
               journal_text("update", "health-checking", "0.116.0", "0.117.0"), 0600);
}

// Everything recovery of an interrupted update removes: foreign files in the spool, temp files the
// fsx helpers leave (`.<name>.tmp-XXXXXX`) in each directory they write, a half-filled staging
// directory, and links into the supervisor storage among them.
void plant_leftovers(Volume& v) {
    const std::string spool = v.state_dir + "/spool";
    REQUIRE(run({"mkdir", "-p", spool + "/extract"}).exit_code == 0);
    write_file(spool + "/otelcol-0.117.0.tar.gz.part", std::string(4096, 'z'));
    write_file(spool + "/extract/otelcol-contrib", "partial");
    symlink_or_fail(to_storage(v, spool), spool + "/zz-storage");
    symlink_or_fail("versions/0.117.0", v.install + "/.current.tmp-Ab3dE9");
    symlink_or_fail(to_storage(v, v.install) + "/persistent_state.yaml",
                    v.install + "/.persistent_state.yaml.tmp-St0rag");
    write_file(v.state_dir + "/.journal.json.tmp-Xy12Zw", R"({"id":"3f0c)", 0600);
    write_file(v.install + "/versions/0.117.0/.install.json.tmp-Qw34Er", "{", 0644);
    const std::string staged = v.install + "/.staging/0123456789abcdef";
    REQUIRE(run({"mkdir", "-p", staged}).exit_code == 0);
    write_file(staged + "/.otelcol-contrib.tmp-Zx56Cv", std::string(8192, 'x'), 0600);
}

std::vector<Scenario> scenarios() {
    std::vector<Scenario> all;
    all.push_back({.name = "seed into an empty volume",
                   .setup = [](Volume& v, Releases& r) { r["B"] = v.release("0.116.0"); },
                   .op = [](const Releases& r) { return seed_args(r.at("B"), "newest"); },
                   .start = [](const Releases& r) { return start_args(r.at("B"), "newest"); },
                   .end = {"0.116.0", "B"}});
    all.push_back({.name = "seed newest over an older image version",
                   .setup =
                       [](Volume& v, Releases& r) {
                           r["A"] = v.release("0.115.0");
                           r["B"] = v.release("0.116.0");
                           seed_with(v, r["A"]);
                       },
                   .op = [](const Releases& r) { return seed_args(r.at("B"), "newest"); },
                   .start = [](const Releases& r) { return start_args(r.at("B"), "newest"); },
                   .end = {"0.116.0", "B"},
                   .keep = {"0.115.0"}});
    all.push_back({.name = "seed policy image back over an update (reuse, marker rewrite)",
                   .setup =
                       [](Volume& v, Releases& r) {
                           r["B"] = v.release("0.116.0");
                           r["C"] = v.release("0.117.0");
                           seed_with(v, r["B"]);
                           update_to(v, r["C"], "0.117.0");
                       },
                   .op = [](const Releases& r) { return seed_args(r.at("B"), "image"); },
                   .start = [](const Releases& r) { return start_args(r.at("B"), "image"); },
                   .end = {"0.116.0", "B"},
                   .keep = {"0.117.0"}});
    all.push_back({.name = "seed replaces a broken active version of the same number (exchange)",
                   .setup =
                       [](Volume& v, Releases& r) {
                           r["A"] = v.release("0.115.0");
                           r["A2"] = v.release("0.115.0", "health=ok");
                           seed_with(v, r["A"]);
                           std::string bin = v.install + "/versions/0.115.0/otelcol-contrib";
                           write_file(bin, read_file(bin) + "x", 0755);
                       },
                   .op = [](const Releases& r) { return seed_args(r.at("A2"), "newest"); },
                   .start = [](const Releases& r) { return start_args(r.at("A2"), "newest"); },
                   .end = {"0.115.0", "A2"}});
    all.push_back({.name = "seed policy image with other bytes under the same version",
                   .setup =
                       [](Volume& v, Releases& r) {
                           r["B"] = v.release("0.116.0");
                           r["B2"] = v.release("0.116.0", "health=fail");
                           seed_with(v, r["B"], "image");
                       },
                   .op = [](const Releases& r) { return seed_args(r.at("B2"), "image"); },
                   .start = [](const Releases& r) { return start_args(r.at("B2"), "image"); },
                   .end = {"0.116.0", "B2"}});
    all.push_back({.name = "seed over a directory planted as current (cleared, not entered)",
                   .setup =
                       [](Volume& v, Releases& r) {
                           r["A"] = v.release("0.115.0");
                           seed_with(v, r["A"]);
                           std::string cur = v.install + "/current";
                           REQUIRE(::unlink(cur.c_str()) == 0);
                           REQUIRE(::mkdir(cur.c_str(), 0755) == 0);
                           write_file(cur + "/otelcol-contrib", "#!/bin/sh\n", 0755);
                           symlink_or_fail(to_storage(v, cur), cur + "/zz-storage");
                       },
                   .op = [](const Releases& r) { return seed_args(r.at("A"), "newest"); },
                   .start = [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                   .end = {"0.115.0", "A"},
                   .second_level = false});
    for (bool staged : {false, true}) {
        all.push_back(
            {.name = std::string("update activation, ") + (staged ? "staged extraction" : "copy"),
             .setup =
                 [](Volume& v, Releases& r) {
                     r["A"] = v.release("0.115.0");
                     r["B"] = v.release("0.116.0");
                     r["C"] = v.release("0.117.0");
                     seed_with(v, r["B"]);
                 },
             .op =
                 [staged](const Releases& r) {
                     Args a = {"activate", "--file", r.at("C"), "--version", "0.117.0"};
                     if (staged) a.push_back("--staged");
                     return a;
                 },
             .start = [](const Releases& r) { return start_args(r.at("A"), "newest"); },
             .end = {"0.117.0", "C"},
             // Committed when the journal is unlinked after health-checking.
             .commit = Commit{"journal.clear.before", true, "fsx.unlink", {"0.116.0", "B"}},
             .keep = {"0.116.0"}});
    }
    all.push_back({.name = "rollback to the previous version",
                   .setup =
                       [](Volume& v, Releases& r) {
                           r["A"] = v.release("0.115.0");
                           r["B"] = v.release("0.116.0");
                           r["C"] = v.release("0.117.0");
                           seed_with(v, r["B"]);
                           update_to(v, r["C"], "0.117.0");
                       },
                   .op = [](const Releases&) { return Args{"rollback"}; },
                   .start = [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                   .end = {"0.116.0", "B"},
                   // Decided once its journal is renamed into place: recovery finishes it.
                   .commit = Commit{"journal.write.before", false, "fsx.rename", {"0.117.0", "C"}},
                   .keep = {"0.116.0", "0.117.0"}});
    all.push_back({.name = "garbage collection",
                   .setup =
                       [](Volume& v, Releases& r) {
                           r["A"] = v.release("0.115.0");
                           r["D"] = v.release("0.118.0");
                           seed_with(v, r["A"]);
                           update_to(v, v.release("0.116.0"), "0.116.0");
                           update_to(v, v.release("0.117.0"), "0.117.0");
                           update_to(v, r["D"], "0.118.0");
                       },
                   .op =
                       [](const Releases&) {
                           return Args{"gc", "--keep", "0"};
                       },
                   .start = [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                   .end = {"0.118.0", "D"},
                   .keep = {"0.117.0", "0.118.0"}});
    // Recovery itself as the operation: the restart is the op, so the first level already kills
    // every point of recovery and no second level is needed.
    all.push_back({.name = "recovery of an interrupted update: switch back, spool, temp files",
                   .setup =
                       [](Volume& v, Releases& r) {
                           interrupted_update(v, r);
                           plant_leftovers(v);
                       },
                   .op = [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                   .start = [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                   .end = {"0.116.0", "B"},
                   .keep = {"0.117.0"},
                   .second_level = false});
    all.push_back({.name = "recovery of an interrupted update whose previous version is broken",
                   .setup =
                       [](Volume& v, Releases& r) {
                           interrupted_update(v, r);
                           flip_byte(v.install + "/versions/0.116.0/otelcol-contrib", 4096);
                       },
                   .op = [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                   .start = [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                   // `current` is removed rather than left at the unproven 0.117.0, and seeding
                   // then activates the image.
                   .end = {"0.115.0", "A"},
                   .keep = {"0.117.0"},
                   .broken_ok = {"0.116.0"},
                   .second_level = false});
    all.push_back({.name = "recovery moves a journal with flipped bytes aside",
                   .setup =
                       [](Volume& v, Releases& r) {
                           r["B"] = v.release("0.116.0");
                           seed_with(v, r["B"]);
                           std::string j = v.state_dir + "/journal.json";
                           write_file(j, journal_text("update", "staging", "0.116.0", "0.117.0"),
                                      0600);
                           flip_byte(j, 0);
                       },
                   .op = [](const Releases& r) { return start_args(r.at("B"), "newest"); },
                   .start = [](const Releases& r) { return start_args(r.at("B"), "newest"); },
                   .end = {"0.116.0", "B"},
                   .journal_aside = true,
                   .second_level = false});
    all.push_back({.name = "recovery moves a journal that is a link into the supervisor storage",
                   .setup =
                       [](Volume& v, Releases& r) {
                           r["B"] = v.release("0.116.0");
                           seed_with(v, r["B"]);
                           symlink_or_fail(to_storage(v, v.state_dir) + "/persistent_state.yaml",
                                           v.state_dir + "/journal.json");
                       },
                   .op = [](const Releases& r) { return start_args(r.at("B"), "newest"); },
                   .start = [](const Releases& r) { return start_args(r.at("B"), "newest"); },
                   .end = {"0.116.0", "B"},
                   .journal_aside = true,
                   .second_level = false});
    for (Scenario& s : all) {
        s.setup = [inner = s.setup](Volume& v, Releases& r) {
            inner(v, r);
            plant_staging_link(v);
        };
    }
    return all;
}

}  // namespace

TEST_CASE("oracle: its SHA-256 agrees with the standard vectors and with sha256sum") {
    CHECK(oracle::sha256_hex("") ==
          "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(oracle::sha256_hex("abc") ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(oracle::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    RunResult r = run({"sha256sum", fake_otelcol()});
    if (r.exit_code != 0) MYR_SKIP("sha256sum is not available to cross-check the oracle");
    CHECK(oracle::sha256_file_hex(fake_otelcol()) == r.out.substr(0, 64));
}

TEST_CASE("crash matrix: every fault point of every volume operation keeps the invariants") {
    // A process crash, not a power loss, is simulated: fsync adds nothing here, so the volumes live
    // on tmpfs when there is one, which keeps the ~2000 runs of this matrix fast.
    struct stat shm {};
    if (::stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) && ::access("/dev/shm", W_OK) == 0) {
        ::setenv("TMPDIR", "/dev/shm", 1);
    }
    const std::set<std::string> documented = documented_points();
    Totals t;
    std::string per_scenario;
    for (const Scenario& s : scenarios()) {
        CAPTURE(s.name);
        int cases = t.cases;
        size_t violations = t.violations.size();
        run_scenario(s, t);
        per_scenario += "  " + s.name + ": " + std::to_string(t.cases - cases) + " cases, " +
                        std::to_string(t.violations.size() - violations) + " violations\n";
    }

    for (const std::string& p : t.traced) {
        if (!documented.count(p)) t.violations.push_back({p, "points: traced but not documented"});
    }
    for (const std::string& p : documented) {
        if (t.crashed.count(p) || kNotCrashed.count(p)) continue;
        t.violations.push_back({p, "points: documented but never crashed"});
    }
    for (const auto& [p, why] : kNotCrashed) {
        if (!documented.count(p) || t.crashed.count(p)) {
            t.violations.push_back(
                {p, "points: allow-listed (" + why + ") but crashed or undocumented"});
        }
    }

    std::map<std::string, int> by_kind;
    for (const Violation& v : t.violations) ++by_kind[v.what.substr(0, v.what.find(':'))];
    std::string kinds;
    for (const auto& [k, n] : by_kind) kinds += " " + k + "=" + std::to_string(n);
    MESSAGE("volume crash matrix: "
            << documented.size() << " documented fault points, " << t.crashed.size() << " crashed, "
            << t.traced.size() << " traced; " << t.cases << " crash cases, " << t.runs
            << " driver runs, " << t.violations.size() << " violations"
            << (kinds.empty() ? "" : " (by invariant:" + kinds + ")") << "\n"
            << per_scenario);
    // Every violation counts; the first ones are shown in full.
    int shown = 0;
    for (const Violation& v : t.violations) {
        if (++shown > 40) break;
        FAIL_CHECK(v.label << ": " << v.what);
    }
    CHECK(t.violations.empty());
}
