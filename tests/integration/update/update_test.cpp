// The installer end to end (docs/update.md): the real static binary as PID 1 of a new PID
// namespace, offered release archives by the project's OpAMP test server and served by the
// artifact server; the stand-in collectors pass or fail their health, crash, hang, print another
// version or fail `validate` as their trailers say. Each case checks what the server was told,
// `current` and the markers, the volume oracle, /readyz and the supervisor's storage.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "test_signer.hpp"
#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

std::string seed(Rig& rig) {
    return rig.release("0.116.0");
}

// An install that must fail with an error starting with `reason`, leaving 0.116.0 active.
Status expect_failure(Rig& rig, Updater& u, const Offer& o, const std::string& reason,
                      Millis t = 60s) {
    size_t from = rig.mark();
    rig.offer(o);
    auto st = rig.wait_status(o.version, "", from, t);
    REQUIRE_MESSAGE(st, "no final status for " << o.version << "; record:\n"
                                               << rig.record() << "\nlog:\n"
                                               << u.log());
    CHECK(st->status == "InstallFailed");
    CHECK_MESSAGE(st->error.rfind(reason, 0) == 0, "error: " << st->error);
    CHECK(st->has == "0.116.0");
    check_settled(rig, "0.116.0");
    return *st;
}

}  // namespace

TEST_CASE("update: a healthy release is downloaded, swapped, checked and committed") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig), [](UpdaterConfig& c) { c.keep_versions = 1; });
    Updater u(rig.config());
    rig.settle(u);

    // Two installs in a row: after the second, GC keeps the active one and its previous only.
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    size_t from = rig.mark();
    rig.offer({"0.117.0", v117});
    auto st = rig.wait_status("0.117.0", "", from);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(st->status == "Installed", st->error);
    CHECK(st->has == "0.117.0");
    CHECK(rig.sequence("0.117.0", from) == "Installing Downloading Installing Installed");
    check_settled(rig, "0.117.0");
    CHECK(rig.marker("0.117.0").source == "update");
    CHECK(rig.marker("0.117.0").previous == "0.116.0");
    CHECK(exists(rig.state + "/packages.json"));
    CHECK(read_file(rig.state + "/last-attempt.json").find(rig.sha_of(v117)) != std::string::npos);
    CHECK(read_file(rig.state + "/packages.json").find("0.117.0") != std::string::npos);

    const std::string v118 = rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz");
    from = rig.mark();
    rig.offer({"0.118.0", v118});
    st = rig.wait_status("0.118.0", "", from);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(st->status == "Installed", st->error);
    check_settled(rig, "0.118.0");
    CHECK(rig.marker("0.118.0").previous == "0.117.0");
    CHECK(list_dir(rig.install + "/versions") == std::vector<std::string>{"0.117.0", "0.118.0"});
    // Every state change of both installs is in the log, although they came within the log's
    // rate-limit window (10 lines of one message per 10 s).
    for (const char* s : {"checking", "downloading", "verifying", "staging", "preflight",
                          "stopping", "swapping", "starting", "health-checking", "committed"}) {
        CAPTURE(s);
        CHECK(u.count(std::string("msg=\"update: state\" state=") + s + " ") == 2);
    }
    CHECK(u.stop() == 0);
}

TEST_CASE("update: a release that fails its health check is rolled back") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig));
    Updater u(rig.config());
    rig.settle(u);
    const std::string bad = rig.tar_gz(rig.release("0.117.0", "health=fail"), "bad.tar.gz");
    expect_failure(rig, u, {"0.117.0", bad}, "health check failed: collector http://127.0.0.1:");
    auto st = rig.wait_status("0.117.0", "InstallFailed");
    REQUIRE(st);
    CHECK_MESSAGE(st->error.find("; rolled back to 0.116.0") != std::string::npos, st->error);
    CHECK(st->error.find('\n') == std::string::npos);
    CHECK(rig.marker("0.116.0").source == "image");
    CHECK(read_file(rig.state + "/last-attempt.json").find("health check failed") !=
          std::string::npos);
    CHECK(u.stop() == 0);
}

