// The two failure classes through the real static binary as PID 1 (issue 23, item 1,
// docs/update.md "Failure classes"): a transient failure (503s) is retried inside the same install
// until update.retryFor runs out, and does not quarantine; a deterministic one (a hash mismatch)
// quarantines the package hash until `myriarch-updater forget` lifts it or the offer changes.
#include <doctest/doctest.h>

#include <chrono>

#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

// The rig started on the image's 0.116.0, with `retry_for` as update.retryFor ("" = the default).
struct Retrying {
    explicit Retrying(const std::string& retry_for)
        : u((rig.configure(rig.release("0.116.0"),
                           [&](UpdaterConfig& c) { c.retry_for = retry_for; }),
             rig.config())),
          v117(rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz")) {
        rig.settle(u);
    }
    Rig rig;
    Updater u;
    std::string v117;
};

std::string last_attempt(const Rig& rig) {
    return read_file(rig.state + "/last-attempt.json");
}

// last-attempt.json is written by the clean-up that follows the report: waited for.
bool attempt_says(const Rig& rig, const std::string& text) {
    return wait_until([&] { return last_attempt(rig).find(text) != std::string::npos; }, 10s, 50ms);
}

// The Downloading statuses that said "retrying: …", from record line `from` on.
std::vector<std::string> retrying(const Rig& rig, size_t from) {
    std::vector<std::string> out;
    for (const Status& s : rig.statuses(from)) {
        if (s.status == "Downloading" && s.error.rfind("retrying: ", 0) == 0) {
            out.push_back(s.error);
        }
    }
    return out;
}

// Offers `o` and waits for its final status (Installed or InstallFailed); `from` is set to the
// record line the offer was made at.
Status final_status(Rig& rig, const Updater& u, const Offer& o, size_t& from, Millis t = 60s) {
    from = rig.mark();
    rig.offer(o);
    auto st = rig.wait_status(o.version, "", from, t);
    REQUIRE_MESSAGE(st, "no final status; log:\n" << u.log());
    return *st;
}

RunResult forget(const Rig& rig, const std::string& hash = "") {
    std::vector<std::string> argv{updater_bin(), "forget", "--config", rig.config()};
    if (!hash.empty()) argv.insert(argv.end(), {"--package-hash", hash});
    return run(argv);
}

}  // namespace

TEST_CASE("retry: 503 for 60 s, then served: Installed without a re-offer, retrying in between") {
    if (!can_run_pid1()) return;
    Retrying r("");  // update.retryFor: the default, 6h
    auto& [rig, u, v117] = r;
    size_t from = 0;
    const auto t0 = std::chrono::steady_clock::now();
    Status st = final_status(rig, u, {"0.117.0", v117, "fail_for=60"}, from, 240s);
    const auto took =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - t0);
    CHECK_MESSAGE(st.status == "Installed", st.error << "\nlog:\n" << u.log());
    const std::vector<std::string> said = retrying(rig, from);
    REQUIRE_MESSAGE(!said.empty(), "no \"retrying\" status; sequence: "
                                       << rig.sequence("0.117.0", from) << "\nlog:\n"
                                       << u.log());
    CHECK_MESSAGE(said.front().find("HTTP 503") != std::string::npos, said.front());
    MESSAGE("503 for 60 s: Installed after " << took.count() << " s, "
                                             << rig.artifact_server->requests() << " requests, "
                                             << said.size() << " retrying statuses");
    check_settled(rig, "0.117.0");
    CHECK(u.stop() == 0);
}

