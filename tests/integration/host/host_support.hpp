// Host mode with the real peers under a real systemd (issue 27): a booted bookworm machine
// (tests/support/systemd_rig.hpp) whose root is seeded with
// - the updater's own unit, `Type=notify`, `myriarch-updater run --config
//   /etc/myriarch/updater.yaml`, `Restart=on-failure`;
// - the supervisor's unit running the real upstream OpAMP Supervisor (tests/real/build-tools.sh),
//   which starts the real collector from the volume's `current/`, stopped with INT (its orderly
//   shutdown, docs/real-peers.md), `Restart=on-failure` with a start limit of 3;
// and, on the host's 127.0.0.1 (the machine shares the host's network namespace), the opamp-go
// server both agents talk to and the artifact server with releases signed under a private test
// root. Neither unit is enabled: a case starts the updater once the machine is up, and the
// updater starts the supervisor's unit, so every step is the case's, not the boot's.
//
// Shared by the host cases (host_real_test.cpp) and the crash matrix through host mode.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "../real/real_support.hpp"
#include "artifact_server.hpp"
#include "systemd_rig.hpp"
#include "test_signer.hpp"
#include "updater_config.hpp"

namespace myr::test::host {

using real::GoServer;

// Where things are inside the machine.
inline const std::string kUpdaterUnit = "myriarch-updater.service";
inline const std::string kSupervisorUnit = "opampsupervisor.service";
inline const std::string kInstall = "/var/lib/myriarch/collector";
inline const std::string kState = "/var/lib/myriarch/state";
inline const std::string kStorage = "/var/lib/opampsupervisor";
inline const std::string kUpdaterYaml = "/etc/myriarch/updater.yaml";
inline const std::string kTrustedRoot = "/etc/myriarch/trusted_root.json";
inline const std::string kToken = "/etc/myriarch/token";
inline const std::string kSupervisorYaml = "/etc/opampsupervisor/supervisor.yaml";
inline const std::string kCollectorYaml = "/etc/opampsupervisor/collector.yaml";
inline const std::string kSeedBinary = "/usr/lib/myriarch/otelcol-contrib";
inline const std::string kUpdaterBin = "/usr/bin/myriarch-updater";
inline const std::string kSupervisorBin = "/usr/bin/opampsupervisor";
// The supervisor's account (otelcol), its uid and gid.
inline constexpr int kServiceUid = 990;

// The rootfs and the real peers, or "" after reporting why this machine has not got them.
struct Prerequisites {
    std::string rootfs, tools;
    bool ok() const { return !rootfs.empty() && !tools.empty(); }
};
inline Prerequisites prerequisites() {
    if (!is_root()) {
        report_skip("needs root for systemd-nspawn");
        return {};
    }
    if (std::string why = signer_unavailable(); !why.empty()) {
        report_skip(why);
        return {};
    }
    // The machine has none of the host's shared libraries (libuv, mbedTLS, …).
    if (run({"ldd", updater_bin()}).out.find("=>") != std::string::npos) {
        report_skip(updater_bin() +
                    " is linked dynamically; the host-mode cases run the static "
                    "build inside the machine (meson setup -Dstatic=true, scripts/test.sh's static "
                    "stage)");
        return {};
    }
    std::string rootfs = host_rootfs();
    if (rootfs.empty()) return {};
    return {rootfs, real::tools()};
}

// The second collector build and the one that fails at start, as signed tar.gz releases. Signed
// once per test process: the signer takes seconds, and every case offers the same releases.
struct Releases {
    std::string good, broken;  // the archives
    std::string good_sha256, broken_sha256;
    std::string sigstore;  // trusted_root.json, signed/<archive name>.json
    std::string bundle(const std::string& archive) const {
        return sigstore + "/signed/" + archive.substr(archive.rfind('/') + 1) + ".json";
    }
};
inline const Releases& releases(const std::string& tools) {
    static TempDir dir;
    static const Releases r = [&] {
        Releases out;
        out.good = real::release_archive(dir.path(), tools + "/otelcol-2", "otelcol-2.tar.gz");
        out.broken =
            real::release_archive(dir.path(), tools + "/otelcol-broken", "otelcol-broken.tar.gz");
        out.good_sha256 = wired::sha256_of(out.good);
        out.broken_sha256 = wired::sha256_of(out.broken);
        out.sigstore = dir / "sigstore";
        sign_artifacts(out.sigstore, {out.good, out.broken});
        return out;
    }();
    return r;
}

struct HostOptions {
    // The tools' collector build the volume is seeded with (host.seedBinary).
    std::string seed_build = "otelcol-1";
    // Lines added to the supervisor unit's [Service] section.
    std::string supervisor_service_extra;
    std::function<void(UpdaterConfig&)> tweak;
    // The volume laid out before the boot (versions/<first version>, `current` naming it), as
    // the updater's seeding would: the supervisor's unit can then run without the updater.
    bool volume_ready = false;
};

// One machine with the real peers, booted at construction (check booted()).
class HostMachine {
  public:
    HostMachine(const Prerequisites& pre, HostOptions opts = {})
        : tools_(pre.tools), opts_(std::move(opts)) {
        versions = real::collector_versions(tools_);
        const Releases& rel = releases(tools_);
        // Each case its own artifact directory: the server writes its port and record there.
        REQUIRE(run({"mkdir", "-p", dir / "artifacts"}).exit_code == 0);
        REQUIRE(run({"cp", rel.good, rel.broken, dir / "artifacts/"}).exit_code == 0);
        artifacts.emplace(dir / "artifacts");
        server.emplace(dir, tools_, std::vector<std::string>{"--token", token});
        write_seed(pre.rootfs, rel);
        machine.emplace(pre.rootfs, BootOptions{dir / "seed"});
    }

