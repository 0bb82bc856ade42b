// The crash matrix of an install (docs/update.md, "What is journaled"), shared by the container's
// (update_crash_test.cpp: the real binary as PID 1 of a PID namespace) and host mode's
// (tests/integration/host/host_crash_test.cpp: the real binary as a systemd unit). A traced
// install lists the fault points it passes; the updater is then crashed at each of them in turn
// (MYRIARCH_FAULT=<point>:crash@N) and runs again without the fault. After every restart:
// `current` names an intact version, the new one exactly when the crash came after the commit
// (the journal's clearing); nothing is left in staging, and the spool holds at most the offer's
// own download (kept for the restart to resume, docs/download.md) until the offer again ends; the
// supervisor's storage is unchanged; /readyz is 200; and the next report tells the truth. What
// differs between the modes (who starts the updater, who restarts it after the crash, what else
// must hold) is a `Launcher`.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fault_trace.hpp"
#include "update_rig.hpp"

namespace myr::test::upd {

// One way of running the updater for the matrix, one updater at a time.
class Launcher {
  public:
    virtual ~Launcher() = default;
    // Puts the volume and state back as the first start left them (Rig::restore_pristine), with
    // no updater running.
    virtual void reset() = 0;
    // Starts the updater with `env` added to its environment (MYRIARCH_FAULT…); returns once it
    // is ready and its agent connected (Rig::await_start).
    virtual void start(const std::map<std::string, std::string>& env) = 0;
    // After an offer that crashes the updater: waits for the crash, then for the updater running
    // again without the fault, ready and connected. "" when both happened, else what did not.
    // `restart_mark` is set to the server's record mark once the crashed process was gone.
    virtual std::string crash_and_restart(size_t& restart_mark) = 0;
    // The updater's log since its latest start().
    virtual std::string log() const = 0;
    // Stops the updater as its operator would (TERM); "" when it exited 0, else what happened.
    virtual std::string stop() = 0;
    // What else must hold after a restart in this mode, each failure as a violation.
    virtual std::vector<std::string> extra_violations() { return {}; }
};

// After a restart: `version` active and intact and what the agent reports about it true. The
// server offers the release again, and the answer must name what `current` names: Installed
// without a download when the new one is active, or the interrupted install going on (from the
// kept download) when it is not. An offer whose outcome was already written to packages.json
// before the crash is nothing to do after it (the statuses are restored and reported at connect):
// then no new status comes, and the one reported since the restart (`restart_mark`) is judged.
inline void check_restart(Rig& rig, const Launcher& u, const std::string& version,
                          const Offer& again, size_t restart_mark,
                          std::vector<std::string>& violations, const std::string& label) {
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
            return st || u.log().find("update: offer already installed") != std::string::npos;
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
inline std::vector<FaultPass> traced_install(Rig& rig, Launcher& launcher, const Offer& offer,
                                             const std::string& settled) {
    const std::string trace = rig.dir / "trace";
    launcher.reset();
    launcher.start({{"MYRIARCH_FAULT_TRACE", trace}});
    const size_t install_from = read_fault_trace(trace).size();
    size_t from = rig.mark();
    rig.offer(offer);
    auto st = rig.wait_status(offer.version, "", from);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << launcher.log());
    REQUIRE_MESSAGE(st->status == "Installed", st->error);
    REQUIRE_MESSAGE(
        wait_until([&] { return launcher.log().find(settled) != std::string::npos; }, 60s),
        launcher.log());
    const std::string stopped = launcher.stop();
    REQUIRE_MESSAGE(stopped.empty(), stopped);
    std::vector<FaultPass> passes = read_fault_trace(trace);
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
inline size_t find_pass(const std::vector<FaultPass>& passes, size_t from,
                        const std::string& point) {
    while (from < passes.size() && passes[from].point != point) ++from;
    return from;
}

// Where the install commits: the unlink of the journal inside update.finish. A process crash
// after it (even before the directory's fsync) finds no journal, so from the pass after that
// `fsx.unlink` on the new version is the one a restart must keep.
inline size_t commit_pass(const std::vector<FaultPass>& passes) {
    const size_t finish = find_pass(passes, 0, "update.finish.before");
    const size_t commit =
        find_pass(passes, find_pass(passes, finish, "journal.clear.before"), "fsx.unlink") + 1;
    REQUIRE_MESSAGE(commit < passes.size(), "no unlink of the journal in the trace");
    return commit;
}

// The install passed every state of the installer and the download's periodic sync.
inline void check_install_coverage(const std::vector<FaultPass>& passes) {
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
}

// Crashes the updater at each pass in turn, runs it again without the fault and judges the
// restart (check_restart, and the launcher's own checks). `expect(i)` is the version a restart
// after a crash at pass i must keep, or "" where either is right (then `current` itself is
// judged: intact, and what the report says). Answers the violations.
inline std::vector<std::string> crash_each(Rig& rig, Launcher& launcher, const Offer& offer,
                                           const std::vector<FaultPass>& passes,
                                           const std::function<std::string(size_t)>& expect) {
    std::vector<std::string> violations;
    int crashed = 0;
    for (size_t i = 0; i < passes.size(); ++i) {
        const std::string l = label(passes[i]);
        INFO("crash at " << l);
        launcher.reset();
        launcher.start({{"MYRIARCH_FAULT", crash_at(passes[i])}});
        rig.offer(offer);
        size_t m = 0;
        if (std::string e = launcher.crash_and_restart(m); !e.empty()) {
            violations.push_back(l + ": " + e);
            continue;
        }
        ++crashed;
        std::string version = expect(i);
        if (version.empty()) version = rig.current().substr(std::string("versions/").size());
        check_restart(rig, launcher, version, offer, m, violations, l);
        for (const auto& v : launcher.extra_violations()) violations.push_back(l + ": " + v);
        if (std::string e = launcher.stop(); !e.empty()) violations.push_back(l + ": " + e);
    }
    MESSAGE("crashed and restarted at " << crashed << " of " << passes.size()
                                        << " points; violations: " << violations.size());
    CHECK(crashed == static_cast<int>(passes.size()));
    return violations;
}

}  // namespace myr::test::upd
