// The crash matrix of an install through the real binary as PID 1 (crash_matrix.hpp: the fault
// points a traced install passes, a crash at each in turn, a restart, the oracle). The archive
// carries 6 MiB of random bytes, so that the download passes a periodic sync of its part
// (`download.sync.*`). A second matrix does the same for the trial's fault points (issue 23), a
// third sends TERM on entry to each state.
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <optional>

#include "crash_matrix.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

// The container's way: the updater as PID 1 of a new PID namespace, started again by the test
// after its crash, as the container runtime would.
class PidOneLauncher : public Launcher {
  public:
    explicit PidOneLauncher(Rig& rig) : rig_(rig) {}
    void reset() override {
        u_.reset();
        rig_.restore_pristine();
    }
    void start(const std::map<std::string, std::string>& env) override {
        SpawnOptions opts;
        opts.env = env;
        const size_t m = rig_.mark();
        u_.emplace(rig_.config(), Launch::pid1, opts);
        rig_.await_start(*u_, m);
    }
    std::string crash_and_restart(size_t& restart_mark) override {
        const int code = u_->wait_exit(60s);
        if (code != 137) return "exit " + std::to_string(code) + ", not the crash";
        u_.reset();
        restart_mark = rig_.mark();
        start({});
        return "";
    }
    std::string log() const override { return u_ ? u_->log() : ""; }
    std::string stop() override {
        const int code = u_->stop();
        u_.reset();
        return code == 0 ? "" : "the restart did not exit 0 (exit " + std::to_string(code) + ")";
    }

  private:
    Rig& rig_;
    std::optional<Updater> u_;
};

}  // namespace

TEST_CASE("update crash matrix: a crash at every fault point of an install, then a restart") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.first_start(rig.release("0.116.0"));
    const std::string archive = rig.tar_gz_padded(rig.release("0.117.0"), "v117.tar.gz", 6);
    const Offer offer{"0.117.0", archive};
    PidOneLauncher launcher(rig);
    const std::vector<FaultPass> passes =
        traced_install(rig, launcher, offer, "msg=\"update: state\" state=idle from=committed");
    const size_t commit = commit_pass(passes);
    check_install_coverage(passes);
    const std::vector<std::string> violations =
        crash_each(rig, launcher, offer, passes,
                   [commit](size_t i) { return std::string(i >= commit ? "0.117.0" : "0.116.0"); });
    CHECK_MESSAGE(violations.empty(), joined(violations));
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
    PidOneLauncher launcher(rig);
    std::vector<FaultPass> passes =
        traced_install(rig, launcher, offer, "msg=\"update: state\" state=committed from=trial");
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
    const std::vector<std::string> violations =
        crash_each(rig, launcher, offer, passes, [written_from, written](size_t i) {
            if (i <= written_from) return std::string("0.116.0");
            return std::string(i >= written ? "0.117.0" : "");
        });
    CHECK_MESSAGE(violations.empty(), joined(violations));
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
    PidOneLauncher launcher(rig);
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
        launcher.start({});
        check_restart(rig, launcher, expect, *p.offer, m, violations, p.at);
        if (std::string e = launcher.stop(); !e.empty()) violations.push_back(p.at + ": " + e);
    }
    CHECK_MESSAGE(violations.empty(), joined(violations));
}
