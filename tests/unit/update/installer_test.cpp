#include "update/installer.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cerrno>

#include "core/hex.hpp"
#include "fake_ports.hpp"

using namespace myr;
using namespace myr::update;
using namespace myr::update::testing;
using namespace std::chrono_literals;

namespace {

Settings settings() {
    Settings s;
    s.require_signature = false;
    s.health_timeout = 60s;
    s.health_successes = 3;
    s.health_interval = 2s;
    s.supervisor_health_url = kSupervisorHealth;
    s.collector_health_url = kCollectorHealth;
    s.config_file = "/etc/otelcol/effective.yaml";
    s.stop_timeout = 30s;
    s.trial_period = 0s;  // the trial's own cases set it
    return s;
}

Offer offer_of(const std::string& version, char hash = 'p', std::string signature = {}) {
    OfferedPackage p;
    p.name = "otelcol-contrib";
    p.top_level = true;
    p.version = version;
    p.hash = std::string(32, hash);
    OfferedFile f;
    f.url = "https://artifacts.example/otelcol-" + version + ".tar.gz";
    f.content_hash = std::string(32, 'a');  // hex "6161…"
    f.signature = std::move(signature);
    p.file = f;
    Offer o;
    o.packages.push_back(p);
    o.all_packages_hash = std::string(32, hash) + "all";
    return o;
}

// packages.json as an Installed offer_of(version) leaves it.
Installed stored_install(const std::string& version) {
    Installed in;
    in.all_packages_hash = offer_of(version).all_packages_hash;
    in.name = "otelcol-contrib";
    in.version = version;
    in.package_hash = std::string(32, 'p');
    PackageReport p;
    p.name = in.name;
    p.code = Code::installed;
    p.offered_version = version;
    p.offered_hash = in.package_hash;
    p.agent_has_version = version;
    p.agent_has_hash = in.package_hash;
    in.statuses.push_back(p);
    return in;
}

struct Rig : FakeParts {
    FakeFetcher fetcher{sched, trace};
    FakeVerifier verifier{sched, trace};
    FakeStager stager{sched, trace};
    FakePreflight preflight{sched, trace};
    std::vector<Report> reports;
    std::vector<bool> active_at_report;  // inst->active() seen by each report callback
    std::unique_ptr<Installer> inst;

    explicit Rig(Settings s = settings()) {
        inst = std::make_unique<Installer>(
            sched, Ports{fetcher, verifier, stager, preflight, service, volume, health}, s, [this] {
                reports.push_back(inst->report());
                active_at_report.push_back(inst->active());
            });
        inst->set_active("0.116.0");
    }
    // Runs until the installer is idle again (or `limit` of fake time passed).
    void settle(Duration limit = 10min) {
        for (Duration t = 0s; t < limit; t += 500ms) {
            sched.run_pending();
            if (inst->state() == State::idle) return;
            sched.advance(500ms);
        }
        sched.run_pending();
    }
    // Runs until the installer is in `s`.
    void until(State s, Duration limit = 10min) {
        for (Duration t = 0s; t < limit && inst->state() != s; t += 100ms) {
            sched.run_pending();
            if (inst->state() == s) return;
            sched.advance(100ms);
        }
        REQUIRE(inst->state() == s);
    }
    // Like until(), releasing held volume answers on the way (for states that a held step keeps).
    void drive_to(State s) {
        for (int i = 0; i < 2000 && inst->state() != s; ++i) {
            sched.run_pending();
            if (inst->state() == s) break;
            if (!volume.answers.held.empty()) {
                volume.answers.release();
                continue;
            }
            sched.advance(100ms);
        }
        REQUIRE(inst->state() == s);
    }
    void release_all() {
        while (!volume.answers.held.empty()) volume.answers.release();
        for (auto& f : service.held_stop) sched.post(f);
        service.held_stop.clear();
        for (auto& f : service.held_start) sched.post(f);
        service.held_start.clear();
    }
    // The same offer sent again after a failure: checked at the end of its backoff step (at most
    // 5 s after the first failure), then run to idle.
    void resend(Offer o) {
        inst->offer(std::move(o));
        sched.advance(5s);
        sched.run_pending();
        settle();
    }
    const PackageReport& top() const { return inst->report().packages.at(0); }
    // The attempt the last finish recorded (last-attempt.json); the case ends if there is none.
    const Attempt& recorded() const {
        REQUIRE(!volume.finishes.empty());
        REQUIRE(volume.finishes.back().attempt.has_value());
        return *volume.finishes.back().attempt;
    }
    bool traced(const std::string& prefix) const {
        return std::any_of(trace.begin(), trace.end(),
                           [&](const std::string& t) { return t.rfind(prefix, 0) == 0; });
    }
    size_t count(const std::string& prefix) const {
        return std::count_if(trace.begin(), trace.end(),
                             [&](const std::string& t) { return t.rfind(prefix, 0) == 0; });
    }
    bool reported(Code c) const {
        return std::any_of(reports.begin(), reports.end(), [&](const Report& r) {
            return !r.packages.empty() && r.packages[0].code == c;
        });
    }
};

}  // namespace

TEST_CASE("installer: a good install runs every step in order and reports Installed") {
    Rig rig;
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    REQUIRE(rig.inst->state() == State::idle);
    const std::string content_hex = hex::encode(std::string(32, 'a').data(), 32);
    // The order of the work, with the journal written before each journaled state's own step.
    std::vector<std::string> order;
    for (const std::string& t : rig.trace) {
        if (t.rfind("get:", 0) == 0) continue;
        order.push_back(t.substr(0, t.find(':', t.find(':') + 1)));
    }
    std::vector<std::string> want = {"inspect",
                                     "journal:downloading",
                                     "fetch:https",
                                     "journal:verifying",
                                     "journal:staging",
                                     "stage:/state/spool/" + content_hex,
                                     "journal:preflight",
                                     "preflight:/c/.staging/st1/otelcol",
                                     "journal:stopping",
                                     "stop",
                                     "journal:swapping",
                                     "activate:0.117.0",
                                     "journal:starting",
                                     "start",
                                     "journal:health-checking",
                                     "finish:clear"};
    CHECK(order == want);
    CHECK(rig.traced("activate:0.117.0:prev=0.116.0:st1"));
    CHECK(rig.trace.back() == "finish:clear:gc:attempt=installed:packages");
    CHECK(rig.top().code == Code::installed);
    CHECK(rig.top().agent_has_version == "0.117.0");
    CHECK(rig.top().agent_has_hash == std::string(32, 'p'));
    CHECK(rig.top().error.empty());
    CHECK(rig.reported(Code::installing));
    CHECK(rig.reported(Code::downloading));
    // Three rounds of two probes each.
    CHECK(rig.health.gets == 6);
    CHECK_FALSE(rig.volume.journal.has_value());
    // {config} substituted in the validate arguments.
    REQUIRE(rig.preflight.requests.size() == 1);
    CHECK(rig.preflight.requests[0].validate_args ==
          std::vector<std::string>{"validate", "--config=/etc/otelcol/effective.yaml"});
    CHECK(rig.preflight.requests[0].expected_version == "0.117.0");
}

TEST_CASE("installer: every journaled state writes its journal before its own work") {
    Rig rig;
    // Hold every volume answer: while a journal write is outstanding, the state's work must not
    // have started.
    rig.volume.answers.hold = true;
    rig.inst->offer(offer_of("0.117.0"));
    int journal_writes = 0;
    for (int i = 0; i < 400 && rig.inst->state() != State::idle; ++i) {
        rig.sched.run_pending();
        if (!rig.volume.answers.held.empty()) {
            if (rig.trace.back().rfind("journal:", 0) == 0) {
                ++journal_writes;
                // Nothing happened after the journal write was asked for.
                size_t before = rig.trace.size();
                rig.sched.run_pending();
                rig.sched.advance(5s);
                CHECK(rig.trace.size() == before);
            }
            rig.volume.answers.release();
            continue;
        }
        rig.sched.advance(500ms);
    }
    CHECK(rig.inst->state() == State::idle);
    CHECK(journal_writes == 8);  // downloading … health-checking
    CHECK(rig.top().code == Code::installed);
}