TEST_CASE("update: releases that crash, hang or answer slowly at start") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig));
    Updater u(rig.config());
    rig.settle(u);

    SUBCASE("crashes at start") {
        const std::string a =
            rig.tar_gz(rig.release("0.117.0", "exit_after=100ms exit_code=3"), "crash.tar.gz");
        expect_failure(rig, u, {"0.117.0", a}, "");
        auto st = rig.wait_status("0.117.0", "InstallFailed");
        REQUIRE(st);
        CHECK_MESSAGE(st->error.find("rolled back to 0.116.0") != std::string::npos, st->error);
    }
    SUBCASE("hangs at start") {
        const std::string a = rig.tar_gz(rig.release("0.117.0", "start_delay=600s"), "hang.tar.gz");
        expect_failure(rig, u, {"0.117.0", a}, "health check failed");
        auto st = rig.wait_status("0.117.0", "InstallFailed");
        REQUIRE(st);
        CHECK_MESSAGE(st->error.find("rolled back to 0.116.0") != std::string::npos, st->error);
    }
    SUBCASE("answers health slowly, within the timeout") {
        const std::string a =
            rig.tar_gz(rig.release("0.117.0", "start_delay=1500ms"), "slow.tar.gz");
        size_t from = rig.mark();
        rig.offer({"0.117.0", a});
        auto st = rig.wait_status("0.117.0", "", from);
        REQUIRE_MESSAGE(st, rig.record());
        CHECK_MESSAGE(st->status == "Installed", st->error);
        check_settled(rig, "0.117.0");
    }
    CHECK(u.stop() == 0);
}

TEST_CASE("update: a release that crashes at start, under a supervisor that then fails its own") {
    // The real supervisor exits 1 when the collector's bootstrap run dies (docs/real-peers.md),
    // so a broken release is a crash loop of the child itself. With maxRestarts 2 it gives up
    // inside the critical section: the installer rolls back at once instead of waiting out the
    // 60 s healthTimeout, the container lives on, and the restored version is not charged those
    // crashes: its own first crash is restarted, not the end of the container.
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig), [](UpdaterConfig& c) {
        c.supervisor_command.push_back("--upstream-bootstrap");
        c.max_restarts = 2;
        c.restart_delay = "100ms";
        c.health_timeout = "60s";
    });
    Updater u(rig.config());
    rig.settle(u);
    const std::string a =
        rig.tar_gz(rig.release("0.117.0", "exit_after=100ms exit_code=3"), "crash.tar.gz");
    expect_failure(rig, u, {"0.117.0", a}, "health check failed: ", 90s);
    auto st = rig.wait_status("0.117.0", "InstallFailed");
    REQUIRE(st);
    CHECK_MESSAGE(st->error.find("rolled back to 0.116.0") != std::string::npos, st->error);
    CHECK_MESSAGE(u.log_has("crash loop: giving up"), u.log());
    CHECK_MESSAGE(u.out().find("could not get bootstrap info") != std::string::npos, u.out());

    // The restored supervisor's first crash: restarted after restartDelay.
    const int starts = u.count("child started");
    auto kids = children_of(u.pid());
    REQUIRE(kids.size() == 1);
    REQUIRE(::kill(kids[0], SIGKILL) == 0);
    CHECK_MESSAGE(wait_until([&] { return u.count("child started") > starts; }, 20s, 50ms),
                  u.log());
    CHECK(wait_until([&] { return rig.probe("/readyz") == 200; }, 20s, 50ms));
    CHECK(u.wait(0ms) == std::nullopt);  // still running
    CHECK(u.stop() == 0);
}

