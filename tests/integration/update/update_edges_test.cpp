// The install path at its edges (issue 22, findings 8-11), through the real static binary as PID 1
// of a new PID namespace: a spool leftover that cannot be removed, an artifact that drips for ever,
// a `validate` that leaves a daemon behind, and a second updater started on the same stateDir.
#include <doctest/doctest.h>
#include <unistd.h>

#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

// The pids (as seen from here) of the processes whose comm is `name`.
std::vector<std::string> processes_named(const std::string& name) {
    std::vector<std::string> out;
    for (const std::string& e : list_dir("/proc")) {
        if (e.find_first_not_of("0123456789") != std::string::npos) continue;
        std::string comm = read_file("/proc/" + e + "/comm");
        if (!comm.empty() && comm.back() == '\n') comm.pop_back();
        if (comm == name) out.push_back(e);
    }
    return out;
}

// Entries made immutable (chattr +i) for a test, made mutable again at its end so that the
// temporary directory can be removed whatever the outcome.
class Immutable {
  public:
    ~Immutable() {
        for (const std::string& p : paths_) run({"chattr", "-i", p});
    }
    // False when the file system (or the tool) cannot do it.
    bool add(const std::string& path) {
        if (run({"chattr", "+i", path}).exit_code != 0) return false;
        paths_.push_back(path);
        return true;
    }

  private:
    std::vector<std::string> paths_;
};

// A non-empty directory in the spool that no one can empty: a file in an immutable directory.
bool plant_stuck_dir(Immutable& imm, const std::string& path) {
    REQUIRE(run({"mkdir", "-p", path}).exit_code == 0);
    write_file(path + "/leftover", "x");
    return imm.add(path);
}

void check_installed(Rig& rig, Updater& u, const std::string& version, size_t from) {
    auto st = rig.wait_status(version, "", from);
    REQUIRE_MESSAGE(st, "no final status; record:\n" << rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(st->status == "Installed", st->error << "\nlog:\n" << u.log());
    std::vector<std::string> v;
    wait_until([&] { return (v = rig.violations(version)).empty(); }, 10s, 50ms);
    CHECK_MESSAGE(v.empty(), joined(v));
}

}  // namespace

TEST_CASE("update: spool leftovers that cannot be removed do not block the download") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.release("0.116.0"));
    Immutable imm;
    Updater u(rig.config());
    rig.settle(u);

    // One leftover of an older offer, and one in the way of the offered artifact's own part.
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    const std::string stale = rig.spool() + "/stale";
    const std::string part = rig.spool() + "/" + rig.sha_of(v117) + ".part";
    if (!plant_stuck_dir(imm, stale) || !plant_stuck_dir(imm, part)) {
        MYR_SKIP("chattr +i is not supported on " << rig.spool());
    }
    size_t from = rig.mark();
    rig.offer({"0.117.0", v117});
    check_installed(rig, u, "0.117.0", from);

    // The next install works as well, and each leftover was named in the log once.
    const std::string v118 = rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz");
    from = rig.mark();
    rig.offer({"0.118.0", v118});
    check_installed(rig, u, "0.118.0", from);
    CHECK(u.count("path=spool/stale ") == 1);
    CHECK(u.count("path=spool/" + rig.sha_of(v117) + ".part ") == 1);
    CHECK(wait_until(
        [&] {
            return list_dir(rig.spool()) ==
                   std::vector<std::string>{rig.sha_of(v117) + ".part", "stale"};
        },
        10s, 50ms));
    CHECK(rig.storage_unchanged());
    CHECK(u.stop() == 0);
}

TEST_CASE("update: an artifact that drips is cut off at update.downloadTimeout") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.release("0.116.0"), [](UpdaterConfig& c) { c.download_timeout = "3s"; });
    Updater u(rig.config());
    rig.settle(u);

    // One byte a second: never a stall, never an end.
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    size_t from = rig.mark();
    rig.offer({"0.117.0", v117, "drip=100000000"});
    auto st = rig.wait_status("0.117.0", "", from, 30s);
    REQUIRE_MESSAGE(st, "no final status; record:\n" << rig.record() << "\nlog:\n" << u.log());
    CHECK(st->status == "InstallFailed");
    CHECK_MESSAGE(st->error.find("download: exceeded update.downloadTimeout (3s) after ") !=
                      std::string::npos,
                  st->error);
    CHECK(st->has == "0.116.0");
    std::vector<std::string> v;
    wait_until([&] { return (v = rig.violations("0.116.0")).empty(); }, 10s, 50ms);
    CHECK_MESSAGE(v.empty(), joined(v));
    CHECK(rig.probe("/readyz") == 200);
    CHECK(rig.storage_unchanged());
    CHECK(u.stop() == 0);
}

TEST_CASE("update: what a passing validate leaves behind is killed with its process group") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.release("0.116.0"));
    Updater u(rig.config());
    rig.settle(u);

    const std::string daemon = "vd-" + std::to_string(::getpid());
    const std::string v117 =
        rig.tar_gz(rig.release("0.117.0", "validate_daemon=" + daemon), "v117.tar.gz");
    size_t from = rig.mark();
    rig.offer({"0.117.0", v117});
    check_installed(rig, u, "0.117.0", from);
    // Killed when validate returned, and reaped by PID 1: no such process, not even a zombie.
    std::vector<std::string> left;
    CHECK_MESSAGE(wait_until([&] { return (left = processes_named(daemon)).empty(); }, 10s, 50ms),
                  "still running: " << joined(left) << "\nlog:\n"
                                    << u.log());
    CHECK(
        u.log_has("msg=\"preflight: the staged binary left processes behind; killed its "
                  "process group\" command=\"" +
                  rig.install + "/.staging/"));
    CHECK(u.log_has("/otelcol-contrib validate\""));
    CHECK(u.stop() == 0);
}

TEST_CASE("update: a second updater on the same stateDir refuses to start and names the holder") {
    if (!can_run_pid1()) return;
    Rig rig;
    const std::string seed = rig.release("0.116.0");
    rig.configure(seed);
    Updater first(rig.config());
    rig.settle(first);
    const std::string lock = read_file(rig.state + "/.lock");
    CHECK_MESSAGE(lock.find("pid 1 ") == 0, lock);

    // The same volume, its own probe port (none): only the lock can stop it.
    UpdaterConfig c = rig.cfg;
    c.seed_binary = seed;
    c.health_port = 0;
    const std::string second_config = c.write(rig.dir / "second.yaml");
    {
        Updater second(second_config);
        CHECK(second.wait_exit(30s) == 1);
        CHECK_MESSAGE(second.log_has("is in use by another updater (pid 1 on "), second.log());
        CHECK_MESSAGE(!second.log_has("recovery: "), second.log());
    }
    // The first goes on as before: ready, its storage and volume untouched, its lock kept.
    CHECK(rig.probe("/readyz") == 200);
    CHECK(rig.storage_unchanged());
    CHECK(rig.violations("0.116.0").empty());
    CHECK(read_file(rig.state + "/.lock") == lock);
    CHECK(first.stop() == 0);

    // Once the first is gone, the lock is free again.
    const size_t from = rig.mark();
    Updater again(second_config);
    CHECK_MESSAGE(wait_until([&] { return rig.mark() > from && rig.connected(); }, 40s, 20ms),
                  again.log());
    CHECK(again.stop() == 0);
}