TEST_CASE("installer: a failing journal write fails the install before its work") {
    Rig rig;
    rig.volume.journal_fails_at = "staging";
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK_FALSE(rig.traced("stage:"));
    CHECK(rig.top().code == Code::install_failed);
    CHECK(rig.top().error == "journal: disk full");
}

TEST_CASE("installer: checking — only the top-level package is installed; others fail alone") {
    Rig rig;
    Offer o = offer_of("0.117.0");
    OfferedPackage addon;
    addon.name = "extra";
    addon.top_level = false;
    addon.version = "1.0.0";
    o.packages.insert(o.packages.begin(), addon);
    rig.inst->offer(o);
    rig.settle();
    const Report& r = rig.inst->report();
    REQUIRE(r.packages.size() == 2);
    CHECK(r.packages[0].name == "extra");
    CHECK(r.packages[0].code == Code::install_failed);
    CHECK(r.packages[0].error == "unsupported package type");
    CHECK(r.packages[1].code == Code::installed);
    CHECK(r.packages[1].agent_has_version == "0.117.0");
}

TEST_CASE("installer: checking refusals never download") {
    struct Case {
        const char* name;
        std::function<void(Rig&, Offer&)> setup;
        const char* error;
    };
    std::vector<Case> cases = {
        {"version does not parse", [](Rig&, Offer& o) { o.packages[0].version = "0.117"; },
         "offered version \"0.117\" does not parse"},
        {"below minimumVersion", [](Rig&, Offer&) {},
         "version 0.117.0 is below update.minimumVersion 0.120.0"},
        {"downgrade", [](Rig&, Offer& o) { o.packages[0].version = "0.110.0"; },
         "version 0.110.0 is older than the active 0.116.0"},
        {"quarantined",
         [](Rig& r, Offer&) {
             std::string hash_hex;  // of the package hash: 32 x 'p' (0x70)
             for (int i = 0; i < 32; ++i) hash_hex += "70";
             r.volume.inspection.last_attempt =
                 Attempt{hash_hex, "0.117.0", Outcome::rolled_back, "health check failed: x", ""};
         },
         "quarantined: health check failed: x (until the offer changes or myriarch-updater "
         "forget)"},
        {"URL outside the allowed prefixes",
         [](Rig&, Offer& o) { o.packages[0].file->url = "https://evil.example/x.tar.gz"; },
         "download URL refused: https://evil.example/x.tar.gz is not under an allowed prefix"},
        {"no file", [](Rig&, Offer& o) { o.packages[0].file.reset(); },
         "the offer has no file to download"},
        {"content hash not a SHA-256",
         [](Rig&, Offer& o) { o.packages[0].file->content_hash = "short"; },
         "content_hash is 5 bytes, not a SHA-256"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.name);
        Settings s = settings();
        if (std::string(c.name) == "below minimumVersion") s.minimum_version = "0.120.0";
        Rig rig(s);
        Offer o = offer_of("0.117.0");
        c.setup(rig, o);
        rig.inst->offer(o);
        rig.settle();
        CHECK(rig.inst->state() == State::idle);
        CHECK_FALSE(rig.traced("fetch:"));
        CHECK_FALSE(rig.traced("journal:"));
        CHECK(rig.top().code == Code::install_failed);
        CHECK(rig.top().error.rfind(c.error, 0) == 0);
        CHECK(rig.top().agent_has_version == "0.116.0");
        // A refusal by policy is not an attempt: last-attempt.json keeps what it had.
        REQUIRE(rig.volume.finishes.size() == 1);
        CHECK_FALSE(rig.volume.finishes[0].attempt.has_value());
    }
}