TEST_CASE("update: preflight refuses a release before the running one is stopped") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig));
    Updater u(rig.config());
    rig.settle(u);
    const int child_starts = u.count("child started");

    SUBCASE("prints another version") {
        const std::string a = rig.tar_gz(rig.release("0.118.0"), "other.tar.gz");
        expect_failure(rig, u, {"0.117.0", a}, "preflight: ");
        auto st = rig.wait_status("0.117.0", "InstallFailed");
        REQUIRE(st);
        CHECK_MESSAGE(st->error.find("0.118.0") != std::string::npos, st->error);
    }
    SUBCASE("validate fails, its output in the reason") {
        const std::string a = rig.tar_gz(
            rig.release("0.117.0", "validate=fail validate_message=unknown_receiver_foo"),
            "invalid.tar.gz");
        expect_failure(rig, u, {"0.117.0", a}, "preflight: ");
        auto st = rig.wait_status("0.117.0", "InstallFailed");
        REQUIRE(st);
        CHECK_MESSAGE(st->error.find("unknown receiver foo") != std::string::npos, st->error);
    }
    SUBCASE("validate hangs") {
        const std::string a = rig.tar_gz(rig.release("0.117.0", "validate=hang"), "vhang.tar.gz");
        expect_failure(rig, u, {"0.117.0", a}, "preflight: ", 120s);
    }
    // Refused before stopping: the running collector was never touched.
    CHECK(u.count("child started") == child_starts);
    CHECK(u.stop() == 0);
}

TEST_CASE("update: a rollback whose old version fails too keeps it and reports unhealthy") {
    if (!can_run_pid1()) return;
    Rig rig;
    // The seed's own health fails: nothing checks it at a start, but the rollback does.
    rig.configure(rig.release("0.116.0", "health=fail"));
    Updater u(rig.config());
    rig.settle(u);
    const std::string bad = rig.tar_gz(rig.release("0.117.0", "health=fail"), "bad.tar.gz");
    size_t from = rig.mark();
    rig.offer({"0.117.0", bad});
    auto st = rig.wait_status("0.117.0", "", from, 90s);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
    CHECK(st->status == "InstallFailed");
    CHECK(st->has == "0.116.0");
    CHECK_MESSAGE(st->error.find("; rolled back to 0.116.0, which fails its health check too: ") !=
                      std::string::npos,
                  st->error);
    CHECK_MESSAGE(rig.violations("0.116.0").empty(), joined(rig.violations("0.116.0")));
    CHECK(rig.storage_unchanged());
    // Never loops: once rolled back and idle it stays, and tries nothing more on its own.
    REQUIRE(u.wait_for_log("state=idle from=rolled-back", 10s));
    const int states = u.count("update: state");
    std::this_thread::sleep_for(3s);  // the scenario is "nothing happens for a while"
    CHECK(u.count("update: state") == states);
    // The agent reports the problem.
    CHECK(wait_until(
        [&] {
            for (auto& m : rig.server->messages()) {
                json_object* h = get(m.get(), "health");
                if (h && !opamp::flag(h, "healthy") &&
                    rig.record().find("fails its health check too") != std::string::npos) {
                    return true;
                }
            }
            return false;
        },
        10s, 100ms));
    CHECK(u.stop() == 0);
}

