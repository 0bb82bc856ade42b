// The chart's own configuration with the real peers (docs/real-peers.md): `helm template` renders
// packaging/helm/myriarch-collector in container mode; its updater.yaml, supervisor.yaml and
// collector.yaml are laid out as the pod mounts them, under a test root (every absolute pod path
// P becomes <root>P), and the real binary as PID 1 runs the real supervisor and collector from
// them with the token in the environment, as the pod's Secret gives it. The stand-in pod test
// (tests/integration/packaging/pod_test.sh) cannot tell whether upstream accepts these files.
#include <doctest/doctest.h>

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

// The pinned helm (scripts/deps.sh; scripts/test.sh exports MYR_HELM), or "" with the reason.
std::string helm(std::string& why) {
    if (const char* h = std::getenv("MYR_HELM"); h && *h) return h;
    SpawnOptions at_source;
    at_source.cwd = source_dir();
    RunResult r = run({"bash", "-c", ". scripts/deps.sh && myr_need_helm"}, 300s, at_source);
    if (r.exit_code != 0) {
        why = "helm could not be installed: " + r.err;
        return "";
    }
    std::string path = r.out;
    while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
    return path;
}

// One `data` entry of the rendered ConfigMap: the block scalar under "  <key>: |".
std::string config_map_entry(const std::string& rendered, const std::string& key) {
    std::istringstream in(rendered);
    std::string out;
    bool inside = false;
    for (std::string line; std::getline(in, line);) {
        if (!inside) {
            inside = line == "  " + key + ": |";
            continue;
        }
        if (!line.empty() && line.rfind("    ", 0) != 0) break;  // the next key
        out += (line.empty() ? "" : line.substr(4)) + "\n";
    }
    REQUIRE_MESSAGE(!out.empty(), "no " << key << " in the rendered ConfigMap:\n" << rendered);
    return out;
}

// Every absolute path of the pod that the configs name, moved under `root`.
std::string under(const std::string& root, std::string text) {
    for (const char* prefix : {"/var/lib/myriarch/", "/var/lib/otelcol/", "/etc/myriarch/",
                               "/shared/", "/usr/local/bin/"}) {
        const std::string p(prefix);
        for (size_t at = 0; (at = text.find(p, at)) != std::string::npos;
             at += root.size() + p.size()) {
            text.insert(at, root);
        }
    }
    return text;
}

}  // namespace