TEST_CASE("installer: no room is refused before the download, not settled, not an attempt") {
    Rig rig;
    rig.volume.inspection.active_size = 1'000'000;
    rig.volume.inspection.volume_room = Inspection::Room{"/binaries", 500'000, 1};
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK(rig.top().code == Code::install_failed);
    CHECK(rig.top().error.rfind("not enough space on /binaries: need 1065536", 0) == 0);
    CHECK_FALSE(rig.traced("fetch:"));
    REQUIRE(rig.volume.finishes.size() == 1);
    CHECK_FALSE(rig.volume.finishes[0].attempt.has_value());
    // Room made: the same offer, sent again, is checked again (after its backoff) and installs.
    rig.volume.inspection.volume_room->available = 2'000'000;
    rig.resend(offer_of("0.117.0"));
    CHECK(rig.top().code == Code::installed);
    CHECK(rig.count("fetch:") == 1);
}

TEST_CASE("installer: a volume full while downloading or staging leaves the active version") {
    for (const char* step : {"download", "stage"}) {
        CAPTURE(step);
        // No retries: the failure itself is what this case looks at (the retries have their own).
        Settings s = settings();
        s.retry_for = Duration::zero();
        Rig rig(s);
        if (std::string(step) == "download") {
            rig.fetcher.result_for = [](const download::Request&) -> Result<download::Artifact> {
                return fail(Error::from_errno("download: write", ENOSPC));
            };
        } else {
            rig.stager.error =
                "stage: otelcol-contrib: write otelcol-contrib: No space left on device";
            rig.stager.error_errno = ENOSPC;
        }
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        CHECK(rig.top().code == Code::install_failed);
        CHECK(rig.top().error.find("No space left on device") != std::string::npos);
        CHECK(rig.top().agent_has_version == "0.116.0");
        CHECK_FALSE(rig.traced("stop"));
    }
}

TEST_CASE("installer: checking — a downgrade passes with allowDowngrade or to previousVersion") {
    SUBCASE("previousVersion") {
        Rig rig;
        rig.inst->offer(offer_of("0.115.0"));
        rig.settle();
        CHECK(rig.top().code == Code::installed);
        CHECK(rig.traced("activate:0.115.0"));
    }
    SUBCASE("allowDowngrade") {
        Settings s = settings();
        s.allow_downgrade = true;
        Rig rig(s);
        rig.inst->offer(offer_of("0.100.0"));
        rig.settle();
        CHECK(rig.top().code == Code::installed);
        CHECK(rig.traced("activate:0.100.0"));
    }
}

TEST_CASE("installer: checking — the active version, intact, is Installed without a download") {
    Rig rig;
    rig.inst->offer(offer_of("v0.116.0"));
    rig.settle();
    CHECK(rig.top().code == Code::installed);
    CHECK_FALSE(rig.traced("fetch:"));
    CHECK_FALSE(rig.traced("journal:"));
    CHECK_FALSE(rig.traced("stop"));
    CHECK(rig.trace.back() == "finish:clear:gc:attempt=installed:packages");
    // Nothing was fetched: the active version's package hash (unknown here, as for the image's
    // version) is not replaced by the offer's.
    CHECK(rig.top().agent_has_hash.empty());
    REQUIRE(rig.volume.finishes.back().packages);
    CHECK(rig.volume.finishes.back().packages->package_hash.empty());
    CHECK(rig.volume.finishes.back().packages->version == "0.116.0");
}

TEST_CASE("installer: a v-prefixed offer goes by its canonical name from Checking on") {
    Rig rig;
    rig.service.hold_stop = true;
    rig.inst->offer(offer_of("v0.117.0"));
    rig.until(State::stopping);
    REQUIRE(rig.volume.journal);
    CHECK(rig.volume.journal->to == "0.117.0");
    CHECK(rig.inst->describe() == "installing 0.117.0: stopping");
    rig.release_all();
    rig.settle();
    CHECK(rig.traced("activate:0.117.0:prev=0.116.0:st1"));
    CHECK(rig.preflight.requests.at(0).expected_version == "0.117.0");
    // The server's name stays in the report; what the agent has is the directory's.
    CHECK(rig.top().offered_version == "v0.117.0");
    CHECK(rig.top().agent_has_version == "0.117.0");
    CHECK(rig.top().code == Code::installed);
    const VolumeOps::Finish& f = rig.volume.finishes.back();
    REQUIRE(f.attempt);
    CHECK(f.attempt->version == "0.117.0");
    REQUIRE(f.packages);
    CHECK(f.packages->version == "0.117.0");
    CHECK(f.packages->package_hash == std::string(32, 'p'));
}

TEST_CASE("installer: a commit that fails is undone when it swapped, and the report says so") {
    Rig rig;
    rig.volume.finish_results.push_back(fail(Errc::system, "finish: disk full"));
    SUBCASE("after the swap") {
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        // The journal names the install until the rollback's own phase replaces it: the next
        // start keeps what runs.
        CHECK(rig.traced("journal:rolling-back"));
        CHECK(rig.traced("switch_back:0.116.0"));
        CHECK(rig.volume.inspection.active == "0.116.0");
        CHECK(rig.trace.back() == "finish:clear:gc:attempt=rolled-back:packages");
        CHECK(rig.top().error == "commit: finish: disk full; rolled back to 0.116.0");
        CHECK(rig.top().agent_has_version == "0.116.0");
    }
    SUBCASE("after Checking found the offer installed: nothing to undo") {
        rig.inst->offer(offer_of("0.116.0"));
        rig.settle();
        CHECK_FALSE(rig.traced("stop"));
        CHECK_FALSE(rig.traced("switch_back:"));
        CHECK(rig.top().error == "commit: finish: disk full");
    }
    CHECK(rig.top().code == Code::install_failed);
}

TEST_CASE("installer: checking — an active version that is broken is installed again") {
    Rig rig;
    rig.volume.inspection.active_intact = false;
    rig.inst->offer(offer_of("0.116.0"));
    rig.settle();
    CHECK(rig.traced("fetch:"));
    CHECK(rig.top().code == Code::installed);
}

TEST_CASE("installer: the signature is verified before the download, the digest after it") {
    SUBCASE("content hash mismatch") {
        Rig rig;
        rig.fetcher.sha_override = std::string(64, 'c');
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        CHECK(rig.top().code == Code::install_failed);
        CHECK(rig.top().error.rfind("content hash mismatch: offered 6161", 0) == 0);
        CHECK_FALSE(rig.traced("stage:"));
        // A failure after the download is an attempt: the same offer is not tried again.
        CHECK(rig.recorded().outcome == Outcome::failed);
    }
    SUBCASE("signature required but absent: refused before anything is fetched") {
        Settings s = settings();
        s.require_signature = true;
        Rig rig(s);
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        CHECK(rig.top().error ==
              "signature required (update.requireSignature) but the offer has none");
        CHECK_FALSE(rig.traced("verify:"));
        CHECK_FALSE(rig.traced("fetch:"));
        CHECK_FALSE(rig.traced("journal:"));
        CHECK(rig.recorded().outcome == Outcome::failed);
        CHECK(rig.recorded().cls == FailureClass::deterministic);
    }
    SUBCASE("signature required and good: verified against the offered hash, then fetched") {
        Settings s = settings();
        s.require_signature = true;
        Rig rig(s);
        rig.inst->offer(offer_of("0.117.0", 'p', "{good bundle}"));
        rig.settle();
        auto at = [&](const std::string& prefix) {
            for (size_t i = 0; i < rig.trace.size(); ++i) {
                if (rig.trace[i].rfind(prefix, 0) == 0) return i;
            }
            return rig.trace.size();
        };
        REQUIRE(rig.traced("verify:{good bundle}"));
        CHECK(at("inspect") < at("verify:"));
        CHECK(at("verify:") < at("journal:downloading"));
        CHECK(at("journal:downloading") < at("fetch:"));
        CHECK(rig.top().code == Code::installed);
    }
    SUBCASE("present but invalid fails even when not required, and nothing is fetched") {
        Rig rig;
        rig.inst->offer(offer_of("0.117.0", 'p', "{tampered}"));
        rig.settle();
        CHECK(rig.top().code == Code::install_failed);
        CHECK(rig.top().error == "signature: identity: wrong subject");
        CHECK_FALSE(rig.traced("fetch:"));
        CHECK_FALSE(rig.traced("journal:"));
        // Deterministic, an attempt: quarantined like a refusal after the download was.
        CHECK(rig.recorded().outcome == Outcome::failed);
        CHECK(rig.recorded().cls == FailureClass::deterministic);
        CHECK(rig.trace.back() == "finish:clear:attempt=failed:packages");
    }
}

TEST_CASE("installer: staging and preflight failures change nothing and discard the staging") {
    SUBCASE("staging: the Stager's error, which names the step, is the report's") {
        Rig rig;
        rig.stager.error = "stage: member ../collector.binary: `..` component refused";
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        CHECK(rig.top().error == "stage: member ../collector.binary: `..` component refused");
        CHECK(rig.trace.back() == "finish:clear:attempt=failed:packages");
    }
    SUBCASE("staging, with the extraction's own `stage: <member>: <rule>`: not prefixed twice") {
        Rig rig;
        rig.stager.error = "stage: ../escape: refusing member name with a '..' component";
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        CHECK(rig.top().error == "stage: ../escape: refusing member name with a '..' component");
    }
    SUBCASE("preflight") {
        Rig rig;
        // The preflight names itself, as stage/preflight.cpp does: the installer adds nothing.
        rig.preflight.error = "preflight: validate exited 1: error decoding 'receivers'";
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        CHECK(rig.top().error == "preflight: validate exited 1: error decoding 'receivers'");
        CHECK(rig.trace.back() == "finish:clear:discard=st1:attempt=failed:packages");
    }
}

TEST_CASE("installer: preflight failure never stops the supervisor") {
    Rig rig;
    rig.preflight.error = "--version printed 0.118.0";
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK_FALSE(rig.traced("stop"));
    CHECK_FALSE(rig.traced("activate:"));
    CHECK(rig.top().agent_has_version == "0.116.0");
}

TEST_CASE("installer: a failing health check rolls back and says why in one line") {
    Rig rig;
    rig.health.answer = [&](const Url& u) -> Result<int> {
        if (u == kCollectorHealth && rig.volume.inspection.active == "0.117.0") return 503;
        return 200;
    };
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::health_checking);
    CHECK_FALSE(rig.inst->ready());
    CHECK(rig.inst->describe() == "installing 0.117.0: health-checking");
    rig.settle();
    CHECK(rig.traced("switch_back:0.116.0"));
    CHECK(rig.count("stop") == 2);
    CHECK(rig.count("start") == 2);
    CHECK(rig.top().code == Code::install_failed);
    CHECK(rig.top().error ==
          "health check failed: collector http://127.0.0.1:13133/: 503 x29; rolled back to "
          "0.116.0");
    CHECK(rig.top().agent_has_version == "0.116.0");
    CHECK(rig.trace.back() == "finish:clear:gc:attempt=rolled-back:packages");
    CHECK_FALSE(rig.inst->unhealthy());
    CHECK(rig.inst->ready());
}

TEST_CASE("installer: a failing round resets the count of rounds in a row") {
    Settings s = settings();
    s.supervisor_health_url.reset();
    Rig rig(s);
    std::vector<int> answers = {200, 200, 503, 200, 200};  // then 200 forever
    size_t at = 0;
    rig.health.answer = [&](const Url&) -> Result<int> {
        return at < answers.size() ? answers[at++] : 200;
    };
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK(rig.top().code == Code::installed);
    // 2 passes, a failure, then three in a row: six rounds, not three.
    CHECK(rig.health.gets == 6);
}

TEST_CASE("installer: a rollback whose health check fails too keeps the previous version") {
    Rig rig;
    rig.health.answer = [](const Url&) -> Result<int> {
        return fail(Errc::network, "connection refused");
    };
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle(30min);
    CHECK(rig.inst->state() == State::idle);
    CHECK(rig.count("switch_back:") == 1);  // never loops
    CHECK(rig.top().error ==
          "health check failed: supervisor http://127.0.0.1:23233/health: connection refused x29; "
          "rolled back to 0.116.0, which fails its health check too: health check failed: "
          "supervisor http://127.0.0.1:23233/health: connection refused x29");
    CHECK(rig.top().agent_has_version == "0.116.0");
    CHECK(rig.inst->unhealthy());
    // Nothing more happens afterwards.
    size_t n = rig.trace.size();
    rig.sched.advance(10min);
    rig.sched.run_pending();
    CHECK(rig.trace.size() == n);
}

TEST_CASE("installer: a rollback that cannot switch back keeps the journal for recovery") {
    Rig rig;
    rig.health.answer = [](const Url&) -> Result<int> { return 500; };
    rig.volume.switch_result = fail(Errc::system, "rename current: I/O error");
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle(30min);
    CHECK(rig.trace.back() == "finish:keep:attempt=rolled-back:packages");
    CHECK(rig.top().error.find("; rollback failed: switch back to 0.116.0: rename current: I/O "
                               "error") != std::string::npos);
    CHECK(rig.inst->unhealthy());
}