    bool booted() const { return machine && machine->booted(); }
    BootedSystemd& m() { return *machine; }
    // A path inside the machine, as the host reaches it.
    std::string at(const std::string& path) const { return machine->root() + path; }

    // Starts the updater's unit: systemctl returns once the updater said READY=1.
    RunResult start_updater() { return m().run({"systemctl", "start", kUpdaterUnit}, 120s); }
    std::string property(const std::string& unit, const std::string& prop) {
        std::string v = m().run({"systemctl", "show", "-p", prop, "--value", unit}).out;
        while (!v.empty() && v.back() == '\n') v.pop_back();
        return v;
    }
    std::string journal(const std::string& unit) {
        return m().run({"journalctl", "--no-pager", "-o", "cat", "-u", unit}).out;
    }
    // Where `current` points ("" when it is no link).
    std::string current() const { return real::current_of(at(kInstall)); }
    // A process of the machine runs the collector of `version` from the volume.
    bool collector_runs(const std::string& version) const {
        const std::string exe = kInstall + "/versions/" + version + "/otelcol-contrib";
        return real::find_descendant(machine->init_pid(), exe) > 0;
    }
    int get(int port, const std::string& path) const {
        return http_get("127.0.0.1", port, path, 2s).status;
    }
    bool collector_healthy() const { return get(collector_health_port, "/") == 200; }
    // The updater's health (ComponentHealth) in its newest report that carries one.
    struct Health {
        bool healthy = false;
        std::string status, last_error;
    };
    std::optional<Health> updater_health() const {
        std::optional<Health> h;
        for (auto& msg : server->from("myriarch-updater")) {
            json_object* health = opamp::get(opamp::get(msg.get(), "msg"), "health");
            if (health) {
                h = Health{opamp::flag(health, "healthy"), opamp::str(health, "status"),
                           opamp::str(health, "lastError")};
            }
        }
        return h;
    }

    // The first state: the updater up, the supervisor running the seeded version and reporting
    // it, the updater connected. Returns "" or what did not happen.
    std::string wait_first_version(Millis t = 90s) {
        RunResult r = start_updater();
        if (r.exit_code != 0) return "systemctl start " + kUpdaterUnit + ": " + r.err;
        if (!wait_until([&] { return collector_healthy(); }, t, 100ms)) {
            return "the collector never answered on its health port";
        }
        if (!wait_until([&] { return real::supervisor_reported(*server, versions[0]); }, 30s,
                        100ms)) {
            return "the supervisor never reported " + versions[0];
        }
        if (!wait_until([&] { return !server->from("myriarch-updater").empty(); }, 30s, 100ms)) {
            return "the updater never reported";
        }
        return "";
    }

