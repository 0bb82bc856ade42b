// The crash matrix of an install through host mode (issue 27; the matrix and its oracle are
// tests/integration/update/crash_matrix.hpp, shared with the container's). One booted systemd
// (tests/support/systemd_rig.hpp) for the whole matrix; inside it two real units: the
// supervisor's (opampsupervisor.service, the fake supervisor of tests/fakes running the fake
// collector from `current/`, Restart=always), stopped and started by the updater through
// systemctl around each swap; and the updater's own (myriarch-updater.service, `run`,
// Type=notify, Restart=on-failure). The OpAMP server and the artifact server listen on the
// host's 127.0.0.1, which the machine shares. The test's directory (volume, state, supervisor
// storage, releases, updater.yaml, the updater's log) is bound into the machine at the same path,
// so the oracle reads the volume exactly as the machine leaves it.
//
// The fault reaches the updater through an EnvironmentFile= of its unit, which systemd reads at
// the start it injects into; the unit's main process removes the file before it becomes the
// updater (`sh -c 'rm -f F; exec myriarch-updater …'`, same PID, so Type=notify holds), so the
// restart systemd makes after the crash (Restart=on-failure, the crash being exit 137) runs
// without the fault, with no race against RestartSec=. A drop-in with Environment= would need a
// daemon-reload between the crash and that restart; an ExecStopPost= removing the file is a
// control process spawned into a cgroup being emptied, which this sandbox's cgroupfs refuses now
// and then (exit 219/CGROUP, Result=exit-code).
//
// Host mode's extra invariant, checked after every restart: the supervisor's unit is running
// again (the updater never leaves it stopped after its recovery), and the updater's own stop
// leaves it running.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>

#include "../update/crash_matrix.hpp"
#include "systemd_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

constexpr const char* updater_unit = "myriarch-updater.service";
constexpr const char* supervisor_unit = "opampsupervisor.service";
constexpr const char* fault_env = "/run/myriarch-fault.env";
constexpr const char* crash_line = "fault injection: crashing";

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// The units, as an operator would write them, with what the matrix needs: the fault's
// environment file, the log in the test's directory, a short RestartSec= and no start limit on
// either unit (the matrix starts each one far more often than an operator would). KillMode=mixed
// as the shipped updater unit has it (packaging/host): what the crashed process leaves running
// (a systemctl of the supervisor's unit) finishes before systemd's restart.
std::string updater_unit_text(const Rig& rig, const std::string& log) {
    return std::string(
               "[Unit]\nDescription=myriarch-updater (host crash matrix)\n"
               "StartLimitIntervalSec=0\n[Service]\nType=notify\nEnvironmentFile=-") +
           fault_env + "\nExecStart=/bin/sh -c 'rm -f " + fault_env +
           "; exec /usr/local/bin/myriarch-updater run --config " + rig.config() + "'" +
           "\nRestart=on-failure\nRestartSec=200ms\nTimeoutStartSec=60\nKillMode=mixed\n"
           "StandardOutput=append:" +
           log + "\nStandardError=append:" + log + "\n";
}

std::string supervisor_unit_text(const Rig& rig) {
    return "[Unit]\nDescription=OpAMP Supervisor stand-in\nStartLimitIntervalSec=0\n"
           "[Service]\nExecStart=/usr/local/bin/fake-opampsupervisor --storage-dir " +
           rig.storage + " --signals-file " + rig.signals + " --agent " + rig.install +
           "/current/otelcol-contrib\nRestart=always\nRestartSec=200ms\n";
}

// The machine's seed: the static binaries and both units.
void seed_machine(const TempDir& seed, const Rig& rig, const std::string& log) {
    REQUIRE(run({"mkdir", "-p", seed / "usr/local/bin", seed / "etc/systemd/system"}).exit_code ==
            0);
    REQUIRE(
        run({"cp", env_path("MYRIARCH_BIN"), seed / "usr/local/bin/myriarch-updater"}).exit_code ==
        0);
    REQUIRE(run({"cp", env_path("MYRIARCH_FAKE_OPAMPSUPERVISOR"),
                 seed / "usr/local/bin/fake-opampsupervisor"})
                .exit_code == 0);
    write_file(seed / "etc/systemd/system/myriarch-updater.service", updater_unit_text(rig, log));
    write_file(seed / "etc/systemd/system/opampsupervisor.service", supervisor_unit_text(rig));
}

// The updater as the unit myriarch-updater.service of the booted machine, restarted by systemd
// after its crash.
class UnitLauncher : public Launcher {
  public:
    UnitLauncher(Rig& rig, BootedSystemd& m, std::string log)
        : rig_(rig), m_(m), log_(std::move(log)) {}