TEST_CASE("installer: an activation error rolls back (the switch may have happened)") {
    Rig rig;
    rig.volume.activate_result = fail(Errc::system, "fsync install dir: I/O error");
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK(rig.traced("switch_back:0.116.0"));
    CHECK(rig.top().error ==
          "activate 0.117.0: fsync install dir: I/O error; rolled back to 0.116.0");
}

TEST_CASE("installer: a collector that crashes at start fails its rounds and is rolled back") {
    Rig rig;
    // The new one never stays up; the old one does.
    rig.service.after_start = {service::State::waiting_to_restart, service::State::running};
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK(rig.top().error ==
          "health check failed: supervisor not running (waiting_to_restart) x29; rolled back to "
          "0.116.0");
    CHECK(rig.service.starts == 2);
}

TEST_CASE("installer: a crash loop that gave up rolls back at once") {
    Rig rig;
    rig.service.after_start = {service::State::stopped, service::State::running};
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::health_checking);
    rig.service.desired_ = service::Desired::gave_up;
    MonoTime t0 = rig.sched.now();
    rig.until(State::rolling_back);
    CHECK(rig.sched.now() - t0 < 5s);  // not the 60 s deadline
    rig.service.desired_ = service::Desired::running;
    rig.settle();
    CHECK(rig.top().error.find("rolled back to 0.116.0") != std::string::npos);
}

TEST_CASE("installer: the same offer during an install is ignored") {
    Rig rig;
    rig.fetcher.answers.hold = true;
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::downloading);
    rig.inst->offer(offer_of("0.117.0"));
    rig.sched.run_pending();
    CHECK(rig.inst->state() == State::downloading);
    CHECK(rig.fetcher.answers.cancelled() == 0);
    rig.fetcher.answers.release();
    rig.settle();
    CHECK(rig.top().code == Code::installed);
    CHECK(rig.count("fetch:") == 1);
    // And once installed, the same offer again changes nothing.
    size_t n = rig.trace.size();
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK(rig.trace.size() == n);
}

TEST_CASE("installer: a different offer cancels a download; the latest one wins") {
    Rig rig;
    rig.fetcher.answers.hold = true;
    rig.inst->offer(offer_of("0.117.0", 'p'));
    rig.until(State::downloading);
    rig.inst->offer(offer_of("0.118.0", 'q'));
    rig.inst->offer(offer_of("0.119.0", 'r'));
    rig.sched.run_pending();
    CHECK(rig.fetcher.answers.cancelled() == 1);  // the 0.117.0 download was dropped
    rig.fetcher.answers.hold = false;
    rig.sched.run_pending();
    // The dropped 0.117.0 answer and the 0.119.0 download; only the latter is still wanted.
    REQUIRE(rig.fetcher.answers.held.size() == 2);
    rig.fetcher.answers.release();
    rig.fetcher.answers.release();
    rig.settle();
    CHECK(rig.inst->state() == State::idle);
    CHECK(rig.top().offered_version == "0.119.0");
    CHECK(rig.top().code == Code::installed);
    CHECK_FALSE(rig.traced("fetch:https://artifacts.example/otelcol-0.118.0"));
    // The superseded install is not an attempt that failed.
    CHECK(rig.volume.finishes[0].attempt.has_value() == false);
    CHECK_FALSE(rig.reported(Code::install_failed));
}

TEST_CASE("installer: a different offer waits for the end of the critical section") {
    Rig rig;
    rig.inst->offer(offer_of("0.117.0", 'p'));
    rig.until(State::health_checking);
    rig.inst->offer(offer_of("0.118.0", 'q'));
    rig.sched.run_pending();
    CHECK(rig.inst->state() == State::health_checking);
    CHECK_FALSE(rig.traced("inspect:0.118.0"));
    rig.settle();
    CHECK(rig.count("inspect") == 2);  // the second install began only after the first
    rig.settle();
    CHECK(rig.inst->state() == State::idle);
    CHECK(rig.traced("activate:0.117.0"));
    CHECK(rig.traced("activate:0.118.0:prev=0.117.0"));
    CHECK(rig.top().agent_has_version == "0.118.0");
}

TEST_CASE("installer: shutdown outside the critical section drops the install, volume untouched") {
    for (State s : {State::checking, State::downloading, State::verifying, State::staging,
                    State::preflight}) {
        CAPTURE(to_string(s));
        Rig rig;
        // Verifying answers at once (the digest): held at its journal write.
        rig.volume.answers.hold = s == State::checking || s == State::verifying;
        rig.fetcher.answers.hold = s == State::downloading;
        rig.stager.answers.hold = s == State::staging;
        rig.preflight.answers.hold = s == State::preflight;
        rig.inst->offer(offer_of("0.117.0", 'p', "{good bundle}"));
        for (int i = 0; i < 50 && rig.inst->state() != s; ++i) {
            rig.sched.run_pending();
            if (rig.inst->state() == s) break;
            if (!rig.volume.answers.held.empty()) rig.volume.answers.release();
        }
        REQUIRE(rig.inst->state() == s);
        rig.sched.run_pending();
        bool ended = false;
        rig.inst->shutdown();
        CHECK_FALSE(rig.inst->active());
        rig.inst->on_end([&] { ended = true; });
        CHECK(ended);
        rig.sched.run_pending();
        rig.sched.advance(5min);
        CHECK(rig.inst->state() == State::idle);
        CHECK(rig.volume.finishes.empty());  // the next start's recovery cleans up
        CHECK_FALSE(rig.traced("stop"));
        CHECK_FALSE(rig.traced("activate:"));
        // No offer starts once shutting down.
        rig.inst->offer(offer_of("0.118.0", 'q'));
        rig.sched.run_pending();
        CHECK(rig.inst->state() == State::idle);
    }
}

TEST_CASE("installer: shutdown inside the critical section waits for its end") {
    for (State s : {State::stopping, State::swapping, State::starting, State::health_checking,
                    State::rolling_back}) {
        CAPTURE(to_string(s));
        Rig rig;
        if (s == State::rolling_back) {
            rig.health.answer = [&](const Url&) -> Result<int> {
                return rig.volume.inspection.active == "0.117.0" ? 503 : 200;
            };
        }
        rig.service.hold_stop = s == State::stopping;
        rig.service.hold_start = s == State::starting;
        rig.volume.answers.hold = s == State::swapping;
        rig.inst->offer(offer_of("0.117.0"));
        rig.drive_to(s);
        rig.service.hold_stop = false;
        rig.service.hold_start = false;
        rig.volume.answers.hold = false;
        bool ended = false;
        rig.inst->shutdown();
        CHECK(rig.inst->active());
        rig.inst->on_end([&] { ended = true; });
        CHECK_FALSE(ended);
        rig.release_all();
        rig.settle();
        CHECK(ended);
        CHECK(rig.inst->state() == State::idle);
        Code want = s == State::rolling_back ? Code::install_failed : Code::installed;
        CHECK(rig.top().code == want);
    }
}

TEST_CASE("installer: the shutdown wait is bounded by 2 x stopTimeout + 2 x healthTimeout") {
    Rig rig;
    rig.service.hold_stop = true;
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::stopping);
    bool ended = false;
    rig.inst->shutdown();
    rig.inst->on_end([&] { ended = true; });
    rig.sched.advance(2 * 30s + 2 * 60s - 1s);
    CHECK_FALSE(ended);
    rig.sched.advance(2s);
    CHECK(ended);
    CHECK_FALSE(rig.inst->active());
}

TEST_CASE("installer: download progress is reported at most every 2 s") {
    Rig rig;
    rig.fetcher.answers.hold = true;
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::downloading);
    size_t before = rig.reports.size();
    auto progress = [&](double pct) {
        download::Progress p;
        p.percent = pct;
        p.bytes_per_second = 1e6;
        rig.fetcher.handlers.on_progress(p);
    };
    progress(10);  // the first one goes out
    rig.sched.advance(500ms);
    progress(20);  // too soon
    rig.sched.advance(1s);
    progress(30);  // 1.5 s after the first: too soon
    rig.sched.advance(600ms);
    progress(40);  // 2.1 s: goes out
    REQUIRE(rig.reports.size() == before + 2);
    CHECK(rig.reports[before].packages[0].percent == doctest::Approx(10));
    CHECK(rig.reports[before + 1].packages[0].percent == doctest::Approx(40));
    CHECK(rig.reports[before + 1].packages[0].bytes_per_second == doctest::Approx(1e6));
    CHECK(rig.reports[before + 1].packages[0].code == Code::downloading);
    rig.fetcher.answers.release();
    rig.settle();
    CHECK(rig.top().code == Code::installed);
    CHECK_FALSE(rig.top().percent.has_value());
}

