// What the server and the log are told when an install meets an odd input or a failing step
// (docs/update.md, "Reports"; issue 22): a commit that fails, a presigned URL that 404s, an offer
// with more download headers than the codec takes. The real static binary as PID 1, offered by
// the project's OpAMP test server, served by the artifact server (update_rig.hpp).
#include <doctest/doctest.h>

#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

// A presigned-style query string of about 430 characters whose signature is the secret.
const std::string kSecret(256, 'f');
std::string presigned_query() {
    return "status=404&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20261202%2F"
           "eu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20261202T000000Z&X-Amz-Expires=900&"
           "X-Amz-SignedHeaders=host&X-Amz-Signature=" +
           kSecret;
}

}  // namespace

TEST_CASE("update reports: a commit that fails is logged, reported and undone") {
    // The commit is the first pass of update.finish (the journal's removal and the state files);
    // an I/O error there must not leave the new version running while the journal still names
    // the install (the next start would switch back behind the server's back).
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.release("0.116.0"));
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    {
        SpawnOptions fault;
        fault.env["MYRIARCH_FAULT"] = "update.finish.before:fail@1";
        Updater u(rig.config(), Launch::pid1, fault);
        rig.settle(u);
        const size_t from = rig.mark();
        rig.offer({"0.117.0", v117});
        auto st = rig.wait_status("0.117.0", "", from);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK_MESSAGE(st->status == "InstallFailed", st->status << " " << st->error);
        CHECK_MESSAGE(st->error.rfind("commit: ", 0) == 0, st->error);
        CHECK_MESSAGE(st->error.find("injected") != std::string::npos, st->error);
        CHECK_MESSAGE(st->error.find("rolled back to 0.116.0") != std::string::npos, st->error);
        CHECK(st->has == "0.116.0");
        // The failure is in the log as what it is, with its cause; no "committed" follows it.
        CHECK_MESSAGE(wait_until([&] { return u.log_has("state=rolled-back"); }, 30s, 50ms),
                      u.log());
        CHECK_MESSAGE(u.log_has("reason=\"commit: "), u.log());
        check_settled(rig, "0.116.0");
        CHECK(read_file(rig.state + "/last-attempt.json").find("rolled-back") != std::string::npos);
        CHECK(u.stop() == 0);
    }
    // The next start finds what the report said: 0.116.0, no switch of its own.
    const size_t m = rig.mark();
    Updater u(rig.config());
    rig.await_start(u, m);
    check_settled(rig, "0.116.0");
    CHECK_FALSE(u.log_has("recovery: volume put back"));
    CHECK(u.stop() == 0);
}

TEST_CASE("update reports: offers refused before any change name their cause") {
    if (!can_run_pid1()) return;
    Started started;
    auto& [rig, u, v117] = started;

    SUBCASE("a presigned URL that 404s: the status first, never the query string") {
        Offer o{"0.117.0", v117, presigned_query()};
        CHECK(rig.url_of(v117, o.query).size() > 430);
        const size_t from = rig.mark();
        rig.offer(o);
        auto st = rig.wait_status("0.117.0", "", from);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK(st->status == "InstallFailed");
        MESSAGE("as reported: " << st->error);
        CHECK_MESSAGE(st->error.find("HTTP 404") != std::string::npos, st->error);
        CHECK_MESSAGE(st->error.find("/artifacts/v117.tar.gz") != std::string::npos, st->error);
        CHECK_MESSAGE(st->error.find("X-Amz") == std::string::npos, st->error);
        CHECK_MESSAGE(st->error.find(kSecret.substr(0, 16)) == std::string::npos, st->error);
        // The log says it too, and holds no part of the query string anywhere.
        CHECK_MESSAGE(wait_until([&] { return u.log_has("HTTP 404"); }, 10s, 50ms), u.log());
        CHECK(u.stop() == 0);
        CHECK_MESSAGE(!u.log_has("X-Amz"), u.log());
        CHECK_MESSAGE(!u.log_has(kSecret.substr(0, 16)), u.log());
    }
    SUBCASE("more download headers than the codec takes: that package only is refused") {
        Offer top{"0.117.0", v117};
        for (int i = 0; i < 33; ++i) top.headers.push_back("X-H" + std::to_string(i) + ": v");
        Offer addon{"1.0.0", v117};
        addon.name = "extra";
        addon.type = 1;
        const size_t from = rig.mark();
        rig.offer_all({top, addon});
        // Both packages are answered: the TopLevel one with the reason it was refused, the
        // other one as it would be without it (the rest of the message was decoded).
        auto st = rig.wait_status("0.117.0", "", from, 30s);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK(st->status == "InstallFailed");
        CHECK_MESSAGE(st->error.find("33 download headers, at most 32") != std::string::npos,
                      st->error);
        auto other = rig.wait_status("1.0.0", "", from, 10s, "extra");
        REQUIRE_MESSAGE(other, rig.record());
        CHECK(other->status == "InstallFailed");
        CHECK_MESSAGE(other->error == "unsupported package type", other->error);
        CHECK(u.log_has("33 download headers"));
        check_settled(rig, "0.116.0");
        CHECK(rig.artifact_server->requests() == 0);

        // The same offer within the budget installs: the refusal was about the headers alone.
        top.headers.resize(32);
        const size_t again = rig.mark();
        rig.offer_all({top, addon});
        st = rig.wait_status("0.117.0", "", again);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK_MESSAGE(st->status == "Installed", st->error);
        CHECK(u.stop() == 0);
    }
}
