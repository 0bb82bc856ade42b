// What a version is, end to end through the real binary as PID 1 (docs/update.md, "Versions"):
// an offered name is made canonical once, in Checking, and that name is the one the journal, the
// volume and the state files carry; what cannot name a version directory, a rebuild of the active
// version (build metadata or re-spun bytes) and a version too far from the supervisor's are
// refused in Checking, before a byte is downloaded and with the collector left running.
#include <doctest/doctest.h>

#include <chrono>

#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

// The final status of `o`, offered now.
Status final_status(Rig& rig, const Updater& u, const Offer& o) {
    size_t from = rig.mark();
    rig.offer(o);
    auto st = rig.wait_status(o.version, "", from);
    REQUIRE_MESSAGE(st, "no final status for " << o.version << "; record:\n"
                                               << rig.record() << "\nlog:\n"
                                               << u.log());
    return *st;
}

// An offer Checking must refuse: InstallFailed starting with `reason`, nothing downloaded, the
// collector never stopped, `active` still running.
void expect_refused(Rig& rig, const Updater& u, const Offer& o, const std::string& reason,
                    const std::string& active) {
    const size_t requests = rig.artifact_server->requests();
    const int stops = u.count("state=stopping ");
    Status st = final_status(rig, u, o);
    CHECK(st.status == "InstallFailed");
    CHECK_MESSAGE(st.error.rfind(reason, 0) == 0, "error: " << st.error);
    CHECK(st.has == active);
    CHECK(rig.artifact_server->requests() == requests);
    CHECK(u.count("state=stopping ") == stops);
    check_settled(rig, active);
}

}  // namespace

TEST_CASE("versions: a v-prefixed offer is installed under its canonical name") {
    if (!can_run_pid1()) return;
    Started started;
    auto& [rig, u, v117] = started;

    Status st = final_status(rig, u, {"v0.117.0", v117});
    CHECK_MESSAGE(st.status == "Installed", st.error << "\nlog:\n" << u.log());
    // The server's name stays the offered one; what the agent has is the version directory.
    CHECK(st.offered == "v0.117.0");
    CHECK(st.has == "0.117.0");
    check_settled(rig, "0.117.0");
    CHECK(rig.marker("0.117.0").previous == "0.116.0");
    CHECK(u.count("state=stopping ") == 1);
    CHECK(read_file(rig.state + "/last-attempt.json").find("\"version\":\"0.117.0\"") !=
          std::string::npos);
    CHECK(read_file(rig.state + "/packages.json").find("\"version\":\"0.117.0\"") !=
          std::string::npos);
    CHECK(u.stop() == 0);
}

TEST_CASE("versions: a version too long for a directory name is refused before the download") {
    if (!can_run_pid1()) return;
    Started started;
    auto& [rig, u, v117] = started;

    // 308 characters that parse: a pre-release identifier of 300.
    const std::string long_version = "0.117.0-" + std::string(300, 'a');
    expect_refused(rig, u, {long_version, v117}, "offered version \"0.117.0-aaaaaaaa", "0.116.0");
    auto st = rig.wait_status(long_version, "InstallFailed");
    REQUIRE(st);
    CHECK_MESSAGE(st->error.find("is 308 characters; a version names a directory on the volume "
                                 "and may have at most 128") != std::string::npos,
                  st->error);
    CHECK(st->error.size() < 300);
    CHECK(u.stop() == 0);
}

