// The trust inputs of an install through the real binary as PID 1 (issue 24, items 5 and 6;
// docs/sigstore.md "The trusted root as a living file", docs/update.md "The signature, before
// the download"): an unusable trusted root stops the start and `validate`; a root replaced the
// way the kubelet replaces a ConfigMap is used by the next install, a broken one is ignored; a
// refused signature costs the artifact server no request.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <regex>

#include "test_signer.hpp"
#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

std::string seed(Rig& rig) {
    return rig.release("0.116.0");
}

std::string public_good() {
    return data_dir() + "/sigstore-conformance/public-good-trusted-root.json";
}

// A directory laid out as the kubelet mounts a ConfigMap: `trusted_root.json` ->
// `..data/trusted_root.json`, `..data` -> a timestamped directory. publish() writes a new
// timestamped directory and renames a new `..data` symlink over the old one, atomically, as the
// kubelet's AtomicWriter does.
struct ConfigMapDir {
    std::string dir;
    int n = 0;
    std::string file() const { return dir + "/trusted_root.json"; }
    void publish(const std::string& content) {
        const std::string ts = "..2026_12_03_13_00_0" + std::to_string(++n);
        REQUIRE(::mkdir((dir + "/" + ts).c_str(), 0755) == 0);
        write_file(dir + "/" + ts + "/trusted_root.json", content);
        REQUIRE(::symlink(ts.c_str(), (dir + "/..data_tmp").c_str()) == 0);
        REQUIRE(::rename((dir + "/..data_tmp").c_str(), (dir + "/..data").c_str()) == 0);
        if (n == 1) REQUIRE(::symlink("..data/trusted_root.json", file().c_str()) == 0);
    }
};

// Whether the artifact server was asked for `file` (its request record names each path).
bool requested(const Rig& rig, const std::string& file) {
    return rig.artifact_server->stats().find("/" + file + "\"") != std::string::npos;
}

Offer signed_offer(const std::string& version, const std::string& file, const std::string& bundle) {
    Offer o{version, file};
    o.signature_file = bundle;
    return o;
}

// Offers `o` and returns the error it failed with, once checked that it failed before its
// download: 0.116.0 still active and settled, no request for the artifact, not one byte served.
std::string refused_unfetched(Rig& rig, const Updater& u, const Offer& o) {
    size_t from = rig.mark();
    rig.offer(o);
    auto st = rig.wait_status(o.version, "", from);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
    CHECK(st->status == "InstallFailed");
    check_settled(rig, "0.116.0");
    CHECK_MESSAGE(!requested(rig, o.file), rig.artifact_server->stats());
    CHECK(rig.artifact_server->bytes_served() == 0);
    return st->error;
}

// `status --json`'s trustedRoot.ageSeconds, or -1.
long long status_root_age(const Rig& rig) {
    RunResult r = run({updater_bin(), "status", "--config", rig.config(), "--json"});
    std::smatch m;
    if (!std::regex_search(r.out, m, std::regex("\"ageSeconds\": *([0-9]+)"))) return -1;
    return std::stoll(m[1]);
}

constexpr double kDay = 86400;

}  // namespace

TEST_CASE("trust: requireSignature with an unusable trusted root refuses the start and validate") {
    if (!can_run_pid1()) return;
    Rig rig;
    const std::string dir = rig.dir / "roots";
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
    write_file(dir + "/malformed.json", "{\"mediaType\": ");
    write_file(dir + "/no-ca.json",
               R"({"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",)"
               R"( "tlogs": [], "certificateAuthorities": []})");
    struct Case {
        const char* what;
        std::string path;
        std::string reason;  // what the error says after "trusted root"
    };
    const Case cases[] = {
        {"missing", dir + "/none.json", ": " + dir + "/none.json: No such file or directory"},
        {"malformed", dir + "/malformed.json", ": "},
        {"a directory", dir, ": " + dir + ": not a regular file"},
        {"no CA", dir + "/no-ca.json",
         " " + dir + "/no-ca.json: no certificate authority (Fulcio)"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.what);
        rig.configure(seed(rig), [&](UpdaterConfig& u) {
            u.require_signature = true;
            u.trusted_root_file = c.path;
            u.signer_subject = kSignerSubject;
            u.signer_issuer = kSignerIssuer;
        });
        RunResult v =
            run({updater_bin(), "validate", "--config", rig.config(), "--mode", "container"});
        CHECK(v.exit_code == 1);
        CHECK_MESSAGE(v.err.find("myriarch-updater: update.trustedRootFile: trusted root" +
                                 c.reason) != std::string::npos,
                      v.err);
        Updater u(rig.config());
        CHECK(u.wait_exit(30s) == 1);
        const std::string want =
            "refusing to start: update.requireSignature is true and the trusted root is "
            "unusable: trusted root" +
            c.reason;
        CHECK_MESSAGE(u.log().find(want) != std::string::npos, u.log());
        // Refused before anything was touched: no seed, no supervisor.
        CHECK_FALSE(exists(rig.install + "/current"));
        CHECK_FALSE(exists(rig.storage + "/persistent_state.yaml"));
    }
    // A usable root passes validate; without requireSignature a missing one is no error.
    rig.configure(seed(rig), [&](UpdaterConfig& u) {
        u.require_signature = true;
        u.trusted_root_file = public_good();
        u.signer_subject = kSignerSubject;
        u.signer_issuer = kSignerIssuer;
    });
    RunResult ok =
        run({updater_bin(), "validate", "--config", rig.config(), "--mode", "container"});
    CHECK_MESSAGE(ok.exit_code == 0, ok.err);
    rig.configure(seed(rig), [&](UpdaterConfig& u) { u.trusted_root_file = dir + "/none.json"; });
    RunResult off =
        run({updater_bin(), "validate", "--config", rig.config(), "--mode", "container"});
    CHECK_MESSAGE(off.exit_code == 0, off.err);
}