TEST_CASE("installer: readiness names the step and clears after the critical section") {
    Rig rig;
    rig.service.hold_stop = true;
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::stopping);
    CHECK_FALSE(rig.inst->ready());
    CHECK(rig.inst->describe() == "installing 0.117.0: stopping");
    for (auto& f : rig.service.held_stop) rig.sched.post(f);
    rig.settle();
    CHECK(rig.inst->ready());
    CHECK(rig.inst->describe() == "no install in progress");
}

TEST_CASE("installer: a newer offer withdrawn during the critical section is not installed") {
    Rig rig;
    rig.inst->offer(offer_of("0.117.0", 'p'));
    rig.until(State::health_checking);
    rig.inst->offer(offer_of("0.118.0", 'q'));
    rig.inst->offer(offer_of("0.117.0", 'p'));  // the server went back to the running install
    rig.settle();
    rig.settle();
    CHECK(rig.count("inspect") == 1);
    CHECK_FALSE(rig.traced("fetch:https://artifacts.example/otelcol-0.118.0"));
    CHECK(rig.top().offered_version == "0.117.0");
    CHECK(rig.top().code == Code::installed);
}

TEST_CASE("installer: an offer cancelled by a newer one and then offered again starts over") {
    Rig rig;
    rig.fetcher.answers.hold = true;
    rig.inst->offer(offer_of("0.117.0", 'p'));
    rig.until(State::downloading);
    rig.inst->offer(offer_of("0.118.0", 'q'));  // cancels 0.117.0
    rig.inst->offer(offer_of("0.117.0", 'p'));  // and 0.117.0 is the latest again
    rig.fetcher.answers.hold = false;
    for (int i = 0; i < 5; ++i) {
        rig.sched.run_pending();
        while (!rig.fetcher.answers.held.empty()) rig.fetcher.answers.release();
    }
    rig.settle();
    CHECK(rig.inst->state() == State::idle);
    CHECK(rig.top().offered_version == "0.117.0");
    CHECK(rig.top().code == Code::installed);
    CHECK_FALSE(rig.traced("fetch:https://artifacts.example/otelcol-0.118.0"));
}

TEST_CASE("installer: a remembered offer does not start once a shutdown arrived") {
    Rig rig;
    rig.fetcher.answers.hold = true;
    rig.inst->offer(offer_of("0.117.0", 'p'));
    rig.until(State::downloading);
    rig.volume.answers.hold = true;  // hold the clean-up of the cancelled install
    rig.inst->offer(offer_of("0.118.0", 'q'));
    rig.sched.run_pending();
    REQUIRE(rig.inst->state() == State::failed);
    REQUIRE(rig.volume.answers.held.size() == 1);
    // The clean-up ends, idle queues the remembered offer, and a TERM arrives before it runs.
    auto& held = rig.volume.answers.held.front();
    held.fire = [orig = held.fire, &rig] {
        orig();
        rig.inst->shutdown();
    };
    rig.volume.answers.release();
    rig.sched.run_pending();
    rig.sched.advance(1min);
    CHECK(rig.inst->state() == State::idle);
    CHECK(rig.count("inspect") == 1);
}

TEST_CASE("installer: the owner hears when the critical section is over") {
    for (bool healthy : {true, false}) {
        CAPTURE(healthy);
        Rig rig;
        if (!healthy) rig.health.answer = [](const Url&) -> Result<int> { return 500; };
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle(30min);
        REQUIRE(rig.inst->state() == State::idle);
        // The runtime acts on the end (a crash loop left to the installer, readiness) in the
        // report callback: the last one must see the section over.
        REQUIRE_FALSE(rig.active_at_report.empty());
        CHECK_FALSE(rig.active_at_report.back());
        CHECK(std::count(rig.active_at_report.begin(), rig.active_at_report.end(), true) > 0);
    }
}

TEST_CASE(
    "installer: packages.json of a version seeding has replaced since is reported with the "
    "version that runs, and its offer is checked again") {
    Rig rig;
    Installed stored = stored_install("0.115.0");  // the image's 0.116.0 was activated since
    rig.inst->restore(stored);
    CHECK(rig.top().code == Code::installed);
    CHECK(rig.top().agent_has_version == "0.116.0");
    // The hash no longer stands for what is installed: the server must be able to offer again.
    CHECK(rig.inst->report().all_packages_hash.empty());
    rig.inst->offer(offer_of("0.115.0"));
    rig.settle();
    CHECK(rig.trace.at(0) == "inspect");
}

TEST_CASE(
    "installer: a restored Installed makes the same offer a no-op, and a different one an "
    "install") {
    Rig rig;
    Installed stored = stored_install("0.116.0");
    rig.inst->restore(stored);
    CHECK(rig.inst->report().all_packages_hash == stored.all_packages_hash);
    rig.inst->offer(offer_of("0.116.0"));
    rig.settle();
    CHECK(rig.trace.empty());
    CHECK(rig.reports.empty());  // nothing changed: nothing new to report
    rig.inst->offer(offer_of("0.117.0", 'q'));
    rig.settle();
    CHECK(rig.top().code == Code::installed);
    CHECK(rig.top().agent_has_version == "0.117.0");
    // The failed-offer file keeps the all_packages_hash of the last Installed; this one replaces
    // it.
    REQUIRE(rig.volume.finishes.back().packages.has_value());
    CHECK(rig.volume.finishes.back().packages->all_packages_hash ==
          offer_of("0.117.0", 'q').all_packages_hash);
    CHECK(rig.volume.finishes.back().packages->version == "0.117.0");
}

TEST_CASE(
    "installer: an install recovery undid is the first report, in place of the restored "
    "status of its package") {
    Rig rig;
    Installed stored = stored_install("0.116.0");
    stored.statuses[0].name = "collector";  // the server's name for the package
    rig.inst->restore(stored);
    Attempt a{hex::encode("qqqq", 4), "0.117.0", Outcome::interrupted,
              "interrupted while swapping; recovery: switched current to 0.116.0", "t"};
    rig.inst->report_interrupted(a, "otelcol-contrib");
    REQUIRE(rig.inst->report().packages.size() == 1);
    CHECK(rig.top().name == "collector");
    CHECK(rig.top().code == Code::install_failed);
    CHECK(rig.top().offered_version == "0.117.0");
    CHECK(rig.top().offered_hash == "qqqq");
    CHECK(rig.top().agent_has_version == "0.116.0");
    CHECK(rig.top().error == a.reason);
    // The installed offer again is answered from the volume (Checking), not skipped.
    rig.inst->offer(offer_of("0.116.0"));
    rig.settle();
    CHECK(rig.trace.at(0) == "inspect");
    CHECK(rig.top().code == Code::installed);
}

TEST_CASE(
    "installer: an interrupted install without a packages.json is reported under the "
    "given name") {
    Rig rig;
    rig.inst->report_interrupted(
        Attempt{"", "0.117.0", Outcome::interrupted, "interrupted while starting", "t"},
        "otelcol-contrib");
    REQUIRE(rig.inst->report().packages.size() == 1);
    CHECK(rig.top().name == "otelcol-contrib");
    CHECK(rig.top().code == Code::install_failed);
    CHECK(rig.top().offered_hash.empty());
    CHECK(rig.inst->report().all_packages_hash.empty());
}

