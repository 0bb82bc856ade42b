// The crash matrix of volume.md: every operation on the volume is killed at every fault point it
// passes (each pass of each point, enumerated with MYRIARCH_FAULT_TRACE), the volume is restarted
// (recovery, then seeding, as the container command does) and the four invariants are checked, plus
// what the journal promises: an interrupted update or rollback ends at the right version. For one
// crash point per scenario the restart itself is also killed at each of its points.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "volume_support.hpp"

using namespace myr::test;

namespace {

using Releases = std::map<std::string, std::string>;

struct Scenario {
    std::string name;
    std::function<void(Volume&, Releases&)> setup;  // builds the initial volume, no faults
    std::function<std::vector<std::string>(const Releases&)> op;
    std::function<std::vector<std::string>(const Releases&)> start;
    std::set<std::string> allowed;    // versions acceptable as active after the restart
    std::string if_journal;           // when the crash left a journal: the version to end at
    std::set<std::string> must_keep;  // version directories that must survive
};

struct Totals {
    std::set<std::string> points;
    int cases = 0;
    int runs = 0;
    std::vector<std::string> violations;
};

void must(const RunResult& r, const std::string& what) {
    INFO(what << "\nstdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 0);
}

// Every pass of every point, in order. Unless MYRIARCH_VOLUME_CRASH_FULL=1, the file-level points
// of fsx (`fsx.write` once per 128 KiB chunk, …) are thinned to the first pass of each kind within
// each store/journal step: later passes of the same kind in the same step leave the same state
// behind, and the full matrix takes minutes on a loaded machine.
std::vector<std::pair<std::string, int>> read_trace(const std::string& path) {
    const char* full_env = std::getenv("MYRIARCH_VOLUME_CRASH_FULL");
    bool full = full_env && std::string(full_env) == "1";
    std::vector<std::pair<std::string, int>> out;
    std::map<std::string, int> passes;
    std::set<std::string> seen_in_step;
    std::istringstream in(read_file(path));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        int pass = ++passes[line];
        bool file_level = line.rfind("fsx.", 0) == 0;
        if (!file_level) {
            seen_in_step.clear();
        } else if (!full && !seen_in_step.insert(line).second) {
            continue;
        }
        out.emplace_back(line, pass);
    }
    return out;
}

// Restart after a crash and check everything; appends violations prefixed by `label`.
void restart_and_check(const Scenario& s, Volume& vol, const Releases& rel, bool journal_left,
                       const std::string& sup_before, const std::string& label, Totals& t) {
    std::vector<std::string> args = s.start(rel);
    args.push_back("--print-state");
    RunResult r = vol.driver(args);
    ++t.runs;
    if (r.exit_code != 0) {
        t.violations.push_back(label + ": restart failed: " + r.err);
        return;
    }
    size_t nl = r.out.find('\n');
    Json out(r.out.substr(0, nl));
    std::string reported = out.str("seed.activeVersion");
    Json st(nl == std::string::npos ? "" : r.out.substr(nl + 1));
    for (const std::string& v : invariant_violations(st, reported)) {
        t.violations.push_back(label + ": " + v);
    }
    if (tree_digest(vol.supervisor) != sup_before) {
        t.violations.push_back(label + ": 3: supervisor storage changed");
    }
    std::string cur = st.str("currentVersion");
    if (!s.allowed.count(cur)) t.violations.push_back(label + ": ended at unexpected " + cur);
    if (journal_left && !s.if_journal.empty() && cur != s.if_journal) {
        t.violations.push_back(label + ": journal was left but ended at " + cur + ", not " +
                               s.if_journal);
    }
    auto versions = st.bool_map("versions");
    for (const std::string& v : s.must_keep) {
        if (!versions.count(v)) t.violations.push_back(label + ": versions/" + v + " was removed");
    }
}

void run_scenario(const Scenario& s, Totals& t) {
    // Enumerate the points the operation passes.
    std::vector<std::pair<std::string, int>> trace;
    {
        Volume vol;
        Releases rel;
        s.setup(vol, rel);
        std::string trace_file = vol.tmp / "trace";
        RunResult r = vol.driver(s.op(rel), {{"MYRIARCH_FAULT_TRACE", trace_file}});
        ++t.runs;
        INFO(s.name << ": " << r.err);
        REQUIRE(r.exit_code == 0);
        trace = read_trace(trace_file);
        REQUIRE(!trace.empty());
    }
    // The prepared state, cloned for every case (the releases stay in the template's directory).
    Volume tmpl;
    Releases rel;
    s.setup(tmpl, rel);
    std::pair<std::string, int> deep;  // a crash point that leaves a journal, for the second level
    for (const auto& [point, pass] : trace) {
        t.points.insert(point);
        Volume vol;
        vol.clone_from(tmpl);
        std::string sup = tree_digest(vol.supervisor);
        std::string label = s.name + " @ " + point + "#" + std::to_string(pass);
        RunResult r =
            vol.driver(s.op(rel), {{"MYRIARCH_FAULT", point + ":crash@" + std::to_string(pass)}});
        ++t.runs;
        ++t.cases;
        if (r.exit_code != 137) {
            t.violations.push_back(label + ": did not crash (exit " + std::to_string(r.exit_code) +
                                   "): " + r.err);
            continue;
        }
        bool journal_left = exists(vol.state_dir + "/journal.json");
        if (journal_left) deep = {point, pass};
        restart_and_check(s, vol, rel, journal_left, sup, label, t);
    }
    if (deep.first.empty()) return;

    // Second level: kill the restart (recovery and seeding) at each of its points.
    std::vector<std::pair<std::string, int>> restart_trace;
    {
        Volume vol;
        vol.clone_from(tmpl);
        RunResult r = vol.driver(
            s.op(rel), {{"MYRIARCH_FAULT", deep.first + ":crash@" + std::to_string(deep.second)}});
        ++t.runs;
        REQUIRE(r.exit_code == 137);
        std::string trace_file = vol.tmp / "trace";
        r = vol.driver(s.start(rel), {{"MYRIARCH_FAULT_TRACE", trace_file}});
        ++t.runs;
        REQUIRE(r.exit_code == 0);
        restart_trace = read_trace(trace_file);
    }
    for (const auto& [point, pass] : restart_trace) {
        t.points.insert(point);
        Volume vol;
        vol.clone_from(tmpl);
        std::string sup = tree_digest(vol.supervisor);
        std::string label = s.name + " @ " + deep.first + "#" + std::to_string(deep.second) +
                            " then restart @ " + point + "#" + std::to_string(pass);
        RunResult r = vol.driver(
            s.op(rel), {{"MYRIARCH_FAULT", deep.first + ":crash@" + std::to_string(deep.second)}});
        r = vol.driver(s.start(rel),
                       {{"MYRIARCH_FAULT", point + ":crash@" + std::to_string(pass)}});
        t.runs += 2;
        ++t.cases;
        if (r.exit_code != 137) {
            t.violations.push_back(label + ": did not crash (exit " + std::to_string(r.exit_code) +
                                   ")");
            continue;
        }
        restart_and_check(s, vol, rel, true, sup, label, t);
    }
}

std::vector<std::string> seed_args(const std::string& image, const std::string& policy) {
    return {"seed", "--image", image, "--policy", policy};
}
std::vector<std::string> start_args(const std::string& image, const std::string& policy) {
    return {"start", "--image", image, "--policy", policy};
}

void seed_with(Volume& v, const std::string& image, const std::string& policy = "newest") {
    must(v.driver(seed_args(image, policy)), "setup seed " + image);
}
void update_to(Volume& v, const std::string& file, const std::string& version) {
    must(v.driver({"activate", "--file", file, "--version", version, "--keep", "9"}),
         "setup activate " + version);
}

std::vector<Scenario> scenarios() {
    std::vector<Scenario> all;
    all.push_back({"seed into an empty volume",
                   [](Volume& v, Releases& r) { r["B"] = v.release("0.116.0"); },
                   [](const Releases& r) { return seed_args(r.at("B"), "newest"); },
                   [](const Releases& r) { return start_args(r.at("B"), "newest"); },
                   {"0.116.0"},
                   "",
                   {}});
    all.push_back({"seed newest over an older image version",
                   [](Volume& v, Releases& r) {
                       r["A"] = v.release("0.115.0");
                       r["B"] = v.release("0.116.0");
                       seed_with(v, r["A"]);
                   },
                   [](const Releases& r) { return seed_args(r.at("B"), "newest"); },
                   [](const Releases& r) { return start_args(r.at("B"), "newest"); },
                   {"0.116.0"},
                   "",
                   {"0.115.0"}});
    all.push_back({"seed policy image back over an update (reuse, marker rewrite)",
                   [](Volume& v, Releases& r) {
                       r["B"] = v.release("0.116.0");
                       r["C"] = v.release("0.117.0");
                       seed_with(v, r["B"]);
                       update_to(v, r["C"], "0.117.0");
                   },
                   [](const Releases& r) { return seed_args(r.at("B"), "image"); },
                   [](const Releases& r) { return start_args(r.at("B"), "image"); },
                   {"0.116.0"},
                   "",
                   {"0.117.0"}});
    all.push_back({"seed replaces a broken active version of the same number (exchange)",
                   [](Volume& v, Releases& r) {
                       r["A"] = v.release("0.115.0");
                       r["A2"] = v.release("0.115.0", "health=ok");
                       seed_with(v, r["A"]);
                       std::string bin = v.install + "/versions/0.115.0/otelcol-contrib";
                       write_file(bin, read_file(bin) + "x", 0755);
                   },
                   [](const Releases& r) { return seed_args(r.at("A2"), "newest"); },
                   [](const Releases& r) { return start_args(r.at("A2"), "newest"); },
                   {"0.115.0"},
                   "",
                   {}});
    all.push_back({"seed policy image with other bytes under the same version",
                   [](Volume& v, Releases& r) {
                       r["B"] = v.release("0.116.0");
                       r["B2"] = v.release("0.116.0", "health=fail");
                       seed_with(v, r["B"], "image");
                   },
                   [](const Releases& r) { return seed_args(r.at("B2"), "image"); },
                   [](const Releases& r) { return start_args(r.at("B2"), "image"); },
                   {"0.116.0"},
                   "",
                   {}});
    for (bool staged : {false, true}) {
        all.push_back({std::string("update activation, ") + (staged ? "staged extraction" : "copy"),
                       [](Volume& v, Releases& r) {
                           r["A"] = v.release("0.115.0");
                           r["B"] = v.release("0.116.0");
                           r["C"] = v.release("0.117.0");
                           seed_with(v, r["B"]);
                       },
                       [staged](const Releases& r) {
                           std::vector<std::string> a = {"activate", "--file", r.at("C"),
                                                         "--version", "0.117.0"};
                           if (staged) a.push_back("--staged");
                           return a;
                       },
                       [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                       {"0.116.0", "0.117.0"},
                       "0.116.0",
                       {"0.116.0"}});
    }
    all.push_back({"rollback to the previous version",
                   [](Volume& v, Releases& r) {
                       r["A"] = v.release("0.115.0");
                       r["B"] = v.release("0.116.0");
                       r["C"] = v.release("0.117.0");
                       seed_with(v, r["B"]);
                       update_to(v, r["C"], "0.117.0");
                   },
                   [](const Releases&) { return std::vector<std::string>{"rollback"}; },
                   [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                   {"0.116.0", "0.117.0"},
                   "0.116.0",
                   {"0.116.0", "0.117.0"}});
    all.push_back({"garbage collection",
                   [](Volume& v, Releases& r) {
                       r["A"] = v.release("0.115.0");
                       seed_with(v, r["A"]);
                       update_to(v, v.release("0.116.0"), "0.116.0");
                       update_to(v, v.release("0.117.0"), "0.117.0");
                       update_to(v, v.release("0.118.0"), "0.118.0");
                   },
                   [](const Releases&) {
                       return std::vector<std::string>{"gc", "--keep", "0"};
                   },
                   [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                   {"0.118.0"},
                   "",
                   {"0.117.0", "0.118.0"}});
    return all;
}

}  // namespace

TEST_CASE("crash matrix: every fault point of every volume operation keeps the invariants") {
    // A process crash, not a power loss, is simulated: fsync adds nothing here, so the volumes live
    // on tmpfs when there is one, which keeps the ~2000 runs of this matrix fast.
    struct stat shm {};
    if (::stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) && ::access("/dev/shm", W_OK) == 0) {
        ::setenv("TMPDIR", "/dev/shm", 1);
    }
    Totals t;
    for (const Scenario& s : scenarios()) {
        CAPTURE(s.name);
        run_scenario(s, t);
    }
    std::string list;
    for (const auto& p : t.points) list += "  " + p + "\n";
    MESSAGE("volume crash matrix: " << t.points.size() << " distinct fault points, " << t.cases
                                    << " crash cases, " << t.runs << " driver runs, "
                                    << t.violations.size() << " violations\n"
                                    << list);
    for (const std::string& v : t.violations) FAIL_CHECK(v);
    CHECK(t.violations.empty());
    CHECK(t.points.size() >= 20);
}
