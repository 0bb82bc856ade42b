// The crash matrix of an install through the real binary as PID 1 (docs/update.md, "What is
// journaled"): a traced install lists the fault points it passes; the binary is then crashed at
// each of them in turn (MYRIARCH_FAULT=<point>:crash@N) and restarted without the fault. After
// every restart: `current` names an intact version, the new one exactly when the crash came
// after the commit (the journal's clearing); nothing is left in staging, and the spool holds at
// most the offer's own download (kept for the restart to resume, docs/download.md) until the
// offer again ends; the supervisor's storage is unchanged; /readyz is 200; and the next report
// tells the truth. The archive carries 6 MiB of random bytes, so that the download passes a
// periodic sync of its part (`download.sync.*`). A second matrix does the same for the trial's
// fault points (issue 23), a third sends TERM on entry to each state.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "fault_trace.hpp"
#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

// After a restart: `version` active and intact and what the agent reports about it true. The
// server offers the release again, and the answer must name what `current` names: Installed
// without a download when the new one is active, or the interrupted install going on (from the
// kept download) when it is not. An offer whose outcome was already written to packages.json
// before the crash is nothing to do after it (the statuses are restored and reported at connect):
// then no new status comes, and the one reported since the restart (`restart_mark`) is judged.
void check_restart(Rig& rig, const Updater& u, const std::string& version, const Offer& again,
                   size_t restart_mark, std::vector<std::string>& violations,
                   const std::string& label) {
    // A trial the crash interrupted goes on after the restart (its journal kept, one boot
    // counted) and ends at its deadline, a few seconds on: the oracle judges the volume after.
    if (!wait_until([&] { return !exists(rig.state + "/journal.json"); }, 30s, 50ms)) {
        violations.push_back(label + ": the journal stayed 30 s after the restart");
    }
    for (const auto& v : rig.violations(version)) violations.push_back(label + ": " + v);
    // Kept at start: what the same offer resumes from or installs, nothing else.
    const std::string sha = rig.sha_of(again.file);
    for (const std::string& n : list_dir(rig.spool())) {
        if (n != sha && n != sha + ".part" && n != sha + ".part.meta") {
            violations.push_back(label + ": the spool kept " + n);
        }
    }
    if (!rig.storage_unchanged()) violations.push_back(label + ": supervisor storage changed");
    if (rig.probe("/readyz") != 200) violations.push_back(label + ": /readyz not 200");
    size_t from = rig.mark();
    rig.offer(again);
    // A new status, or the updater saying there is nothing to do (then none comes).
    std::optional<Status> st;
    wait_until(
        [&] {
            st = rig.wait_status(again.version, "", from, 0s);
            return st || u.log_has("update: offer already installed");
        },
        15s, 50ms);
    if (!st) st = rig.wait_status(again.version, "", restart_mark, 1s);
    if (!st) {
        violations.push_back(label + ": no final status after the restart; log:\n" + u.log());
        return;
    }
    // A fresh install after the restart may legitimately move `current` on: judge by it.
    if (st->has != rig.current().substr(std::string("versions/").size())) {
        violations.push_back(label + ": reported " + st->has + " but current is " + rig.current() +
                             " (" + st->status + " " + st->error + ")");
    }
    if (version == again.version && st->status != "Installed") {
        violations.push_back(label + ": the active new version reported " + st->status + ": " +
                             st->error);
    }
    // The offer's end removes what it kept.
    if (!wait_until([&] { return list_dir(rig.spool()).empty(); }, 10s, 50ms)) {
        violations.push_back(label + ": the spool is not empty after the offer again: " +
                             joined(list_dir(rig.spool())));
    }
}

// The fault points a traced install of `offer` passes, from the offer on (the start's own passes
// dropped). `settled` is the log line after which the install has nothing left to do.
std::vector<FaultPass> traced_install(Rig& rig, const Offer& offer, const std::string& settled) {
    const std::string trace = rig.dir / "trace";
    std::vector<FaultPass> passes;
    size_t install_from = 0;
    {
        SpawnOptions traced;
        traced.env["MYRIARCH_FAULT_TRACE"] = trace;
        const size_t m = rig.mark();
        Updater u(rig.config(), Launch::pid1, traced);
        rig.await_start(u, m);
        install_from = read_fault_trace(trace).size();
        size_t from = rig.mark();
        rig.offer(offer);
        auto st = rig.wait_status(offer.version, "", from);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        REQUIRE_MESSAGE(st->status == "Installed", st->error);
        REQUIRE_MESSAGE(u.wait_for_log(settled, 60s), u.log());
        REQUIRE(u.stop() == 0);
        passes = read_fault_trace(trace);
    }
    REQUIRE(passes.size() > install_from);
    passes.erase(passes.begin(), passes.begin() + static_cast<long>(install_from));
    // How many times `download.write` passes depends on how the socket delivers the body (one
    // pass per buffer written), so its N-th pass may never come in another run. Every such crash
    // leaves the same state (a partial .part in the spool): its first pass stands for all.
    passes.erase(std::remove_if(
                     passes.begin(), passes.end(),
                     [](const FaultPass& p) { return p.point == "download.write" && p.pass > 1; }),
                 passes.end());
    return passes;
}