namespace {

Settings with_jitter(Duration window) {
    Settings s = settings();
    s.start_jitter = window;
    return s;
}

// Fake time from the offer to the download's request; nullopt if none came within `limit`.
std::optional<Duration> time_to_fetch(Rig& rig, Duration limit) {
    for (Duration t = 0s; t <= limit; t += 100ms) {
        rig.sched.run_pending();
        if (rig.traced("fetch:")) return t;
        rig.sched.advance(100ms);
    }
    return std::nullopt;
}

// The downloads of the retry cases: update.retryFor `d`, and a fetcher that always fails so.
Settings with_retry_for(Duration d) {
    Settings s = settings();
    s.retry_for = d;
    return s;
}
std::function<Result<download::Artifact>(const download::Request&)> always_failing(Errc c,
                                                                                   std::string m) {
    return [c, m](const download::Request&) -> Result<download::Artifact> { return fail(c, m); };
}

}  // namespace

TEST_CASE("installer: a download starts after a random delay within update.startJitter") {
    Rig rig(with_jitter(20s));
    rig.inst->offer(offer_of("0.117.0"));
    rig.sched.run_pending();
    rig.sched.run_pending();
    // Waiting: Downloading at 0 % on the server, and nothing journaled (a pod killed while it
    // waits leaves nothing to undo) unless the draw was shorter than these turns.
    CHECK(rig.top().code == Code::downloading);
    CHECK(rig.top().percent == 0.0);
    CHECK(rig.traced("journal:downloading") == rig.traced("fetch:"));
    auto t = time_to_fetch(rig, 21s);
    REQUIRE(t);
    CHECK(*t <= 20s);
    CHECK(rig.traced("journal:downloading"));
    rig.settle();
    CHECK(rig.top().code == Code::installed);
}

TEST_CASE("installer: zero startJitter starts the download at once") {
    Rig rig(with_jitter(0s));
    rig.inst->offer(offer_of("0.117.0"));
    auto t = time_to_fetch(rig, 1s);
    REQUIRE(t);
    CHECK(*t == 0s);
}

TEST_CASE("installer: a newer offer or a shutdown during the start jitter drops the wait") {
    // A window of an hour: the draw is almost surely longer than the few turns below (a draw
    // under 1 ms, probability 1 in 3.6 million, would start the fetch: then the test says so).
    Rig rig(with_jitter(1h));
    rig.inst->offer(offer_of("0.117.0", 'p'));
    rig.sched.run_pending();
    rig.sched.run_pending();
    REQUIRE_MESSAGE(!rig.traced("fetch:"), "the draw was below 1 ms");
    CHECK(rig.inst->state() == State::checking);
    rig.inst->offer(offer_of("0.118.0", 'q'));
    for (int i = 0; i < 10; ++i) rig.sched.run_pending();
    CHECK(rig.top().offered_version == "0.118.0");
    CHECK(rig.top().code == Code::downloading);
    CHECK(rig.count("inspect") == 2);
    CHECK_FALSE(rig.reported(Code::install_failed));  // superseded, not failed
    rig.inst->shutdown();
    rig.sched.run_pending();
    rig.sched.advance(2h);
    rig.sched.run_pending();
    CHECK(rig.inst->state() == State::idle);
    CHECK_FALSE(rig.traced("fetch:"));
    CHECK_FALSE(rig.traced("journal:"));
    // The superseded wait's clean-up records no attempt: nothing was tried.
    for (const auto& f : rig.volume.finishes) CHECK_FALSE(f.attempt.has_value());
}

// Issue 23: the figure for a fleet. 100 installers (each its own fake clock, all offered the same
// release at fake time 0) with a 20 s window: when does each one's request reach the artifact
// server? The bounds below are far from what uniform draws give (expected 10 per 2 s bucket; a
// bucket above 30 has a probability near 1e-8, a spread under 10 s near 1e-28), so the test does
// not flake, yet it fails at once for a fleet that starts together.
TEST_CASE("installer: 100 installers offered one release spread their downloads over the jitter") {
    constexpr int kFleet = 100;
    constexpr Duration kWindow = 20s;
    std::array<int, 10> buckets{};
    Duration first = kWindow, last = 0s;
    for (int i = 0; i < kFleet; ++i) {
        Rig rig(with_jitter(kWindow));
        rig.fetcher.answers.hold = true;
        rig.inst->offer(offer_of("0.117.0"));
        auto t = time_to_fetch(rig, kWindow + 1s);
        REQUIRE(t);
        REQUIRE(*t <= kWindow);
        first = std::min(first, *t);
        last = std::max(last, *t);
        ++buckets[std::min<size_t>(9, static_cast<size_t>(*t / 2s))];
    }
    std::string histogram;
    for (size_t b = 0; b < buckets.size(); ++b) {
        histogram += std::to_string(2 * b) + "-" + std::to_string(2 * b + 2) +
                     "s: " + std::to_string(buckets[b]) + "; ";
    }
    MESSAGE("first request " << first.count() << " ms, last " << last.count()
                             << " ms after the offer; by 2 s: " << histogram);
    CHECK(last - first >= 10s);
    CHECK(*std::max_element(buckets.begin(), buckets.end()) <= 30);
}

TEST_CASE("installer: a trial reports Installed at once, keeps the journal and GC until its end") {
    Settings s = settings();
    s.trial_period = 10min;
    Rig rig(s);
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::trial);
    rig.sched.run_pending();
    CHECK(rig.traced("journal:trial"));
    CHECK(rig.trace.back() == "finish:keep:attempt=installed:packages");
    CHECK(rig.top().code == Code::installed);
    CHECK(rig.inst->ready());
    CHECK_FALSE(rig.inst->active());  // a shutdown does not wait for a trial
    CHECK(rig.inst->handles_crash_loop());
    CHECK(rig.inst->describe().rfind("0.117.0 on trial until ", 0) == 0);
    rig.settle(11min);
    REQUIRE(rig.inst->state() == State::idle);
    CHECK(rig.trace.back() == "finish:clear:gc:attempt=installed:packages");
    CHECK(rig.inst->active_version() == "0.117.0");
}

TEST_CASE("installer: the supervisor ending trialMaxRestarts times in the trial rolls it back") {
    Settings s = settings();
    s.trial_period = 10min;
    s.trial_max_restarts = 2;
    Rig rig(s);
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::trial);
    rig.sched.run_pending();
    // One end: the trial goes on; the restart brings it back to running.
    rig.service.change(service::State::waiting_to_restart);
    rig.sched.run_pending();
    CHECK(rig.inst->state() == State::trial);
    rig.service.change(service::State::running);
    rig.sched.run_pending();
    rig.service.change(service::State::waiting_to_restart);
    rig.sched.run_pending();
    CHECK(rig.inst->state() != State::trial);
    rig.settle();
    REQUIRE(rig.inst->state() == State::idle);
    CHECK(rig.traced("switch_back:0.116.0"));
    CHECK(rig.top().code == Code::install_failed);
    CHECK_MESSAGE(rig.top().error.rfind("rolled back after commit: the supervisor ended 2 times "
                                        "during the trial of 0.117.0 (update.trialMaxRestarts 2)",
                                        0) == 0,
                  rig.top().error);
    CHECK(rig.inst->active_version() == "0.116.0");
}

TEST_CASE("installer: a crash loop (the restart policy gave up) in the trial rolls back at once") {
    Settings s = settings();
    s.trial_period = 10min;
    Rig rig(s);
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::trial);
    rig.sched.run_pending();
    rig.service.change(service::State::stopped, service::Desired::gave_up);
    rig.settle();
    CHECK(rig.top().code == Code::install_failed);
    CHECK_MESSAGE(
        rig.top().error.find("crash-looped during the trial of 0.117.0") != std::string::npos,
        rig.top().error);
}

TEST_CASE(
    "installer: a newer offer ends a trial as passed; a shutdown leaves it to the next start") {
    Settings s = settings();
    s.trial_period = 10min;
    {
        Rig rig(s);
        rig.inst->offer(offer_of("0.117.0"));
        rig.until(State::trial);
        rig.sched.run_pending();
        rig.inst->offer(offer_of("0.118.0", 'q'));
        CHECK(rig.inst->state() == State::committed);
        rig.until(State::trial);
        // The first trial was committed (journal cleared, GC) before the new install began,
        // which has a trial of its own.
        CHECK(rig.traced("finish:clear:gc:attempt=installed:packages"));
        CHECK(rig.count("journal:trial") == 2);
        CHECK(rig.inst->describe().rfind("0.118.0 on trial until ", 0) == 0);
    }
    {
        Rig rig(s);
        rig.inst->offer(offer_of("0.117.0"));
        rig.until(State::trial);
        rig.sched.run_pending();
        rig.inst->shutdown();
        CHECK(rig.inst->state() == State::idle);
        CHECK_FALSE(rig.traced("finish:clear"));  // the journal stays for the next start
    }
}

