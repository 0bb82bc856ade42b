// The crash matrix of volume.md: every operation on the volume is killed at every fault point it
// passes (each pass of each point, enumerated with MYRIARCH_FAULT_TRACE), the volume is restarted
// (recovery, then seeding, as the container command does) and judged by the test's own oracle
// (volume_oracle.hpp: syscalls, json-c, its own SHA-256), never by the driver's `state`, which
// links the code under test. What is judged:
// - the four invariants, with the supervisor storage compared entry by entry;
// - the exact end state of each case: which version and which bytes are active, decided by where
//   the crash fell relative to the operation's commit (not by whether a journal happened to be
//   left), and which versions must still be on disk.
// For one crash point per scenario the restart itself is also killed at each of its points.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "volume_oracle.hpp"
#include "volume_support.hpp"

using namespace myr::test;

namespace {

using Releases = std::map<std::string, std::string>;  // key -> release file
using Args = std::vector<std::string>;
using Trace = std::vector<std::pair<std::string, int>>;  // point, pass number

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
    End end{};                       // what the restart must end at (after the commit, if any)
    std::optional<Commit> commit{};  // none: every crash ends at `end`
    std::set<std::string> keep{};    // versions that must stay intact on disk
    bool second_level = true;        // also crash the restart after a journaled crash point
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

// Every pass of every point, in order. Unless MYRIARCH_VOLUME_CRASH_FULL=1, the file-level points
// of fsx (`fsx.write` once per 128 KiB chunk, …) are thinned to the first pass of each kind within
// each store/journal step: later passes of the same kind in the same step leave the same state
// behind, and the full matrix takes minutes on a loaded machine.
Trace read_trace(const std::string& path, Totals& t) {
    const char* full_env = std::getenv("MYRIARCH_VOLUME_CRASH_FULL");
    bool full = full_env && std::string(full_env) == "1";
    Trace out;
    std::map<std::string, int> passes;
    std::set<std::string> seen_in_step;
    std::istringstream in(read_file(path));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        t.traced.insert(line);
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

std::string fault(const std::pair<std::string, int>& p) {
    return p.first + ":crash@" + std::to_string(p.second);
}

// The index of the scenario's commit in `trace`, or nullopt when it has none.
std::optional<size_t> commit_index(const Scenario& s, const Trace& trace) {
    if (!s.commit) return std::nullopt;
    std::optional<size_t> anchor;
    for (size_t i = 0; i < trace.size(); ++i) {
        if (trace[i].first != s.commit->anchor) continue;
        anchor = i;
        if (!s.commit->last_anchor) break;
    }
    REQUIRE_MESSAGE(anchor.has_value(), s.name << ": the trace never passes " << s.commit->anchor);
    for (size_t i = *anchor + 1; i < trace.size(); ++i) {
        if (trace[i].first == s.commit->effect) return i;
    }
    FAIL(s.name << ": no " << s.commit->effect << " after " << s.commit->anchor);
    return std::nullopt;
}

// Everything a case starts from: the prepared volume (cloned for every case; the releases stay in
// its directory), the releases' hashes and the supervisor storage as set up.
struct Prepared {
    Volume tmpl;
    Releases rel;
    std::map<std::string, std::string> sha;  // release key -> SHA-256 (oracle's)
    oracle::Tree supervisor;
};

void prepare(const Scenario& s, Prepared& p) {
    s.setup(p.tmpl, p.rel);
    for (const auto& [key, path] : p.rel) p.sha[key] = oracle::sha256_file_hex(path);
    p.supervisor = oracle::snapshot(p.tmpl.supervisor);
}

// Restarts after a crash and judges the volume; appends violations under `label`.
void restart_and_check(const Scenario& s, const Prepared& p, const Volume& vol, const End& want,
                       const std::string& label, Totals& t) {
    Args args = s.start(p.rel);
    args.push_back("--print-state");
    RunResult r = vol.driver(args);
    ++t.runs;
    std::vector<std::string> bad;
    if (r.exit_code != 0) bad.push_back("restart: exit " + std::to_string(r.exit_code));
    size_t nl = r.out.find('\n');
    Json reported(r.out.substr(0, nl));
    oracle::Expected e;
    e.version = want.version;
    e.sha256 = p.sha.at(want.release);
    e.reported = reported.str("seed.activeVersion");
    e.keep = s.keep;
    for (const std::string& v : oracle::violations({vol.install, vol.state_dir}, e)) {
        bad.push_back(v);
    }
    for (const std::string& d :
         oracle::differences(p.supervisor, oracle::snapshot(vol.supervisor), "supervisor")) {
        bad.push_back("3: " + d);
    }
    if (bad.empty()) return;
    // The driver's own view, to help reading the failure; it decides nothing.
    std::string view = nl == std::string::npos ? r.err : r.out.substr(nl + 1);
    bad.back() += "\n    driver's state (not judged): " + view;
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
        std::string label = s.name + " @ " + trace[i].first + "#" + std::to_string(trace[i].second);
        RunResult r = vol.driver(s.op(p.rel), {{"MYRIARCH_FAULT", fault(trace[i])}});
        ++t.runs;
        ++t.cases;
        if (r.exit_code != 137) {
            t.violations.push_back({label, "crash: did not crash (exit " +
                                               std::to_string(r.exit_code) + "): " + r.err});
            continue;
        }
        t.crashed.insert(trace[i].first);
        if (exists(vol.state_dir + "/journal.json")) deep = i;
        restart_and_check(s, p, vol, expected(i), label, t);
    }
    if (!s.second_level || !deep) return;

    // Second level: kill the restart (recovery and seeding) at each of its points.
    const std::string first = fault(trace[*deep]);
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
    for (const auto& point : restart_trace) {
        Volume vol;
        vol.clone_from(p.tmpl);
        std::string label = s.name + " @ " + trace[*deep].first + "#" +
                            std::to_string(trace[*deep].second) + " then restart @ " + point.first +
                            "#" + std::to_string(point.second);
        RunResult r = vol.driver(s.op(p.rel), {{"MYRIARCH_FAULT", first}});
        r = vol.driver(s.start(p.rel), {{"MYRIARCH_FAULT", fault(point)}});
        t.runs += 2;
        ++t.cases;
        if (r.exit_code != 137) {
            t.violations.push_back(
                {label, "crash: did not crash (exit " + std::to_string(r.exit_code) + ")"});
            continue;
        }
        t.crashed.insert(point.first);
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
                   .op = [](const Releases&) { return Args{"gc", "--keep", "0"}; },
                   .start = [](const Releases& r) { return start_args(r.at("A"), "newest"); },
                   .end = {"0.118.0", "D"},
                   .keep = {"0.117.0", "0.118.0"}});
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

    std::map<std::string, int> by_kind;
    for (const Violation& v : t.violations) ++by_kind[v.what.substr(0, v.what.find(':'))];
    std::string kinds;
    for (const auto& [k, n] : by_kind) kinds += " " + k + "=" + std::to_string(n);
    MESSAGE("volume crash matrix: "
            << t.crashed.size() << " distinct fault points crashed, " << t.traced.size()
            << " traced; " << t.cases << " crash cases, " << t.runs << " driver runs, "
            << t.violations.size() << " violations"
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