// The first pass at or after `from` whose point is `point` (passes.size() if none).
size_t find_pass(const std::vector<FaultPass>& passes, size_t from, const std::string& point) {
    while (from < passes.size() && passes[from].point != point) ++from;
    return from;
}

// Crashes the binary at each pass in turn, restarts it without the fault and judges the restart
// (check_restart). `expect(i)` is the version a restart after a crash at pass i must keep, or ""
// where either is right (then `current` itself is judged: intact, and what the report says).
void crash_each(Rig& rig, const Offer& offer, const std::vector<FaultPass>& passes,
                const std::function<std::string(size_t)>& expect) {
    std::vector<std::string> violations;
    int crashed = 0;
    for (size_t i = 0; i < passes.size(); ++i) {
        const std::string l = label(passes[i]);
        rig.restore_pristine();
        {
            SpawnOptions crash;
            crash.env["MYRIARCH_FAULT"] = crash_at(passes[i]);
            const size_t m = rig.mark();
            Updater u(rig.config(), Launch::pid1, crash);
            rig.await_start(u, m);
            rig.offer(offer);
            int code = u.wait_exit(60s);
            if (code != 137) {
                violations.push_back(l + ": exit " + std::to_string(code) + ", not the crash");
                continue;
            }
            ++crashed;
        }
        const size_t m = rig.mark();
        Updater u(rig.config());
        rig.await_start(u, m);
        std::string version = expect(i);
        if (version.empty()) version = rig.current().substr(std::string("versions/").size());
        check_restart(rig, u, version, offer, m, violations, l);
        if (u.stop() != 0) violations.push_back(l + ": the restart did not exit 0");
    }
    MESSAGE("crashed at " << crashed << " of " << passes.size()
                          << " points; violations: " << violations.size());
    CHECK(crashed == static_cast<int>(passes.size()));
    CHECK_MESSAGE(violations.empty(), joined(violations));
}

}  // namespace

TEST_CASE("update crash matrix: a crash at every fault point of an install, then a restart") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.first_start(rig.release("0.116.0"));
    const std::string archive = rig.tar_gz_padded(rig.release("0.117.0"), "v117.tar.gz", 6);
    const Offer offer{"0.117.0", archive};
    const std::vector<FaultPass> passes =
        traced_install(rig, offer, "msg=\"update: state\" state=idle from=committed");
    // The commit is the unlink of the journal inside update.finish: a process crash after it
    // (even before the directory's fsync) finds no journal, so from the pass after that
    // `fsx.unlink` on the new version is the one a restart must keep.
    const size_t finish = find_pass(passes, 0, "update.finish.before");
    const size_t commit =
        find_pass(passes, find_pass(passes, finish, "journal.clear.before"), "fsx.unlink") + 1;
    REQUIRE_MESSAGE(commit < passes.size(), "no unlink of the journal in the trace");
    std::string names;
    for (const auto& p : passes) names += label(p) + " ";
    MESSAGE("fault points of an install: " << passes.size() << ": " << names);
    for (const char* phase : {"downloading", "verifying", "staging", "preflight", "stopping",
                              "swapping", "starting", "health-checking"}) {
        const std::string before = std::string("update.") + phase + ".before";
        CHECK_MESSAGE(find_pass(passes, 0, before) < passes.size(),
                      "the install never passed " << before);
    }
    for (const char* point : {"download.sync.before", "download.sync.after"}) {
        CHECK_MESSAGE(find_pass(passes, 0, point) < passes.size(),
                      "the install never passed " << point);
    }
    crash_each(rig, offer, passes,
               [commit](size_t i) { return std::string(i >= commit ? "0.117.0" : "0.116.0"); });
}