TEST_CASE("versions: a v-prefixed offer cut short by a crash is undone, then installed again") {
    // A kill -9 while the collector is stopped for a `v…` offer: the next start must parse the
    // journal it finds and undo the install; an interruption quarantines nothing (issue 23), so
    // the same offer again is installed.
    if (!can_run_pid1()) return;
    Rig rig;
    rig.first_start(rig.release("0.116.0"));
    const Offer offer{"v0.117.0", rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz")};
    {
        SpawnOptions crash;
        crash.env["MYRIARCH_FAULT"] = "update.swapping.before:crash@1";
        const size_t m = rig.mark();
        Updater u(rig.config(), Launch::pid1, crash);
        rig.await_start(u, m);
        rig.offer(offer);
        REQUIRE_MESSAGE(u.wait_exit(60s) == 137, "no crash; log:\n" << u.log());
    }
    const size_t requests = rig.artifact_server->requests();
    const size_t m = rig.mark();
    Updater u(rig.config());
    rig.await_start(u, m);
    CHECK_MESSAGE(!u.log_has("not a canonical version"), u.log());
    const std::string attempt = read_file(rig.state + "/last-attempt.json");
    CHECK_MESSAGE(attempt.find("\"outcome\":\"interrupted\"") != std::string::npos, attempt);
    CHECK_MESSAGE(attempt.find("\"version\":\"0.117.0\"") != std::string::npos, attempt);
    check_settled(rig, "0.116.0");

    Status st = final_status(rig, u, offer);
    CHECK_MESSAGE(st.status == "Installed", st.error);
    CHECK(rig.artifact_server->requests() > requests);
    check_settled(rig, "0.117.0");
    CHECK(u.stop() == 0);
}

TEST_CASE("versions: build metadata and re-spun bytes of the active version are refused") {
    if (!can_run_pid1()) return;
    Started started;
    auto& [rig, u, v117] = started;
    // The same version, rebuilt: other bytes, so another package hash.
    const std::string respun = rig.tar_gz(rig.release("0.117.0", "respun=1"), "respun.tar.gz");
    REQUIRE(rig.sha_of(v117) != rig.sha_of(respun));
    Status st = final_status(rig, u, {"0.117.0", v117});
    REQUIRE_MESSAGE(st.status == "Installed", st.error);

    SUBCASE("build metadata") {
        expect_refused(rig, u, {"0.117.0+build2", respun},
                       "version 0.117.0+build2 differs from the active 0.117.0 only in build "
                       "metadata, which does not order versions",
                       "0.117.0");
    }
    SUBCASE("re-spun bytes") {
        expect_refused(rig, u, {"0.117.0", respun},
                       "0.117.0 is active with package hash " + rig.sha_of(v117) +
                           "; the offer has hash " + rig.sha_of(respun) +
                           ": a re-spun release is not installed over the running one",
                       "0.117.0");
    }
    SUBCASE("the same bytes again are Installed") {
        // Another all_packages_hash makes it a new offer, found installed by Checking.
        size_t from = rig.mark();
        const std::string file = rig.dir / "same.txt";
        write_file(file, "name=otelcol-contrib\nversion=0.117.0\nurl=" + rig.url_of(v117) +
                             "\nsha256=" + rig.sha_of(v117) + "\nall_hash=" + std::string(64, 'b') +
                             "\ntype=0\n");
        std::ofstream(rig.commands, std::ios::app) << "release=" << file << "\n";
        auto again = rig.wait_status("0.117.0", "", from);
        REQUIRE_MESSAGE(again, rig.record());
        CHECK_MESSAGE(again->status == "Installed", again->error);
    }
    CHECK(u.stop() == 0);
}

TEST_CASE("versions: an offer more minor versions from the supervisor than maxMinorSkew") {
    if (!can_run_pid1()) return;
    Rig rig;
    // The product's default (1): the image's 0.116.0 is the supervisor's version.
    rig.configure(rig.release("0.116.0"), [](UpdaterConfig& c) { c.max_minor_skew.reset(); });
    Updater u(rig.config());
    rig.settle(u);
    const std::string v118 = rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz");
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");

    expect_refused(rig, u, {"0.118.0", v118},
                   "version 0.118.0 is 2 minor versions from the supervisor's 0.116.0 "
                   "(update.maxMinorSkew is 1)",
                   "0.116.0");
    expect_refused(rig, u, {"1.16.0", v118},
                   "version 1.16.0 has another major version than the supervisor's 0.116.0 "
                   "(update.maxMinorSkew is 1)",
                   "0.116.0");
    Status st = final_status(rig, u, {"0.117.0", v117});
    CHECK_MESSAGE(st.status == "Installed", st.error);
    check_settled(rig, "0.117.0");
    // From 0.117.0 the next minor is still two from the supervisor: refused.
    expect_refused(rig, u, {"0.118.0", v118}, "version 0.118.0 is 2 minor versions", "0.117.0");
    CHECK(u.stop() == 0);
}