TEST_CASE("update: the Checking rules through the binary") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig), [](UpdaterConfig& c) { c.minimum_version = "0.100.0"; });
    Updater u(rig.config());
    rig.settle(u);
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");

    SUBCASE("a version that does not parse") {
        expect_failure(rig, u, {"0.117", v117}, "offered version \"0.117\" does not parse");
    }
    SUBCASE("below minimumVersion") {
        expect_failure(rig, u, {"0.99.0", v117},
                       "version 0.99.0 is below update.minimumVersion 0.100.0");
    }
    SUBCASE("a downgrade is refused") {
        expect_failure(rig, u, {"0.110.0", v117},
                       "version 0.110.0 is older than the active 0.116.0 (update.allowDowngrade "
                       "is false and it is not the previous version");
    }
    SUBCASE("the same version active: Installed without a download") {
        size_t from = rig.mark();
        rig.offer({"0.116.0", v117});
        auto st = rig.wait_status("0.116.0", "", from);
        REQUIRE_MESSAGE(st, rig.record());
        CHECK_MESSAGE(st->status == "Installed", st->error);
        CHECK(st->has == "0.116.0");
        CHECK(rig.artifact_server->requests() == 0);
        check_settled(rig, "0.116.0");
    }
    SUBCASE("a URL outside the allowed prefixes") {
        expect_failure(rig, u, {"0.117.0", v117, "", "http://127.0.0.1:9/elsewhere/v117.tar.gz"},
                       "download URL refused: http://127.0.0.1:9/elsewhere/v117.tar.gz");
        CHECK(rig.artifact_server->requests() == 0);
    }
    SUBCASE("an Addon package") {
        Offer addon{"1.0.0", v117};
        addon.name = "some-addon";
        addon.type = 1;
        size_t from = rig.mark();
        rig.offer(addon);
        auto st = rig.wait_status("1.0.0", "InstallFailed", from, 30s, "some-addon");
        REQUIRE_MESSAGE(st, rig.record());
        CHECK_MESSAGE(st->error.find("unsupported package type") != std::string::npos, st->error);
        check_settled(rig, "0.116.0");
    }
    SUBCASE("a content hash that does not match") {
        Offer o{"0.117.0", v117};
        o.sha256 = std::string(64, 'a');
        expect_failure(rig, u, o, "content hash mismatch: offered " + std::string(64, 'a'));
    }
    CHECK(u.stop() == 0);
}

TEST_CASE("update: one step back to previousVersion, and an offer that failed is quarantined") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig));
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    const std::string back = rig.tar_gz(rig.release("0.116.0"), "back.tar.gz");
    const std::string bad = rig.tar_gz(rig.release("0.118.0", "health=fail"), "bad.tar.gz");
    std::string first_reason;
    {
        Updater u(rig.config());
        rig.settle(u);
        size_t from = rig.mark();
        rig.offer({"0.117.0", v117});
        auto st = rig.wait_status("0.117.0", "", from);
        REQUIRE_MESSAGE(st, rig.record());
        REQUIRE_MESSAGE(st->status == "Installed", st->error);
        // The previous version is allowed although it is older.
        from = rig.mark();
        rig.offer({"0.116.0", back});
        st = rig.wait_status("0.116.0", "", from);
        REQUIRE_MESSAGE(st, rig.record());
        CHECK_MESSAGE(st->status == "Installed", st->error);
        check_settled(rig, "0.116.0");
        CHECK(rig.marker("0.116.0").source == "update");
        CHECK(rig.marker("0.116.0").previous == "0.117.0");
        // A release that fails; its reason is remembered in last-attempt.json.
        from = rig.mark();
        rig.offer({"0.118.0", bad});
        st = rig.wait_status("0.118.0", "", from);
        REQUIRE_MESSAGE(st, rig.record());
        REQUIRE(st->status == "InstallFailed");
        first_reason = st->error;
        // GC after the rollback: the failed 0.118.0 goes, the active one and its previous stay.
        CHECK(wait_until(
            [&] {
                return list_dir(rig.install + "/versions") ==
                       std::vector<std::string>{"0.116.0", "0.117.0"};
            },
            10s, 50ms));
        CHECK(u.stop() == 0);
    }
    // After a restart the same offer is quarantined (a failed health check is deterministic): no
    // byte is downloaded.
    const size_t requests = rig.artifact_server->requests();
    Updater u(rig.config());
    rig.settle(u);
    size_t from = rig.mark();
    rig.offer({"0.118.0", bad});
    auto st = rig.wait_status("0.118.0", "", from);
    REQUIRE_MESSAGE(st, rig.record());
    CHECK(st->status == "InstallFailed");
    CHECK_MESSAGE(st->error.rfind("quarantined: " + first_reason + " (until ", 0) == 0, st->error);
    CHECK(rig.artifact_server->requests() == requests);
    check_settled(rig, "0.116.0");
    CHECK(u.stop() == 0);
}