    void offer_good() {
        const Releases& rel = releases(tools_);
        server->offer(versions[1], artifacts->url("http", "otelcol-2.tar.gz"), rel.good_sha256,
                      rel.bundle(rel.good));
    }
    void offer_broken() {
        const Releases& rel = releases(tools_);
        server->offer(versions[2], artifacts->url("http", "otelcol-broken.tar.gz"),
                      rel.broken_sha256, rel.bundle(rel.broken));
    }

    // Everything a failed case needs: both units' journals and states, the collector's log, the
    // server's stderr.
    std::string logs() {
        if (!booted()) return "not booted: " + (machine ? machine->boot_state() : "");
        return "updater (" + property(kUpdaterUnit, "ActiveState") + "):\n" +
               journal(kUpdaterUnit) + "\nsupervisor (" + property(kSupervisorUnit, "ActiveState") +
               "):\n" + journal(kSupervisorUnit) + "\nagent.log:\n" +
               read_file(at(kStorage + "/agent.log")) + "\neffective.yaml:\n" +
               read_file(at(kStorage + "/effective.yaml")) + "\nserver:\n" + server->err();
    }

    TempDir dir;  // the host's side: the seed, the servers' records
    std::vector<std::string> versions;
    std::string token = "host-peers-token-0123";
    int otlp_port = reserve_port();
    int collector_health_port = reserve_port();
    int supervisor_health_port = reserve_port();
    int updater_health_port = reserve_port();
    std::optional<ArtifactServer> artifacts;
    std::optional<GoServer> server;
    std::optional<BootedSystemd> machine;

  private:
    void write_seed(const std::string& rootfs, const Releases& rel) {
        const std::string s = dir / "seed";
        REQUIRE(run({"mkdir", "-p", s + "/usr/bin", s + "/usr/lib/myriarch", s + "/etc/myriarch",
                     s + "/etc/opampsupervisor", s + "/etc/systemd/system", s + kInstall,
                     s + kState, s + kStorage})
                    .exit_code == 0);
        copy(updater_bin(), s + kUpdaterBin);
        copy(tools_ + "/opampsupervisor", s + kSupervisorBin);
        copy(tools_ + "/" + opts_.seed_build, s + kSeedBinary);
        copy(rel.sigstore + "/trusted_root.json", s + kTrustedRoot);
        write_file(s + kToken, token + "\n", 0600);
        // mmdebstrap's minbase has no /etc/hosts, and the supervisor's bootstrap listens on
        // "localhost", which Go then asks the host's DNS for (and fails).
        write_file(s + "/etc/hosts", "127.0.0.1 localhost\n::1 localhost ip6-localhost\n");
        add_service_account(rootfs, s);
        if (opts_.volume_ready) {
            const std::string v = s + kInstall + "/versions/" + versions[0];
            REQUIRE(run({"mkdir", "-p", v}).exit_code == 0);
            copy(tools_ + "/" + opts_.seed_build, v + "/otelcol-contrib");
            REQUIRE(::symlink(("versions/" + versions[0]).c_str(),
                              (s + kInstall + "/current").c_str()) == 0);
        }
        write_file(s + kCollectorYaml, collector_yaml());
        write_file(s + kSupervisorYaml, supervisor_yaml());
        write_file(s + "/etc/systemd/system/" + kUpdaterUnit, updater_unit());
        write_file(s + "/etc/systemd/system/" + kSupervisorUnit, supervisor_unit());
        updater_config().write(s + kUpdaterYaml);
    }
    // The supervisor's own account, as an operator would make it (useradd --system): the
    // supervisor, its collector and the updater's preflight run as otelcol, not as root.
    void add_service_account(const std::string& rootfs, const std::string& s) const {
        write_file(s + "/etc/passwd", read_file(rootfs + "/etc/passwd") +
                                          "otelcol:x:" + std::to_string(kServiceUid) + ":" +
                                          std::to_string(kServiceUid) + "::" + kStorage +
                                          ":/usr/sbin/nologin\n");
        write_file(s + "/etc/group", read_file(rootfs + "/etc/group") +
                                         "otelcol:x:" + std::to_string(kServiceUid) + ":\n");
        const std::string owner = std::to_string(kServiceUid) + ":" + std::to_string(kServiceUid);
        REQUIRE(run({"chown", owner, s + kStorage}).exit_code == 0);
    }
    static void copy(const std::string& from, const std::string& to) {
        RunResult r = run({"cp", from, to}, 60s);
        REQUIRE_MESSAGE(r.exit_code == 0, "cp " << from << " " << to << ": " << r.err);
    }