    // Both units stopped while the volume is put back, then the supervisor's started: the
    // updater finds it running, as on a host where both are enabled.
    void reset() override {
        systemctl({"stop", updater_unit});
        systemctl({"stop", supervisor_unit});
        ::unlink((m_.root() + fault_env).c_str());
        rig_.restore_pristine();
        systemctl({"reset-failed"});
        start_unit(supervisor_unit);
    }

    void start(const std::map<std::string, std::string>& env) override {
        std::string text;
        for (const auto& [k, v] : env) text += k + "=" + v + "\n";
        write_file(m_.root() + fault_env, text);
        from_ = started_ = read_file(log_).size();
        const size_t mark = rig_.mark();
        // Type=notify: systemctl start returns once the updater sent READY=1.
        start_unit(updater_unit);
        restarts_ = n_restarts();
        await_connected(mark);
    }

    std::string crash_and_restart(size_t& restart_mark) override {
        if (!wait_until([&] { return has(crash_line); }, 60s, 20ms)) {
            return "never crashed; unit " + property(updater_unit, "ActiveState") + "; log:\n" +
                   log();
        }
        // The crashed process writes nothing after that line: what the server records from
        // here on is the restart's.
        restart_mark = rig_.mark();
        from_ = read_file(log_).size();
        if (!wait_until([&] { return n_restarts() > restarts_; }, 30s, 50ms)) {
            return "systemd did not restart the updater: " + status(updater_unit);
        }
        if (!wait_until([&] { return property(updater_unit, "ActiveState") == "active"; }, 60s,
                        50ms)) {
            return "the restarted updater never became active: " + status(updater_unit) +
                   "; log:\n" + log();
        }
        if (!rig_.ready(40s) ||
            !wait_until([&] { return rig_.mark() > restart_mark && rig_.connected(); }, 20s,
                        20ms)) {
            return "the restarted updater was never ready and connected; the supervisor's unit: " +
                   status(supervisor_unit) + "; log:\n" + log();
        }
        return "";
    }

    std::string log() const override { return read_file(log_).substr(from_); }

    std::string stop() override {
        systemctl({"stop", updater_unit});
        // An exit other than 0 leaves Result=exit-code, a stop that timed out Result=timeout
        // (systemd 252 does not keep ExecMainStatus once the unit is inactive).
        const std::string result = property(updater_unit, "Result");
        std::string e;
        if (result != "success") {
            e = "the updater's stop ended in Result=" + result + "; " + journal() + "; ";
        }
        // Its exit leaves the supervisor's unit running (docs/host-mode.md).
        if (std::string s = property(supervisor_unit, "ActiveState"); s != "active") {
            e += "the updater's stop left the supervisor's unit " + s + "; ";
        }
        return e;
    }

    std::vector<std::string> extra_violations() override {
        std::vector<std::string> v;
        if (!wait_until([&] { return property(supervisor_unit, "ActiveState") == "active"; }, 20s,
                        50ms)) {
            v.push_back("the supervisor's unit is not running after the recovery: " +
                        status(supervisor_unit));
        }
        // One crash: the restart ran without the fault. (systemd may have needed more than one
        // restart for it: see start() on exit 219/CGROUP.)
        const std::string all = read_file(log_).substr(started_);
        size_t crashes = 0;
        for (size_t p = all.find(crash_line); p != std::string::npos;
             p = all.find(crash_line, p + 1)) {
            ++crashes;
        }
        if (crashes != 1) v.push_back(std::to_string(crashes) + " crashes, not one");
        return v;
    }

    // systemctl start. This sandbox's cgroupfs now and then refuses to put a new process into
    // the unit's cgroup (exit 219/CGROUP, before anything ran, the fault's file still there):
    // the unit's Restart= starts it again. Any other failure is a failure.
    void start_unit(const std::string& unit) {
        RunResult r = m_.run({"systemctl", "start", unit}, 90s);
        if (r.exit_code == 0) return;
        const std::string j =
            m_.run({"journalctl", "--no-pager", "-n", "30", "-u", unit}).out + journal();
        REQUIRE_MESSAGE(j.find("status=219/CGROUP") != std::string::npos,
                        "systemctl start " << unit << ": " << r.err << "\n"
                                           << j);
        MESSAGE("systemctl start " << unit << ": 219/CGROUP, started again by systemd");
        REQUIRE_MESSAGE(
            wait_until([&] { return property(unit, "ActiveState") == "active"; }, 60s, 50ms), j);
    }
    int n_restarts() {
        const std::string n = property(updater_unit, "NRestarts");
        return n.empty() ? -1 : std::stoi(n);
    }