TEST_CASE("trust: a refused signature is refused before the download: no request, no byte") {
    if (!can_run_pid1()) return;
    if (std::string why = signer_unavailable(); !why.empty()) MYR_SKIP(why);
    Rig rig;
    const std::string good = rig.tar_gz(rig.release("0.117.0"), "signed.tar.gz");
    const std::string sig = rig.dir / "sigstore";
    sign_artifacts(sig, {rig.artifacts + "/" + good});
    rig.configure(seed(rig), [&](UpdaterConfig& c) {
        c.require_signature = true;
        c.trusted_root_file = sig + "/trusted_root.json";
        c.signer_subject =
            "https://github.com/someone/else/.github/workflows/release.yml@refs/"
            "tags/v0.117.0";
        c.signer_issuer = kSignerIssuer;
    });
    Updater u(rig.config());
    rig.settle(u);
    const std::string error =
        refused_unfetched(rig, u, signed_offer("0.117.0", good, sig + "/signed/" + good + ".json"));
    // The identity field that did not match is named.
    CHECK_MESSAGE(error.rfind("signature: identity: ", 0) == 0, error);
    CHECK_MESSAGE(error.find("subject") != std::string::npos, error);
    // Counted as every refused signature is.
    Samples s = scrape(rig);
    CHECK(value(s, attempts("failed")) == 1);
    CHECK(value(s, rollbacks("verify")) == 1);
    // Deterministic: recorded so, and the same offer is quarantined (docs/update.md).
    CHECK_MESSAGE(read_file(rig.state + "/last-attempt.json").find("\"class\":\"deterministic\"") !=
                      std::string::npos,
                  read_file(rig.state + "/last-attempt.json"));
    CHECK(u.stop() == 0);
}

TEST_CASE("trust: an offer signed for another tag of the workflow is refused before download") {
    if (!can_run_pid1()) return;
    if (std::string why = signer_unavailable(); !why.empty()) MYR_SKIP(why);
    Rig rig;
    // The release workflow signed this 0.118.0 archive at the tag v0.117.0 (its certificate's
    // Source Repository Ref): a server offering it as 0.118.0 offers something signed for another
    // tag of the same workflow.
    const std::string other_tag = rig.tar_gz(rig.release("0.118.0"), "other-tag.tar.gz");
    const std::string sig = rig.dir / "sigstore";
    sign_artifacts(sig, {rig.artifacts + "/" + other_tag + "::refs/tags/v0.117.0"});
    rig.configure(seed(rig), [&](UpdaterConfig& c) {
        c.require_signature = true;
        c.trusted_root_file = sig + "/trusted_root.json";
        c.signer_subject = kSignerSubject;
        c.signer_issuer = kSignerIssuer;
        c.signer_fields = {{"sourceRepositoryRef", "refs/tags/v{version}"}};
    });
    Updater u(rig.config());
    rig.settle(u);
    const std::string error = refused_unfetched(
        rig, u, signed_offer("0.118.0", other_tag, sig + "/signed/" + other_tag + ".json"));
    CHECK_MESSAGE(error ==
                      "signature: identity: sourceRepositoryRef: expected \"refs/tags/v0.118.0\", "
                      "certificate has \"refs/tags/v0.117.0\"",
                  error);
    CHECK(u.stop() == 0);
}