TEST_CASE("update: an archive battery through the binary") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig), [](UpdaterConfig& c) { c.max_artifact_size = "8MiB"; });
    Updater u(rig.config());
    rig.settle(u);
    const std::string bin = rig.release("0.117.0");
    struct Case {
        const char* kind;
        const char* reason;
    };
    const Case cases[] = {
        {"symlink", "stage: otelcol-contrib: refusing symlink member"},
        {"hardlink", "stage: otelcol-contrib: refusing hardlink member"},
        {"dotdot", "stage: ../escape: refusing member name with a '..' component"},
        {"absolute", "stage: /tmp/escape: refusing absolute member name"},
        {"device", "stage: otelcol-contrib: refusing character device member"},
        {"two", "stage: otelcol-contrib: refusing duplicate member"},
        {"wrong-name", "stage: otelcol-contrib: no member named otelcol-contrib"},
        {"bomb", "stage: "},
        {"truncated", "stage: otelcol-contrib: truncated or corrupt archive"},
    };
    for (const Case& c : cases) {
        const std::string kind = c.kind;
        CAPTURE(kind);
        // Each case its own version, so that no offer is the one before.
        const std::string name = rig.archive(c.kind, bin);
        Status st = expect_failure(rig, u, {"0.117.0", name}, c.reason);
        if (std::string(c.kind) == "bomb") {
            CHECK_MESSAGE(
                st.error.find("refusing archive that unpacks to more than") != std::string::npos,
                st.error);
        }
        CHECK(wired::entries(rig.install + "/versions") == std::vector<std::string>{"0.116.0"});
    }
    // A zip whose one member is the binary is installed.
    const std::string zip = rig.archive("zip", bin);
    size_t from = rig.mark();
    rig.offer({"0.117.0", zip});
    auto st = rig.wait_status("0.117.0", "", from);
    REQUIRE_MESSAGE(st, rig.record());
    CHECK_MESSAGE(st->status == "Installed", st->error);
    check_settled(rig, "0.117.0");
    CHECK(u.stop() == 0);
}

TEST_CASE("update: signed releases under a private test root") {
    if (!can_run_pid1()) return;
    if (std::string why = signer_unavailable(); !why.empty()) MYR_SKIP(why);
    Rig rig;
    const std::string good = rig.tar_gz(rig.release("0.117.0"), "signed.tar.gz");
    const std::string other = rig.tar_gz(rig.release("0.118.0"), "other.tar.gz");
    const std::string sig = rig.dir / "sigstore";
    sign_artifacts(sig, {rig.artifacts + "/" + good});
    const std::string ok = sig + "/cases/ok-v0.3/bundle.json";
    const std::string bad_sig = sig + "/cases/tampered-signature-resealed/bundle.json";
    auto signing = [&](bool required, const std::string& subject) {
        return [=](UpdaterConfig& c) {
            c.require_signature = required;
            c.trusted_root_file = sig + "/trusted_root.json";
            c.signer_subject = subject;
            c.signer_issuer = kSignerIssuer;
        };
    };
    auto signed_offer = [](const std::string& version, const std::string& file,
                           const std::string& bundle) {
        Offer o{version, file};
        o.signature_file = bundle;
        return o;
    };

    SUBCASE("a good bundle, signature required") {
        rig.configure(seed(rig), signing(true, kSignerSubject));
        Updater u(rig.config());
        rig.settle(u);
        expect_failure(rig, u, {"0.118.0", other},
                       "signature required (update.requireSignature) but the offer has none");
        size_t from = rig.mark();
        rig.offer(signed_offer("0.117.0", good, ok));
        auto st = rig.wait_status("0.117.0", "", from);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK_MESSAGE(st->status == "Installed", st->error);
        check_settled(rig, "0.117.0");
        CHECK(u.stop() == 0);
    }
    SUBCASE("the wrong identity") {
        rig.configure(seed(rig), signing(true, "https://github.com/someone/else"));
        Updater u(rig.config());
        rig.settle(u);
        expect_failure(rig, u, signed_offer("0.117.0", good, ok), "signature: identity");
        CHECK(u.stop() == 0);
    }
    SUBCASE("a tampered artifact") {
        rig.configure(seed(rig), signing(true, kSignerSubject));
        Updater u(rig.config());
        rig.settle(u);
        // The server's bytes changed after the offer was made: the content hash catches it.
        Offer swapped = signed_offer("0.117.0", other, ok);
        swapped.sha256 = rig.sha_of(good);
        expect_failure(rig, u, swapped, "content hash mismatch: offered " + rig.sha_of(good));
        // Other bytes offered with their own hash and the good bundle: the signature catches it.
        expect_failure(rig, u, signed_offer("0.118.0", other, ok), "signature: ");
        CHECK(u.stop() == 0);
    }
    SUBCASE("an invalid signature fails even when none is required") {
        rig.configure(seed(rig), signing(false, kSignerSubject));
        Updater u(rig.config());
        rig.settle(u);
        expect_failure(rig, u, signed_offer("0.117.0", good, bad_sig), "signature: ");
        CHECK(u.stop() == 0);
    }
}