TEST_CASE("retry: retryFor 30s ends the install, not quarantined: the same offer installs") {
    if (!can_run_pid1()) return;
    Retrying r("30s");
    auto& [rig, u, v117] = r;
    size_t from = 0;
    const Offer offer{"0.117.0", v117, "fail_for=60"};
    Status st = final_status(rig, u, offer, from, 120s);
    CHECK(st.status == "InstallFailed");
    CHECK_MESSAGE(st.error.find("HTTP 503") != std::string::npos, st.error);
    CHECK_MESSAGE(st.error.find("(update.retryFor is 30s)") != std::string::npos, st.error);
    CHECK(!retrying(rig, from).empty());
    CHECK_MESSAGE(attempt_says(rig, "\"class\":\"transient\""), last_attempt(rig));
    check_settled(rig, "0.116.0");
    CHECK(u.stop() == 0);

    // The same offer after a restart is tried again (the server answers 503 a while longer: the
    // new install retries through it).
    Updater again(rig.config());
    rig.settle(again);
    const size_t requests = rig.artifact_server->requests();
    st = final_status(rig, again, offer, from, 120s);
    CHECK_MESSAGE(st.status == "Installed", st.error << "\nlog:\n" << again.log());
    CHECK(rig.artifact_server->requests() > requests);
    check_settled(rig, "0.117.0");
    CHECK(again.stop() == 0);
}

TEST_CASE(
    "retry: a hash mismatch is quarantined, forget lifts it while PID 1 runs, a new hash "
    "installs") {
    if (!can_run_pid1()) return;
    Retrying r("");
    auto& [rig, u, v117] = r;
    Offer bad{"0.117.0", v117};
    bad.sha256 = std::string(64, 'a');
    size_t from = 0;
    Status st = final_status(rig, u, bad, from);
    REQUIRE(st.status == "InstallFailed");
    const std::string first_reason = st.error;
    CHECK(first_reason.rfind("content hash mismatch", 0) == 0);
    CHECK_MESSAGE(attempt_says(rig, "\"class\":\"deterministic\""), last_attempt(rig));
    check_settled(rig, "0.116.0");
    CHECK(u.stop() == 0);

    // The same offer after a restart: the recorded failure, and no request for the artifact.
    std::string hash;
    {
        Updater quarantined(rig.config());
        rig.settle(quarantined);
        const size_t requests = rig.artifact_server->requests();
        st = final_status(rig, quarantined, bad, from);
        CHECK(st.status == "InstallFailed");
        CHECK_MESSAGE(st.error.rfind("quarantined: " + first_reason + " (until ", 0) == 0,
                      st.error);
        CHECK(rig.artifact_server->requests() == requests);

        // forget while PID 1 runs: another hash lifts nothing, the recorded one is lifted.
        const std::string text = last_attempt(rig);
        const size_t at = text.find("\"packageHash\":\"");
        REQUIRE(at != std::string::npos);
        hash = text.substr(at + 15, text.find('"', at + 15) - at - 15);
        RunResult other = forget(rig, std::string(64, 'b'));
        CHECK_MESSAGE(other.exit_code == 0, other.err);
        CHECK_MESSAGE(other.out.find("nothing to lift") != std::string::npos, other.out);
        RunResult lifted = forget(rig, hash);
        CHECK_MESSAGE(lifted.exit_code == 0, lifted.err);
        CHECK_MESSAGE(lifted.out.find("lifted the quarantine of 0.117.0") != std::string::npos,
                      lifted.out);
        CHECK(last_attempt(rig).find("\"lifted\":") != std::string::npos);
        CHECK(quarantined.stop() == 0);
    }

    // Lifted: the same offer is downloaded again (and fails the same way, deterministic again).
    Updater after(rig.config());
    rig.settle(after);
    const size_t requests = rig.artifact_server->requests();
    st = final_status(rig, after, bad, from);
    CHECK(st.status == "InstallFailed");
    CHECK_MESSAGE(st.error == first_reason, st.error);
    CHECK(rig.artifact_server->requests() > requests);

    // A new hash (the offer changed) installs.
    st = final_status(rig, after, {"0.117.0", v117}, from);
    CHECK_MESSAGE(st.status == "Installed", st.error);
    check_settled(rig, "0.117.0");
    CHECK(after.stop() == 0);
}