TEST_CASE("installer: a transient download failure is fetched again, reported as retrying") {
    Rig rig(with_retry_for(10min));
    int failures = 3;
    rig.fetcher.result_for = [&](const download::Request& r) -> Result<download::Artifact> {
        if (failures-- > 0) return fail(Errc::network, "download: HTTP 503, after 5 tries (u)");
        return rig.fetcher.artifact(r);
    };
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK(rig.fetcher.requests.size() == 4);
    CHECK(rig.top().code == Code::installed);
    CHECK(std::any_of(rig.reports.begin(), rig.reports.end(), [](const Report& r) {
        return r.packages[0].code == Code::downloading &&
               r.packages[0].error == "retrying: download: HTTP 503, after 5 tries (u)";
    }));
    CHECK_FALSE(rig.reported(Code::install_failed));
}

TEST_CASE("installer: retries end with update.retryFor, recorded transient (not quarantined)") {
    Rig rig(with_retry_for(30s));
    rig.fetcher.result_for = always_failing(Errc::network, "download: connection refused (u)");
    const MonoTime start = rig.sched.now();
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK(rig.top().code == Code::install_failed);
    CHECK(rig.top().error.find("download: connection refused (u); gave up after ") == 0);
    CHECK(rig.top().error.find("(update.retryFor is 30s)") != std::string::npos);
    // 5 s, 10 s, 20 s cut to what is left: the last try is at the end of the budget.
    CHECK(rig.fetcher.requests.size() >= 4);
    CHECK(rig.sched.now() - start >= 30s);
    CHECK(rig.recorded().cls == FailureClass::transient);
}

TEST_CASE("installer: a refused download (a 404) is fetched once, not quarantined") {
    Rig rig(with_retry_for(10min));
    rig.fetcher.result_for = always_failing(Errc::refused, "download: HTTP 404 Not Found (u)");
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK(rig.fetcher.requests.size() == 1);
    CHECK(rig.top().code == Code::install_failed);
    CHECK(rig.top().error == "download: HTTP 404 Not Found (u)");
    CHECK(rig.recorded().cls == FailureClass::refused);
}

TEST_CASE("installer: a cancel during the wait between retries fetches nothing more") {
    Rig rig(with_retry_for(10min));
    rig.fetcher.result_for = always_failing(Errc::timeout, "download: stalled (u)");
    rig.inst->offer(offer_of("0.117.0"));
    // One second: the first fetch failed, the first wait (2.5 s at least) has not passed.
    for (int i = 0; i < 10; ++i) {
        rig.sched.run_pending();
        rig.sched.advance(100ms);
    }
    REQUIRE(rig.fetcher.requests.size() == 1);
    CHECK(rig.top().error == "retrying: download: stalled (u)");
    rig.inst->shutdown();
    rig.sched.advance(10min);
    rig.sched.run_pending();
    CHECK(rig.fetcher.requests.size() == 1);
}

namespace {

// What an Observer heard (update/events.hpp).
struct Heard {
    std::vector<State> states;
    std::vector<Ending> endings;
    std::vector<uint64_t> downloads;
};

void listen(Rig& rig, Heard& h) {
    Observer o;
    o.state = [&h](State s) { h.states.push_back(s); };
    o.ended = [&h](const Ending& e) { h.endings.push_back(e); };
    o.downloaded = [&h](uint64_t bytes, Duration) { h.downloads.push_back(bytes); };
    rig.inst->observe(std::move(o));
}

}  // namespace

TEST_CASE("installer: the observer hears every state, one ending per install and the download") {
    Rig rig;
    Heard h;
    listen(rig, h);
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    REQUIRE(h.states.size() >= 2);
    CHECK(h.states.front() == State::checking);
    CHECK(h.states.back() == State::idle);
    CHECK(std::count(h.states.begin(), h.states.end(), State::committed) == 1);
    REQUIRE(h.endings.size() == 1);
    CHECK(h.endings[0].kind == Ending::Kind::installed);
    CHECK(h.downloads.size() == 1);

    // The same version again, found installed at Checking: nothing was installed, no ending.
    rig.inst->offer(offer_of("0.117.0", 'q'));
    rig.settle();
    CHECK(h.endings.size() == 1);
}

TEST_CASE("installer: the observer hears why an install ended, with the code and the rule") {
    Rig rig;
    Heard h;
    listen(rig, h);
    SUBCASE("a health check that fails: rolled back, no crash loop") {
        rig.health.answer = [&](const Url& u) -> Result<int> {
            if (u == kCollectorHealth && rig.volume.inspection.active == "0.117.0") return 503;
            return 200;
        };
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        REQUIRE(h.endings.size() == 1);
        CHECK(h.endings[0].kind == Ending::Kind::rolled_back);
        CHECK(h.endings[0].code == update::Failure::health);
        CHECK_FALSE(h.endings[0].crash_loop);
    }
    SUBCASE("a preflight that fails: failed before the swap") {
        rig.preflight.error = "--version printed 0.118.0";
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        REQUIRE(h.endings.size() == 1);
        CHECK(h.endings[0].kind == Ending::Kind::failed);
        CHECK(h.endings[0].code == update::Failure::preflight);
        CHECK(h.downloads.size() == 1);
    }
    SUBCASE("a downgrade refused at Checking: failed by the policy, its rule named") {
        rig.inst->offer(offer_of("0.110.0"));
        rig.settle();
        REQUIRE(h.endings.size() == 1);
        CHECK(h.endings[0].kind == Ending::Kind::failed);
        CHECK(h.endings[0].code == update::Failure::policy);
        CHECK(h.endings[0].rule == Rule::downgrade);
        CHECK(h.downloads.empty());
    }
}

// --- Issue 35: offers as fleet servers send them; issue 43 items 2-6 --------------------------

namespace {

// Runs the fake clock for `span`, sending `o` again every `every`, and counts the Checkings
// (one volume inspection each) that the resends caused.
size_t checkings_while_resending(Rig& rig, const Offer& o, Duration span, Duration every) {
    const size_t before = rig.count("inspect");
    for (Duration t = 0s; t < span; t += every) {
        rig.inst->offer(o);
        for (Duration s = 0s; s < every; s += 100ms) {
            rig.sched.run_pending();
            rig.sched.advance(100ms);
        }
    }
    rig.settle();
    return rig.count("inspect") - before;
}

}  // namespace

TEST_CASE("offers sent again: a transient end past retryFor is fetched again when sent again") {
    Rig rig(with_retry_for(30s));
    bool down = true;
    rig.fetcher.result_for = [&](const download::Request& r) -> Result<download::Artifact> {
        if (down) return fail(Errc::network, "download: connection refused (u)");
        return rig.fetcher.artifact(r);
    };
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    REQUIRE(rig.top().code == Code::install_failed);
    CHECK(rig.recorded().cls == FailureClass::transient);
    const size_t fetched = rig.fetcher.requests.size();
    // The artifact server is back; the OpAMP server sends the same offer (same hash) again.
    down = false;
    rig.resend(offer_of("0.117.0"));
    CHECK(rig.fetcher.requests.size() == fetched + 1);
    CHECK(rig.top().code == Code::installed);
    CHECK(rig.inst->active_version() == "0.117.0");
}

TEST_CASE("offers sent again: a deterministic end is answered quarantined, with no request") {
    Rig rig;
    rig.fetcher.sha_override = std::string(64, 'f');  // the bytes are not the offered ones
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    REQUIRE(rig.top().code == Code::install_failed);
    REQUIRE(rig.recorded().cls == FailureClass::deterministic);
    const size_t fetched = rig.fetcher.requests.size();
    rig.resend(offer_of("0.117.0"));
    CHECK(rig.fetcher.requests.size() == fetched);
    CHECK(rig.top().code == Code::install_failed);
    CHECK(rig.top().error.rfind("quarantined: content hash mismatch", 0) == 0);
    // `forget` lifted it (last-attempt.json "lifted"), the bytes are right now: the same offer
    // sent again installs.
    rig.volume.inspection.last_attempt->lifted = "2026-12-07T00:00:00Z";
    rig.fetcher.sha_override.clear();
    rig.sched.advance(10s);  // past the second backoff step
    rig.resend(offer_of("0.117.0"));
    CHECK(rig.fetcher.requests.size() == fetched + 1);
    CHECK(rig.top().code == Code::installed);
}