TEST_CASE("trust: a ConfigMap update of the root is used by the next install; a broken one not") {
    if (!can_run_pid1()) return;
    if (std::string why = signer_unavailable(); !why.empty()) MYR_SKIP(why);
    Rig rig;
    // Root A signs nothing offered here; root B signs 0.117.0, 0.118.0 and 0.119.0.
    const std::string a_only = rig.tar_gz(rig.release("0.117.0", "a"), "a-only.tar.gz");
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    const std::string v118 = rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz");
    const std::string v119 = rig.tar_gz(rig.release("0.119.0"), "v119.tar.gz");
    const std::string sig_a = rig.dir / "sigstore-a";
    const std::string sig_b = rig.dir / "sigstore-b";
    sign_artifacts(sig_a, {rig.artifacts + "/" + a_only});
    sign_artifacts(sig_b, {rig.artifacts + "/" + v117, rig.artifacts + "/" + v118,
                           rig.artifacts + "/" + v119});
    // Root A made old (every validity start in 2020): its age tells it apart from B's (a day).
    const std::string root_a = std::regex_replace(read_file(sig_a + "/trusted_root.json"),
                                                  std::regex("\"start\": *\"[^\"]*\""),
                                                  "\"start\": \"2020-01-01T00:00:00Z\"");
    ConfigMapDir cm{rig.dir / "trust"};
    REQUIRE(::mkdir(cm.dir.c_str(), 0755) == 0);
    cm.publish(root_a);
    rig.configure(seed(rig), [&](UpdaterConfig& c) {
        c.require_signature = true;
        c.trusted_root_file = cm.file();
        c.signer_subject = kSignerSubject;
        c.signer_issuer = kSignerIssuer;
    });
    Updater u(rig.config());
    rig.settle(u);
    CHECK_MESSAGE(u.log_has("trusted root loaded"), u.log());
    CHECK(value(scrape(rig), "myriarch_trusted_root_age_seconds") > 5 * 365 * kDay);

    // Signed under B, offered while A is in use: refused, not fetched.
    const std::string b117 = sig_b + "/signed/" + v117 + ".json";
    size_t from = rig.mark();
    rig.offer(signed_offer("0.117.0", v117, b117));
    auto refused = rig.wait_status("0.117.0", "", from);
    REQUIRE_MESSAGE(refused, rig.record() << "\nlog:\n" << u.log());
    CHECK(refused->status == "InstallFailed");
    CHECK_MESSAGE(refused->error.rfind("signature: ", 0) == 0, refused->error);
    CHECK_FALSE(requested(rig, v117));

    // The ConfigMap now carries B: taken at the next look, logged with its age.
    cm.publish(read_file(sig_b + "/trusted_root.json"));
    REQUIRE_MESSAGE(u.wait_for_log("trusted root reloaded", 30s), u.log());
    std::smatch m;
    const std::string log = u.log();
    CHECK_MESSAGE(std::regex_search(log, m, std::regex("trusted root reloaded.*age=\"?1d ")), log);
    CHECK(value(scrape(rig), "myriarch_trusted_root_age_seconds") < 3 * kDay);
    const long long status_age = status_root_age(rig);
    CHECK(status_age >= 0);
    CHECK(status_age < 3 * kDay);

    // Issue 43 item 2: the same offer sent again now installs. Its refusal was recorded under
    // root A (last-attempt.json "trust"), so the quarantine does not hold under B; and the offer
    // that failed is processed again when sent again (issue 35), after its backoff step.
    CHECK_MESSAGE(
        read_file(rig.state + "/last-attempt.json").find("\"trust\":") != std::string::npos,
        read_file(rig.state + "/last-attempt.json"));
    from = rig.mark();
    rig.offer(signed_offer("0.117.0", v117, b117));
    auto again = rig.wait_status("0.117.0", "Installed", from, 60s);
    REQUIRE_MESSAGE(again, rig.record() << "\nlog:\n" << u.log());
    CHECK(requested(rig, v117));

    // The next release signed under B installs.
    from = rig.mark();
    rig.offer(signed_offer("0.118.0", v118, sig_b + "/signed/" + v118 + ".json"));
    auto installed = rig.wait_status("0.118.0", "", from);
    REQUIRE_MESSAGE(installed, rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(installed->status == "Installed", installed->error << "\nlog:\n" << u.log());
    check_settled(rig, "0.118.0");
    CHECK(requested(rig, v118));

    // A broken replacement: ignored with a log line; B stays in use for the next install.
    cm.publish("{ \"mediaType\": broken");
    REQUIRE_MESSAGE(u.wait_for_log("new file ignored; the previous one stays in use", 30s),
                    u.log());
    from = rig.mark();
    rig.offer(signed_offer("0.119.0", v119, sig_b + "/signed/" + v119 + ".json"));
    auto kept = rig.wait_status("0.119.0", "", from);
    REQUIRE_MESSAGE(kept, rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(kept->status == "Installed", kept->error << "\nlog:\n" << u.log());
    CHECK(value(scrape(rig), "myriarch_trusted_root_age_seconds") < 3 * kDay);
    CHECK(u.stop() == 0);
}