    std::string updater_unit() const {
        return "[Unit]\n"
               "Description=myriarch-updater: the collector of " +
               kSupervisorUnit +
               "\n"
               "[Service]\n"
               "Type=notify\n"
               "ExecStart=" +
               kUpdaterBin + " run --config " + kUpdaterYaml +
               "\n"
               "Restart=on-failure\n"
               "RestartSec=1\n"
               // TERM to the updater alone: with the default (control-group) systemd's TERM
               // also kills the updater's own `systemctl stop|start` of the supervisor's unit
               // in the critical section, and the install fails on it (host_real_test.cpp).
               "KillMode=mixed\n"
               "TimeoutStopSec=150\n";
    }
    std::string supervisor_unit() const {
        return "[Unit]\n"
               "Description=OpenTelemetry OpAMP Supervisor\n"
               "StartLimitIntervalSec=60\n"
               "StartLimitBurst=3\n"
               "[Service]\n"
               "User=otelcol\n"
               "Group=otelcol\n"
               "ExecStart=" +
               kSupervisorBin + " --config=" + kSupervisorYaml +
               "\n"
               "KillSignal=SIGINT\n"
               "Restart=on-failure\n"
               "RestartSec=1\n"
               "TimeoutStopSec=20\n" +
               opts_.supervisor_service_extra;
    }
    // The collector's own config: OTLP in, debug out, health_check; its metrics off (the default
    // :8888 would collide with any other collector on the host's network).
    std::string collector_yaml() const {
        return "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:" +
               std::to_string(otlp_port) +
               "\nexporters:\n  debug: {}\n"
               "extensions:\n  health_check:\n    endpoint: 127.0.0.1:" +
               std::to_string(collector_health_port) +
               "\nservice:\n  extensions: [health_check]\n"
               "  telemetry:\n    metrics:\n      level: none\n"
               "  pipelines:\n    traces:\n      receivers: [otlp]\n      exporters: [debug]\n";
    }
    std::string supervisor_yaml() const {
        return "server:\n  endpoint: " + server->ws_url() +
               "\n  headers:\n    Authorization: \"Bearer " + token +
               "\"\n"
               "capabilities:\n  reports_effective_config: true\n  reports_health: true\n"
               "  accepts_remote_config: false\n"
               "agent:\n  executable: " +
               kInstall + "/current/otelcol-contrib\n  config_files: [" + kCollectorYaml +
               "]\n"
               "storage:\n  directory: " +
               kStorage +
               "\nhealthcheck:\n  endpoint: 127.0.0.1:" + std::to_string(supervisor_health_port) +
               "\ntelemetry:\n  logs:\n    level: info\n";
    }
    UpdaterConfig updater_config() const {
        UpdaterConfig c;
        c.endpoint = server->ws_url();
        c.enrollment_token_file = kToken;
        c.install_dir = kInstall;
        c.state_dir = kState;
        c.storage_dir = kStorage;
        c.supervisor_health_url =
            "http://127.0.0.1:" + std::to_string(supervisor_health_port) + "/health";
        c.collector_health_url = "http://127.0.0.1:" + std::to_string(collector_health_port) + "/";
        c.seed_binary = kSeedBinary;
        c.require_signature = true;
        c.trusted_root_file = kTrustedRoot;
        c.signer_subject = kSignerSubject;
        c.signer_issuer = kSignerIssuer;
        c.allowed_download_prefixes = {artifacts->url("http", "")};
        // The supervisor's start (with its bootstrap run of the collector) takes about a second;
        // 20 s leaves room on a loaded machine and bounds a broken build's wait.
        c.health_timeout = "20s";
        c.health_interval = "500ms";
        c.health_successes = 3;
        c.keep_versions = 2;
        c.host_service_name = kSupervisorUnit;
        c.host_poll_interval = "500ms";
        c.health_port = updater_health_port;
        if (opts_.tweak) opts_.tweak(c);
        return c;
    }

    std::string tools_;
    HostOptions opts_;
};

}  // namespace myr::test::host