TEST_CASE(
    "offers sent again: a server resending a failed offer every second gets one Checking "
    "per backoff step") {
    Rig rig;
    rig.fetcher.sha_override = std::string(64, 'f');
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    REQUIRE(rig.recorded().cls == FailureClass::deterministic);
    const size_t fetched = rig.fetcher.requests.size();
    const size_t checks = checkings_while_resending(rig, offer_of("0.117.0"), 2min, 1s);
    MESSAGE("Checkings in 2 min of resends every second: " << checks);
    // Steps of at least 2.5, 5, 10, 20, 40 s (5 s doubling, jittered to half or more): at most 5
    // fit in 120 s; without the gate it would be 120.
    CHECK(checks >= 3);
    CHECK(checks <= 5);
    CHECK(rig.fetcher.requests.size() == fetched);  // every one answered from the quarantine
}

TEST_CASE("offers sent again: a refused download ends at once, 0 retries, not quarantined") {
    Rig rig(with_retry_for(6h));
    rig.fetcher.result_for = always_failing(
        Errc::refused,
        "download: http://10.0.0.1/x.tar.gz: refusing a plaintext connection through a proxy to "
        "10.0.0.1, which is not a loopback address (allowInsecureTransport is off)");
    const MonoTime start = rig.sched.now();
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK(rig.fetcher.requests.size() == 1);
    CHECK(rig.sched.now() - start < 5s);
    CHECK(rig.top().code == Code::install_failed);
    CHECK(rig.top().error.find("refusing a plaintext connection") != std::string::npos);
    const bool retried = std::any_of(rig.reports.begin(), rig.reports.end(), [](const Report& r) {
        return r.packages[0].error.rfind("retrying", 0) == 0;
    });
    CHECK_FALSE(retried);  // never "retrying: …"
    CHECK(rig.recorded().cls == FailureClass::refused);
    // Fixed (the operator allowed the transport): the same offer sent again installs.
    rig.fetcher.result_for = nullptr;
    rig.resend(offer_of("0.117.0"));
    CHECK(rig.top().code == Code::installed);
}

TEST_CASE("offers sent again: not enough space known from Content-Length is refused at once") {
    Rig rig(with_retry_for(6h));
    rig.fetcher.result_for = always_failing(
        Errc::refused, "download: not enough space on /state/spool: need 34936318, have 28110848");
    rig.inst->offer(offer_of("0.117.0"));
    rig.settle();
    CHECK(rig.fetcher.requests.size() == 1);
    CHECK(rig.top().code == Code::install_failed);
    CHECK(rig.top().error.find("need 34936318, have 28110848") != std::string::npos);
    CHECK(rig.recorded().cls == FailureClass::refused);
}

TEST_CASE("offers sent again: the same install with a fresh URL keeps its download and jitter") {
    Rig rig(with_retry_for(10min));
    int failures = 1;
    rig.fetcher.result_for = [&](const download::Request& r) -> Result<download::Artifact> {
        if (failures-- > 0) return fail(Errc::network, "download: connection reset (u)");
        return rig.fetcher.artifact(r);
    };
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::downloading);
    while (rig.fetcher.requests.empty()) {
        rig.sched.run_pending();
        rig.sched.advance(100ms);
    }
    // The first fetch failed; during the wait before the retry the server renews the URL.
    Offer renewed = offer_of("0.117.0");
    renewed.packages[0].file->url = "https://artifacts.example/otelcol-0.117.0.tar.gz?sig=new";
    renewed.all_packages_hash = "renewed";
    const size_t fetched = rig.fetcher.requests.size();
    rig.inst->offer(renewed);
    CHECK(rig.inst->state() == State::downloading);  // not cancelled, not started over
    CHECK(rig.inst->report().all_packages_hash == "renewed");
    rig.settle();
    REQUIRE(rig.fetcher.requests.size() == fetched + 1);
    CHECK(rig.fetcher.requests.back().url == renewed.packages[0].file->url);
    CHECK(rig.top().code == Code::installed);
}

TEST_CASE(
    "offers sent again: a resumed download whose digest mismatches is fetched once from "
    "zero") {
    SUBCASE("the kept part was stale: the fresh download installs") {
        Rig rig;
        rig.fetcher.result_for = [&](const download::Request& r) -> Result<download::Artifact> {
            download::Artifact a = rig.fetcher.artifact(r);
            if (!r.fresh) {
                a.resumed = true;
                a.sha256_hex = std::string(64, 'f');
            }
            return a;
        };
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        REQUIRE(rig.fetcher.requests.size() == 2);
        CHECK_FALSE(rig.fetcher.requests[0].fresh);
        CHECK(rig.fetcher.requests[1].fresh);
        CHECK(rig.top().code == Code::installed);
    }
    SUBCASE("the fresh download mismatches too: quarantined") {
        Rig rig;
        rig.fetcher.result_for = [&](const download::Request& r) -> Result<download::Artifact> {
            download::Artifact a = rig.fetcher.artifact(r);
            a.resumed = !r.fresh;
            a.sha256_hex = std::string(64, 'f');
            return a;
        };
        rig.inst->offer(offer_of("0.117.0"));
        rig.settle();
        CHECK(rig.fetcher.requests.size() == 2);
        CHECK(rig.top().error.rfind("content hash mismatch", 0) == 0);
        CHECK(rig.recorded().cls == FailureClass::deterministic);
    }
}

TEST_CASE(
    "offers sent again: a signature refused for want of a root, or under a replaced root, "
    "is verified again") {
    Settings s = settings();
    s.require_signature = true;
    Rig rig(s);
    SUBCASE("no usable root: refused, not quarantined") {
        rig.verifier.root_problem = "trusted root /etc/myriarch/trusted_root.json: missing";
        rig.inst->offer(offer_of("0.117.0", 'p', "{bundle}"));
        rig.settle();
        CHECK(rig.top().error.find("trusted root") != std::string::npos);
        CHECK(rig.recorded().cls == FailureClass::refused);
        CHECK_FALSE(rig.traced("fetch:"));
        // The right root loaded: the offer sent again is verified and installed.
        rig.verifier.root_problem.clear();
        rig.verifier.good_bundle = "{bundle}";
        rig.resend(offer_of("0.117.0", 'p', "{bundle}"));
        CHECK(rig.top().code == Code::installed);
    }
    SUBCASE("refused under root A: quarantined while A is in use, verified again under B") {
        rig.verifier.trust_id = "aaaa";
        rig.inst->offer(offer_of("0.117.0", 'p', "{bundle}"));
        rig.settle();
        REQUIRE(rig.recorded().cls == FailureClass::deterministic);
        CHECK(rig.recorded().trust == "aaaa");
        rig.resend(offer_of("0.117.0", 'p', "{bundle}"));
        CHECK(rig.top().error.rfind("quarantined: signature: ", 0) == 0);
        CHECK(rig.count("verify:") == 1);
        rig.verifier.trust_id = "bbbb";  // the operator replaced the root
        rig.verifier.good_bundle = "{bundle}";
        rig.sched.advance(10s);
        rig.resend(offer_of("0.117.0", 'p', "{bundle}"));
        CHECK(rig.count("verify:") == 2);
        CHECK(rig.top().code == Code::installed);
    }
}

TEST_CASE("installer: the view says the trial, its end and what it replaces (issue 35)") {
    Settings st = settings();
    st.trial_period = 10min;
    Rig rig(st);
    CHECK(rig.inst->view().state == "idle");
    rig.inst->offer(offer_of("0.117.0"));
    rig.until(State::trial);
    UpdateView v = rig.inst->view();
    CHECK(v.state == "trial");
    CHECK(v.target_version == "0.117.0");
    CHECK(v.previous_version == "0.116.0");
    CHECK(v.trial_until == format_rfc3339(rig.sched.wall() + 10min));
    CHECK(rig.inst->describe() == "0.117.0 on trial until " + v.trial_until);
    CHECK(v.last_error.empty());
    rig.settle(11min);
    CHECK(rig.inst->view().state == "idle");
    CHECK(rig.inst->view().trial_until.empty());
}