TEST_CASE("update: the signer identity is bound to the offered version") {
    if (!can_run_pid1()) return;
    if (std::string why = signer_unavailable(); !why.empty()) MYR_SKIP(why);
    Rig rig;
    // One archive, signed by the release workflow at the tag of its version (Fulcio's Source
    // Repository Ref and Build Config URI say v0.117.0), as an upstream release is.
    const std::string good = rig.tar_gz(rig.release("0.117.0"), "signed.tar.gz");
    const std::string sig = rig.dir / "sigstore";
    sign_artifacts(sig, {rig.artifacts + "/" + good + "::refs/tags/v0.117.0"});
    const std::string bundle = sig + "/signed/signed.tar.gz.json";
    rig.configure(seed(rig), [&](UpdaterConfig& c) {
        c.require_signature = true;
        c.trusted_root_file = sig + "/trusted_root.json";
        c.signer_subject = kSignerSubject;
        c.signer_issuer = kSignerIssuer;
        c.signer_fields = {
            {"sourceRepositoryRef", "refs/tags/v{version}"},
            {"buildConfigUri",
             "https://github.com/example/release/.github/workflows/release.yml@refs/tags/"
             "v{version}"},
            {"sourceRepositoryUri", "https://github.com/example/release"},
            {"githubWorkflowName", "Release"},
        };
    });
    Updater u(rig.config());
    rig.settle(u);
    // The same validly signed bytes offered under a newer version label: refused at the signature,
    // naming the field, and nothing of it reaches the volume.
    Offer relabelled{"0.118.0", good};
    relabelled.signature_file = bundle;
    expect_failure(rig, u, relabelled,
                   "signature: identity: sourceRepositoryRef: expected \"refs/tags/v0.118.0\", "
                   "certificate has \"refs/tags/v0.117.0\"");
    CHECK(wired::entries(rig.install + "/versions") == std::vector<std::string>{"0.116.0"});
    // Offered as what it is, it is installed.
    Offer honest{"0.117.0", good};
    honest.signature_file = bundle;
    size_t from = rig.mark();
    rig.offer(honest);
    auto st = rig.wait_status("0.117.0", "", from);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(st->status == "Installed", st->error);
    check_settled(rig, "0.117.0");
    CHECK(u.stop() == 0);
}