  private:
    void systemctl(const std::vector<std::string>& args) {
        std::vector<std::string> argv{"systemctl"};
        argv.insert(argv.end(), args.begin(), args.end());
        RunResult r = m_.run(argv, 90s);
        std::string cmd;
        for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
        REQUIRE_MESSAGE(r.exit_code == 0, cmd << ": exit " << r.exit_code << ": " << r.err << "\n"
                                              << journal());
    }
    std::string property(const std::string& unit, const std::string& name) {
        return trimmed(m_.run({"systemctl", "show", "-p", name, "--value", unit}).out);
    }
    std::string status(const std::string& unit) {
        return trimmed(m_.run({"systemctl", "show", "-p",
                               "ActiveState,SubState,Result,ExecMainStatus,NRestarts", unit})
                           .out);
    }
    // What systemd says of the updater's unit, with its log: for failure messages.
    std::string journal() {
        return status(updater_unit) + "\njournal:\n" +
               m_.run({"journalctl", "--no-pager", "-n", "30", "-u", updater_unit}).out +
               "updater log:\n" + log();
    }
    bool has(const std::string& needle) const { return log().find(needle) != std::string::npos; }
    void await_connected(size_t mark) const {
        REQUIRE_MESSAGE(rig_.ready(40s), "never ready; log:\n" << log());
        REQUIRE_MESSAGE(
            wait_until([&] { return rig_.mark() > mark && rig_.connected(); }, 20s, 20ms),
            "no OpAMP message; log:\n"
                << log());
    }

    Rig& rig_;
    BootedSystemd& m_;
    std::string log_;
    size_t started_ = 0;  // the log's size at start()
    size_t from_ = 0;     // where log() begins: start(), then the restart
    int restarts_ = 0;    // NRestarts once started
};

// The first start under systemd: the updater seeds the empty volume from host.seedBinary, the
// supervisor's unit runs the seeded collector and writes its state (snapshotted: from here on
// nothing may change it); the volume and state are then kept for reset().
void first_start(Rig& rig, UnitLauncher& launcher, BootedSystemd& m) {
    rig.configure(rig.release("0.116.0"));
    launcher.start({});
    launcher.start_unit(supervisor_unit);
    REQUIRE_MESSAGE(wait_until([&] { return exists(rig.storage + "/persistent_state.yaml"); }, 20s),
                    "the supervisor wrote no state; log:\n"
                        << launcher.log());
    rig.storage_before = wired::snapshot(rig.storage);
    const std::string stopped = launcher.stop();
    REQUIRE_MESSAGE(stopped.empty(), stopped);
    REQUIRE_MESSAGE(rig.violations("0.116.0").empty(), joined(rig.violations("0.116.0")));
    REQUIRE(m.run({"systemctl", "stop", supervisor_unit}).exit_code == 0);
    rig.save_pristine();
}

}  // namespace

TEST_CASE("host crash matrix: a crash at every fault point of an install, then systemd's restart") {
    const std::string rootfs =
        bootable_rootfs({env_path("MYRIARCH_BIN"), env_path("MYRIARCH_FAKE_OPAMPSUPERVISOR"),
                         env_path("MYRIARCH_FAKE_OTELCOL")});
    if (rootfs.empty()) return;
    const auto t0 = std::chrono::steady_clock::now();
    Rig rig;
    rig.cfg.host_service_name = supervisor_unit;
    rig.cfg.host_poll_interval = "200ms";
    const std::string log = rig.dir / "updater.log";
    TempDir seed;
    seed_machine(seed, rig, log);
    BootOptions boot;
    boot.seed_dir = seed.path();
    boot.binds = {rig.dir.path()};
    BootedSystemd m(rootfs, boot);
    REQUIRE_MESSAGE(m.booted(), m.boot_state());
    UnitLauncher launcher(rig, m, log);
    first_start(rig, launcher, m);

    const std::string archive = rig.tar_gz_padded(rig.release("0.117.0"), "v117.tar.gz", 6);
    const Offer offer{"0.117.0", archive};
    const std::vector<FaultPass> passes =
        traced_install(rig, launcher, offer, "msg=\"update: state\" state=idle from=committed");
    const size_t commit = commit_pass(passes);
    check_install_coverage(passes);
    // By hand, one point again: MYR_HOST_CRASH_POINTS=<part of its label>.
    std::vector<FaultPass> chosen;
    std::vector<std::string> expected;
    const char* only = std::getenv("MYR_HOST_CRASH_POINTS");
    for (size_t i = 0; i < passes.size(); ++i) {
        if (only != nullptr && label(passes[i]).find(only) == std::string::npos) continue;
        chosen.push_back(passes[i]);
        expected.push_back(i >= commit ? "0.117.0" : "0.116.0");
    }
    const std::vector<std::string> violations =
        crash_each(rig, launcher, offer, chosen, [&expected](size_t i) { return expected[i]; });
    MESSAGE("host crash matrix: " << chosen.size() << " points, " << violations.size()
                                  << " violations, "
                                  << std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::steady_clock::now() - t0)
                                         .count()
                                  << " s");
    CHECK_MESSAGE(violations.empty(), joined(violations));
}
