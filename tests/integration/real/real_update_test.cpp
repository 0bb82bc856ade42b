// A real update (docs/real-peers.md): the real binary as PID 1 runs the real OpAMP Supervisor; the
// opamp-go server offers the second real collector build as a signed tar.gz; the updater installs
// it and the supervisor, restarted on the new `current`, reports the new version itself (a target
// is complete only when the agent reports it, ADR-0006). Then a build that fails at every start,
// though its --version and validate pass, is offered: the health check fails against the real
// endpoints, the updater rolls back, and the supervisor reports the old version again.
#include <doctest/doctest.h>
#include <json-c/json.h>

#include <chrono>

#include "artifact_server.hpp"
#include "pid1.hpp"
#include "real_support.hpp"
#include "test_signer.hpp"

using namespace myr::test;
using namespace myr::test::real;
using opamp::get;
using opamp::str;

namespace {

using Status = UpdaterStatus;

// The collector process below the updater runs the binary of `version` from the volume.
bool collector_runs(const Updater& u, const Peers& p, const std::string& version) {
    return find_descendant(u.pid(), p.install + "/versions/" + version + "/otelcol-contrib") > 0;
}

}  // namespace

TEST_CASE(
    "real update: a signed release installed under the real supervisor, a broken one rolled "
    "back") {
    if (!can_run_pid1()) return;
    const std::string t = tools();
    if (t.empty()) return;
    if (std::string why = signer_unavailable(); !why.empty()) MYR_SKIP(why);
    Peers p(t);
    // The stop of an install goes through container.stopSignal: TERM kills the real supervisor at
    // once, INT (the chart's setting) stops it in order. Both must keep its storage and identity.
    std::string stop_signal;
    SUBCASE("container.stopSignal INT (the chart's)") {
        stop_signal = "INT";
    }
    SUBCASE("container.stopSignal TERM (the default)") {
        stop_signal = "";
    }
    CAPTURE(stop_signal);
    const std::string v1 = p.versions[0], v2 = p.versions[1], broken = p.versions[2];

    // The releases, signed under a private test root (a real signer against mocked Fulcio and
    // Rekor), served over HTTP on 127.0.0.1.
    const std::string good = p.release_archive(t + "/otelcol-2", "otelcol-2.tar.gz");
    const std::string bad = p.release_archive(t + "/otelcol-broken", "otelcol-broken.tar.gz");
    const std::string sig = p.dir / "sigstore";
    sign_artifacts(sig, {good, bad});
    ArtifactServer artifacts(p.dir / "artifacts");

    GoServer server(p.dir, t, {"--token", p.token});
    p.write_peer_configs(server.ws_url());
    const int collector_health = p.collector_health_port;
    p.write_updater(server.ws_url(), stop_signal, "", [&](UpdaterConfig& c) {
        c.require_signature = true;
        c.trusted_root_file = sig + "/trusted_root.json";
        c.signer_subject = kSignerSubject;
        c.signer_issuer = kSignerIssuer;
        c.allowed_download_prefixes = {artifacts.url("http", "")};
        c.collector_health_url = "http://127.0.0.1:" + std::to_string(collector_health) + "/";
        // The supervisor's start (with its bootstrap run of the collector) takes well under a
        // second here; 20 s leaves room on a loaded machine and bounds the broken build's wait.
        c.health_timeout = "20s";
        c.health_interval = "500ms";
        c.health_successes = 3;
        c.keep_versions = 2;
    });

    Updater u(p.updater_config());
    auto logs = [&] {
        return "updater log:\n" + u.log() + "\nstdout (supervisor):\n" + u.out() +
               "\nagent.log:\n" + read_file(p.storage + "/agent.log") + "\nserver:\n" +
               server.err();
    };
    REQUIRE_MESSAGE(p.wait_collector_healthy(), logs());
    REQUIRE_MESSAGE(wait_until([&] { return supervisor_reported(server, v1); }, 30s, 100ms),
                    logs());
    REQUIRE(wait_until([&] { return !server.from("myriarch-updater").empty(); }, 30s, 100ms));
    const std::string uid = p.supervisor_instance_id();
    REQUIRE(!uid.empty());

    // The second build, offered with its SHA-256 and Sigstore bundle.
    size_t from = server.all().size();
    auto t0 = std::chrono::steady_clock::now();
    server.offer(v2, artifacts.url("http", "otelcol-2.tar.gz"), wired::sha256_of(good),
                 sig + "/signed/otelcol-2.tar.gz.json");
    auto st = wait_final(server, v2, from, 120s);
    REQUIRE_MESSAGE(st, "no final status for " << v2 << "\n" << logs());
    CHECK_MESSAGE(st->status == "PackageStatusEnum_Installed", st->error << "\n" << logs());
    CHECK(st->has == v2);
    const auto installed_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    // The supervisor, restarted on the new `current`, speaks for the new collector itself.
    CHECK_MESSAGE(wait_until([&] { return supervisor_reported(server, v2, from); }, 30s, 100ms),
                  logs());
    MESSAGE("offer to Installed: " << installed_ms << " ms (stopSignal "
                                   << (stop_signal.empty() ? "TERM" : stop_signal) << ")");
    CHECK(current_of(p.install) == "versions/" + v2);
    CHECK(collector_runs(u, p, v2));
    CHECK(p.get(collector_health, "/") == 200);
    CHECK(p.get(p.supervisor_health_port, "/health") == 200);
    CHECK(wait_until(
        [&] { return updater_attribute(server, "dev.myriarch.collector.version") == v2; }, 20s,
        100ms));
    // The collector kept its identity through the restart.
    CHECK(p.supervisor_instance_id() == uid);
    CHECK(updater_attribute(server, "dev.myriarch.collector.instance_uid") == uid);

    // The broken build: --version and validate pass (the preflight cannot see it), every start
    // fails, so the health check against the real endpoints fails and the updater rolls back.
    from = server.all().size();
    t0 = std::chrono::steady_clock::now();
    server.offer(broken, artifacts.url("http", "otelcol-broken.tar.gz"), wired::sha256_of(bad),
                 sig + "/signed/otelcol-broken.tar.gz.json");
    st = wait_final(server, broken, from, 180s);
    REQUIRE_MESSAGE(st, "no final status for " << broken << "\n" << logs());
    CHECK_MESSAGE(st->status == "PackageStatusEnum_InstallFailed", logs());
    CHECK(st->has == v2);
    MESSAGE("the broken build's offer to InstallFailed: "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - t0)
                   .count()
            << " ms (healthTimeout 20 s); as reported: " << st->error);
    CHECK_MESSAGE(st->error.find("rolled back") != std::string::npos, st->error);
    // The old collector runs again, and the supervisor reports the old version again on the
    // connection it made after the rollback.
    CHECK(current_of(p.install) == "versions/" + v2);
    CHECK(wait_until([&] { return p.get(collector_health, "/") == 200; }, 30s, 100ms));
    CHECK_MESSAGE(wait_until([&] { return supervisor_reported(server, v2, from); }, 30s, 100ms),
                  logs());
    CHECK_FALSE(supervisor_reported(server, broken));
    CHECK(collector_runs(u, p, v2));
    CHECK(p.supervisor_instance_id() == uid);
    CHECK(wait_until([&] { return p.get(p.updater_health_port, "/readyz") == 200; }, 20s, 100ms));

    CHECK(u.stop(60s) == 0);
}