TEST_CASE("update: offers during an install") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig));
    Updater u(rig.config());
    rig.settle(u);
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    const std::string v118 = rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz");

    SUBCASE("the same offer again is ignored") {
        // drip=3: three seconds of downloading, during which the offer comes again.
        size_t from = rig.mark();
        rig.offer({"0.117.0", v117, "drip=3"});
        REQUIRE_MESSAGE(rig.wait_status("0.117.0", "Downloading", from, 20s), rig.record());
        rig.offer({"0.117.0", v117, "drip=3"});
        auto st = rig.wait_status("0.117.0", "", from);
        REQUIRE_MESSAGE(st, rig.record());
        CHECK_MESSAGE(st->status == "Installed", st->error);
        CHECK(rig.artifact_server->requests() == 1);
        check_settled(rig, "0.117.0");
    }
    SUBCASE("a different offer cancels a download and the latest wins") {
        size_t from = rig.mark();
        rig.offer({"0.117.0", v117, "drip=60"});
        REQUIRE_MESSAGE(rig.wait_status("0.117.0", "Downloading", from, 20s), rig.record());
        rig.offer({"0.118.0", v118});
        auto st = rig.wait_status("0.118.0", "", from);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK_MESSAGE(st->status == "Installed", st->error);
        check_settled(rig, "0.118.0");
        CHECK(rig.marker("0.118.0").previous == "0.116.0");
        CHECK(!exists(rig.install + "/versions/0.117.0"));
    }
    SUBCASE("an offer during the critical section waits for its end") {
        // start_delay: the health check of 0.117.0 takes a while, inside the critical section.
        const std::string slow =
            rig.tar_gz(rig.release("0.117.0", "start_delay=2s"), "slow.tar.gz");
        size_t from = rig.mark();
        rig.offer({"0.117.0", slow});
        REQUIRE_MESSAGE(wait_until([&] { return u.log_has("state=health-checking"); }, 30s, 20ms),
                        u.log());
        CHECK(rig.probe("/readyz") == 503);
        rig.offer({"0.118.0", v118});
        auto st = rig.wait_status("0.118.0", "", from);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK_MESSAGE(st->status == "Installed", st->error);
        check_settled(rig, "0.118.0");
        // 0.117.0 was committed before 0.118.0 began: it is the previous version.
        CHECK(rig.marker("0.118.0").previous == "0.117.0");
        CHECK(rig.marker("0.117.0").previous == "0.116.0");
    }
    CHECK(u.stop() == 0);
}

TEST_CASE("update: TERM during an install") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(seed(rig));
    const std::string v117 = rig.tar_gz(rig.release("0.117.0", "start_delay=2s"), "v117.tar.gz");

    SUBCASE("while downloading: dropped, nothing changed, exit 0") {
        {
            Updater u(rig.config());
            rig.settle(u);
            size_t from = rig.mark();
            rig.offer({"0.117.0", v117, "drip=60"});
            REQUIRE_MESSAGE(rig.wait_status("0.117.0", "Downloading", from, 20s), rig.record());
            CHECK(u.stop(15s) == 0);
            CHECK(rig.current() == "versions/0.116.0");
            CHECK(!exists(rig.install + "/versions/0.117.0"));
        }
        // The next start cleans what the dropped install left (its journal), keeping only its
        // download for the same offer to resume.
        Updater u(rig.config());
        rig.settle(u);
        check_settled(rig, "0.116.0", rig.sha_of(v117));
        CHECK(read_file(rig.state + "/last-attempt.json").find("interrupted") != std::string::npos);
        CHECK(u.stop() == 0);
    }
    SUBCASE("during the health check: waits for the commit, then exits 0") {
        Updater u(rig.config());
        rig.settle(u);
        rig.offer({"0.117.0", v117});
        REQUIRE_MESSAGE(wait_until([&] { return u.log_has("state=health-checking"); }, 30s, 20ms),
                        u.log());
        auto t0 = std::chrono::steady_clock::now();
        u.signal(SIGTERM);
        int code = u.wait_exit(40s);
        auto took = std::chrono::steady_clock::now() - t0;
        CHECK_MESSAGE(code == 0, "exit " << code << "; log:\n" << u.log());
        // 2 × stopTimeout (5 s) + 2 × healthTimeout (4 s).
        CHECK(took < 18s);
        CHECK(u.log_has("state=committed"));
        CHECK_MESSAGE(rig.violations("0.117.0").empty(), joined(rig.violations("0.117.0")));
        CHECK(rig.storage_unchanged());
    }
}