// Issue 23: the trial's own fault points (its journal write, the finish at its start, the
// commit at its end). Before the trial's journal is durable a restart rolls back (the journal
// says health-checking); from then on it keeps the new version (one boot of update.trialMaxBoots,
// or the deadline passed); a crash inside the journal's own write may leave either journal.
TEST_CASE("update crash matrix: a crash at every fault point of a trial, then a restart") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.cfg.trial_period = "3s";
    rig.first_start(rig.release("0.116.0"));
    const Offer offer{"0.117.0", rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz")};
    std::vector<FaultPass> passes =
        traced_install(rig, offer, "msg=\"update: state\" state=committed from=trial");
    const size_t trial = find_pass(passes, 0, "update.trial.before");
    REQUIRE_MESSAGE(trial < passes.size(), "the install never passed update.trial.before");
    // The earlier points are the install's matrix above.
    passes.erase(passes.begin(), passes.begin() + static_cast<long>(trial));
    const size_t written_from = find_pass(passes, 0, "journal.write.before");
    const size_t written = find_pass(passes, written_from, "journal.write.after");
    REQUIRE(written < passes.size());
    std::string names;
    for (const auto& p : passes) names += label(p) + " ";
    MESSAGE("fault points of a trial: " << passes.size() << ": " << names);
    crash_each(rig, offer, passes, [written_from, written](size_t i) {
        if (i <= written_from) return std::string("0.116.0");
        return std::string(i >= written ? "0.117.0" : "");
    });
}

TEST_CASE("update TERM matrix: a SIGTERM on entry to every state of an install") {
    // The spec's shutdown: a running installation may finish its critical section (from the stop
    // of the supervisor on), then the updater exits 0; before it, the install is dropped where it
    // stands. MYRIARCH_FAULT=<point>:term sends the TERM at the very entry of each state.
    if (!can_run_pid1()) return;
    Rig rig;
    rig.first_start(rig.release("0.116.0"));
    const Offer good{"0.117.0", rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz")};
    const Offer bad{"0.118.0", rig.tar_gz(rig.release("0.118.0", "health=fail"), "v118.tar.gz")};
    struct Point {
        std::string at;  // the fault point
        const Offer* offer;
        std::string ends;  // the state the install must reach before the exit; "" = dropped
    };
    const std::vector<Point> points = {
        {"update.downloading.after", &good, ""},
        {"update.verifying.after", &good, ""},
        {"update.staging.after", &good, ""},
        {"update.preflight.after", &good, ""},
        {"update.stopping.after", &good, "committed"},
        {"update.swapping.after", &good, "committed"},
        {"update.starting.after", &good, "committed"},
        {"update.health-checking.after", &good, "committed"},
        {"update.finish.before", &good, "committed"},
        {"update.rolling-back.after", &bad, "rolled-back"},
    };
    std::vector<std::string> violations;
    for (const Point& p : points) {
        rig.restore_pristine();
        const std::string expect = p.ends == "committed" ? "0.117.0" : "0.116.0";
        {
            SpawnOptions term;
            term.env["MYRIARCH_FAULT"] = p.at + ":term@1";
            const size_t m = rig.mark();
            Updater u(rig.config(), Launch::pid1, term);
            rig.await_start(u, m);
            rig.offer(*p.offer);
            const auto t0 = std::chrono::steady_clock::now();
            const int code = u.wait_exit(60s);
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - t0)
                                .count();
            MESSAGE(p.at << ": offer to exit " << ms << " ms, exit " << code);
            if (code != 0) violations.push_back(p.at + ": exit " + std::to_string(code));
            if (!u.log_has("fault injection: sending SIGTERM")) {
                violations.push_back(p.at + ": the point was never reached; log:\n" + u.log());
                continue;
            }
            const std::string log = u.log();
            const std::string after_term = log.substr(log.find("fault injection: sending SIGTERM"));
            if (!p.ends.empty() && after_term.find("state=" + p.ends) == std::string::npos) {
                violations.push_back(p.at + ": exited before the install reached " + p.ends +
                                     "; log:\n" + log);
            }
            if (p.ends.empty() && after_term.find("state=stopping") != std::string::npos) {
                violations.push_back(p.at + ": entered the critical section after the TERM");
            }
            if (rig.current() != "versions/" + expect) {
                violations.push_back(p.at + ": current is " + rig.current() + ", not " + expect);
            }
        }
        const size_t m = rig.mark();
        Updater u(rig.config());
        rig.await_start(u, m);
        check_restart(rig, u, expect, *p.offer, m, violations, p.at);
        if (u.stop() != 0) violations.push_back(p.at + ": the restart did not exit 0");
    }
    CHECK_MESSAGE(violations.empty(), joined(violations));
}