TEST_CASE("real chart: the chart's configs run the real supervisor and collector, and install") {
    if (!can_run_pid1()) return;
    const std::string t = tools();
    if (t.empty()) return;
    std::string why;
    const std::string helm_bin = helm(why);
    if (helm_bin.empty()) MYR_SKIP(why);
    Peers p(t);
    const std::string root = p.dir / "pod";
    GoServer server(p.dir, t, {"--token", p.token});
    // Signature verification stays on, as the chart's default: the trusted root is a value.
    if (std::string no = signer_unavailable(); !no.empty()) MYR_SKIP(no);
    const std::string release = p.release_archive(t + "/otelcol-2", "otelcol-2.tar.gz");
    ArtifactServer artifacts(p.dir / "artifacts");
    const int otlp_grpc = reserve_port(), otlp_http = p.otlp_port;
    const std::string sig = p.dir / "sigstore";
    sign_artifacts(sig, {release});

    const std::string chart = source_dir() + "/packaging/helm/myriarch-collector";
    auto set = [](const std::string& k, const std::string& v) { return k + "=" + v; };
    RunResult rendered = run(
        {helm_bin, "template", "pod", chart, "--show-only", "templates/configmap.yaml", "--set",
         "mode=statefulset", "--set", "containerMode.enabled=true", "--set",
         set("server.endpoint", server.ws_url()), "--set",
         "server.enrollmentToken.secretName=enrollment", "--set-file",
         set("containerMode.trustedRoot.json", sig + "/trusted_root.json"), "--set",
         set("containerMode.signerIdentity.subject", kSignerSubject), "--set",
         // Our test signer's releases, not the upstream contrib ones whose repository, workflow
         // and tag the chart pins by default (update_test.cpp binds our own to the version).
         "containerMode.signerIdentity.sourceRepositoryRef=", "--set",
         "containerMode.signerIdentity.buildConfigUri=", "--set",
         "containerMode.signerIdentity.sourceRepositoryUri=", "--set",
         "containerMode.signerIdentity.githubWorkflowName=", "--set",
         set("containerMode.allowedDownloadPrefixes[0]", artifacts.url("http", "")), "--set",
         "containerMode.healthTimeout=30s", "--set", "containerMode.healthInterval=500ms", "--set",
         set("containerMode.healthPort", std::to_string(p.updater_health_port)), "--set",
         set("containerMode.supervisorHealthPort", std::to_string(p.supervisor_health_port)),
         "--set", set("collectorHealthPort", std::to_string(p.collector_health_port)), "--set",
         set("ports.otlp.containerPort", std::to_string(otlp_grpc)), "--set",
         set("ports.otlp-http.containerPort", std::to_string(otlp_http)),
         // The collector's own metrics endpoint (:8888) would collide with any other collector.
         "--set", "config.service.telemetry.metrics.level=none"},
        120s);
    REQUIRE_MESSAGE(rendered.exit_code == 0, "helm template: " << rendered.err);

    // The pod's files: the ConfigMap's entries, the trusted root's ConfigMap, the image paths.
    for (const char* d : {"/etc/myriarch/config", "/etc/myriarch/trust", "/shared",
                          "/usr/local/bin", "/var/lib/myriarch", "/var/lib/otelcol/supervisor"}) {
        REQUIRE(run({"mkdir", "-p", root + d}).exit_code == 0);
    }
    for (const char* key : {"updater.yaml", "supervisor.yaml", "collector.yaml"}) {
        write_file(root + "/etc/myriarch/config/" + key,
                   under(root, config_map_entry(rendered.out, key)));
    }
    REQUIRE(run({"cp", sig + "/trusted_root.json", root + "/etc/myriarch/trust/"}).exit_code == 0);
    REQUIRE(
        run({"cp", t + "/opampsupervisor", root + "/usr/local/bin/opampsupervisor"}).exit_code ==
        0);
    REQUIRE(run({"cp", p.seed, root + "/shared/otelcol-contrib"}).exit_code == 0);
    const std::string updater_yaml = root + "/etc/myriarch/config/updater.yaml";
    RunResult valid =
        run({updater_bin(), "validate", "--config", updater_yaml, "--mode", "container"});
    REQUIRE_MESSAGE(valid.exit_code == 0, valid.out << valid.err << read_file(updater_yaml));

    // The token as the pod's Secret gives it to the main container, and the pod's host name.
    SpawnOptions env;
    env.env["MYRIARCH_ENROLLMENT_TOKEN"] = p.token;
    env.env["HOSTNAME"] = "myriarch-collector-0";
    Updater u(updater_yaml, Launch::pid1, env);
    auto logs = [&] {
        return "updater log:\n" + u.log() + "\nstdout (supervisor, collector):\n" + u.out() +
               "\nserver:\n" + server.err();
    };
    REQUIRE_MESSAGE(p.wait_collector_healthy(), logs());
    // The real supervisor of the release the chart's images default to serves the updater's
    // supervisor health URL from the chart's healthcheck entry (the test moves only its port;
    // packaging-chart-rules checks that the default port renders the updater's default URL).
    const std::string health_url =
        "http://127.0.0.1:" + std::to_string(p.supervisor_health_port) + "/health";
    CHECK_MESSAGE(
        read_file(updater_yaml).find("healthUrl: \"" + health_url + "\"") != std::string::npos,
        read_file(updater_yaml));
    CHECK(
        wait_until([&] { return p.get(p.supervisor_health_port, "/health") == 200; }, 30s, 100ms));
    CHECK(wait_until([&] { return p.get(p.updater_health_port, "/readyz") == 200; }, 30s, 100ms));
    // Both agents with the one token, the supervisor's from `${env:…}` in its headers.
    REQUIRE_MESSAGE(wait_until([&] { return server.events("open").size() >= 2; }, 30s, 50ms),
                    logs());
    for (auto& o : server.events("open")) {
        CHECK(str(o.get(), "authorization") == "Bearer " + p.token);
    }
    CHECK(server.events("rejected").empty());
    REQUIRE_MESSAGE(
        wait_until([&] { return supervisor_reported(server, p.versions[0]); }, 30s, 100ms), logs());
    bool same_host = false;
    for (auto& m : server.events("message")) {
        json_object* non = get(m.get(), "non_identifying");
        if (non && str(non, "host.name") == "myriarch-collector-0") same_host = true;
    }
    CHECK_MESSAGE(same_host, "no agent reported host.name myriarch-collector-0");

    // A signed install through the chart's update settings.
    const size_t from = server.all().size();
    server.offer(p.versions[1], artifacts.url("http", "otelcol-2.tar.gz"),
                 wired::sha256_of(release), sig + "/signed/otelcol-2.tar.gz.json");
    CHECK_MESSAGE(
        wait_until([&] { return supervisor_reported(server, p.versions[1], from); }, 90s, 100ms),
        logs());
    CHECK(current_of(root + "/var/lib/myriarch/collector") == "versions/" + p.versions[1]);

    // The chart's stopSignal INT: the supervisor says goodbye to the server itself.
    CHECK(u.stop(60s) == 0);
    bool bye = false;
    for (auto& m : server.from("otelcol-real")) {
        if (get(get(m.get(), "msg"), "agentDisconnect") != nullptr) bye = true;
    }
    CHECK_MESSAGE(bye, logs());
}
