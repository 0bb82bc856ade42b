// The host package on a booted systemd (issue 27): packaging/host/build-deb.sh's .deb installed
// with dpkg into a Debian bookworm machine (tests/support/systemd_rig.hpp), next to the example
// supervisor unit running the real OpAMP Supervisor and collector (tests/real/build-tools.sh),
// the opamp-go server on the host's loopback.
#include <doctest/doctest.h>

#include <chrono>
#include <sstream>

#include "../real/real_support.hpp"
#include "harness.hpp"
#include "systemd_rig.hpp"

using namespace myr::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* kDocs = "/usr/share/doc/myriarch-updater/examples/";

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string property(BootedSystemd& m, const std::string& unit, const std::string& prop) {
    return trimmed(m.run({"systemctl", "show", "-p", prop, "--value", unit}).out);
}

// `text` with the first `from` replaced by `to`; the test fails when `from` is not there.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, "no '" << from << "' in:\n" << text);
    return text.replace(at, from.size(), to);
}

// The test build's shared libraries that the bookworm rootfs lacks, into the seed at their
// paths (merged /usr): a build that is not static runs inside the machine too. The static
// stage's binary needs none.
void seed_libraries(const std::string& bin, const std::string& rootfs, const TempDir& seed) {
    std::istringstream ldd(run({"ldd", bin}).out);
    for (std::string line; std::getline(ldd, line);) {
        size_t arrow = line.find("=> /");
        if (arrow == std::string::npos) continue;
        std::string path = line.substr(arrow + 3, line.find(' ', arrow + 3) - arrow - 3);
        if (path.rfind("/lib/", 0) == 0) path = "/usr" + path;
        if (exists(rootfs + path)) continue;
        REQUIRE(run({"install", "-D", "-m", "0644", path, seed / path.substr(1)}).exit_code == 0);
    }
}

// The collector's own config: OTLP in, debug out, health_check on `health_port`.
std::string collector_config(int otlp_port, int health_port) {
    return "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:" +
           std::to_string(otlp_port) +
           "\nexporters:\n  debug: {}\nextensions:\n  health_check:\n    endpoint: 127.0.0.1:" +
           std::to_string(health_port) +
           "\nservice:\n  extensions: [health_check]\n  telemetry:\n    metrics:\n"
           "      level: none\n  pipelines:\n    traces:\n      receivers: [otlp]\n"
           "      exporters: [debug]\n";
}

// The collector the supervisor's main process runs: its executable, as the machine resolves it.
std::string collector_exe(BootedSystemd& m) {
    const std::string pid = property(m, "opampsupervisor.service", "MainPID");
    if (pid.empty() || pid == "0") return "";
    // Every thread's children: a Go program forks from whichever thread runs the goroutine.
    std::istringstream kids(m.run({"sh", "-c", "cat /proc/" + pid + "/task/*/children"}).out);
    for (std::string kid; kids >> kid;) {
        std::string exe = trimmed(m.run({"readlink", "/proc/" + kid + "/exe"}).out);
        if (exe.find("otelcol-contrib") != std::string::npos) return exe;
    }
    return "";
}

}  // namespace

// Install, start, upgrade, stop, remove, install again, purge.
TEST_CASE("host package: the .deb installs on a booted systemd and its units start") {
    const std::string rootfs = bootable_rootfs();
    if (rootfs.empty()) return;
    const std::string tools = real::tools();
    if (tools.empty()) return;
    const std::string first = real::collector_versions(tools)[0];
    TempDir work, seed;
    // The package of this build's binary (the static stage's is what ships).
    SpawnOptions dynamic;
    dynamic.env["MYR_DEB_ALLOW_DYNAMIC"] = "1";
    RunResult deb =
        run({"bash", source_dir() + "/packaging/host/build-deb.sh", work / "deb", updater_bin()},
            120s, dynamic);
    REQUIRE_MESSAGE(deb.exit_code == 0, deb.err);
    REQUIRE(
        run({"install", "-D", trimmed(deb.out), seed / "opt/myr/myriarch-updater.deb"}).exit_code ==
        0);
    REQUIRE(run({"install", "-D", tools + "/opampsupervisor", seed / "usr/bin/opampsupervisor"})
                .exit_code == 0);
    // The seedBinary of updater.yaml: a collector shipped beside the updater.
    REQUIRE(run({"install", "-D", tools + "/otelcol-1", seed / "usr/lib/myriarch/otelcol-contrib"})
                .exit_code == 0);
    seed_libraries(updater_bin(), rootfs, seed);
    // The minbase rootfs has no /etc/hosts, and the supervisor's bootstrap listens on
    // "localhost": every host an operator installs on has one.
    REQUIRE(run({"mkdir", "-p", seed / "etc"}).exit_code == 0);
    write_file(seed / "etc/hosts", "127.0.0.1 localhost\n::1 localhost ip6-localhost\n");
    real::GoServer server(work, tools);
    const int otlp = reserve_port(), collector_health = reserve_port(),
              supervisor_health = reserve_port(), updater_health = reserve_port();

    BootedSystemd m(rootfs, {seed.path()});
    REQUIRE_MESSAGE(m.booted(), m.boot_state());

    // dpkg -i: the directories, the unit enabled, not started while updater.yaml is the
    // example (its trusted root, CA and token do not exist here).
    RunResult dpkg = m.run({"dpkg", "-i", "/opt/myr/myriarch-updater.deb"}, 120s);
    REQUIRE_MESSAGE(dpkg.exit_code == 0, dpkg.out << dpkg.err);
    CHECK_MESSAGE(dpkg.err.find("myriarch-updater: not started: /etc/myriarch/updater.yaml is not "
                                "valid yet:") != std::string::npos,
                  dpkg.err);
    CHECK(trimmed(m.run({"stat", "-c", "%a %U", "/var/lib/myriarch/collector",
                         "/var/lib/myriarch/state"})
                      .out) == "755 root\n700 root");
    CHECK(trimmed(m.run({"systemctl", "is-enabled", "myriarch-updater.service"}).out) == "enabled");
    CHECK(property(m, "myriarch-updater.service", "ActiveState") == "inactive");

    // The operator's part: the supervisor's user, its unit from the examples, its config.
    REQUIRE(m.run({"useradd", "--system", "--home-dir", "/var/lib/otelcol", "--shell",
                   "/usr/sbin/nologin", "otelcol"})
                .exit_code == 0);
    REQUIRE(m.run({"cp", std::string(kDocs) + "opampsupervisor.service", "/etc/systemd/system/"})
                .exit_code == 0);
    std::string sup = read_file(m.root() + kDocs + "opampsupervisor.yaml");
    sup = replaced(sup, "wss://myriarchd.example.com:4320/v1/opamp", server.ws_url());
    sup = replaced(sup, "  executable: /var/lib/myriarch/collector/current/otelcol-contrib\n",
                   "  executable: /var/lib/myriarch/collector/current/otelcol-contrib\n"
                   "  config_files: [/etc/opampsupervisor/collector.yaml]\n");
    sup = replaced(sup, "127.0.0.1:23233", "127.0.0.1:" + std::to_string(supervisor_health));
    REQUIRE(m.run({"mkdir", "-p", "/etc/opampsupervisor"}).exit_code == 0);
    write_file(m.root() + "/etc/opampsupervisor/config.yaml", sup);
    write_file(m.root() + "/etc/opampsupervisor/collector.yaml",
               collector_config(otlp, collector_health));
    REQUIRE(m.run({"systemctl", "daemon-reload"}).exit_code == 0);
    REQUIRE(m.run({"systemctl", "enable", "opampsupervisor.service"}).exit_code == 0);
    // Both units as systemd itself reads them: no warning at all.
    RunResult verify = m.run({"systemd-analyze", "verify", "myriarch-updater.service",
                              "/etc/systemd/system/opampsupervisor.service"});
    CHECK_MESSAGE(verify.exit_code == 0, verify.err);
    CHECK_MESSAGE(trimmed(verify.err).empty(), verify.err);

    // updater.yaml for this machine, then the start: Type=notify, so systemctl start returns
    // once the updater said READY=1 (recovery, seeding, the supervisor's unit started).
    write_file(
        m.root() + "/etc/myriarch/updater.yaml",
        "server:\n  endpoint: " + server.ws_url() +
            "\n  heartbeatInterval: 5s\n"
            "update:\n  requireSignature: false\n  startJitter: 0s\n"
            "collector:\n  healthUrl: http://127.0.0.1:" +
            std::to_string(collector_health) +
            "/\nsupervisor:\n  healthUrl: http://127.0.0.1:" + std::to_string(supervisor_health) +
            "/health\n"
            "host:\n  serviceName: opampsupervisor.service\n  pollInterval: 500ms\n"
            "  seedBinary: /usr/lib/myriarch/otelcol-contrib\n"
            "  healthListen: 127.0.0.1:" +
            std::to_string(updater_health) + "\n");
    RunResult valid = m.run({"myriarch-updater", "validate", "--config",
                             "/etc/myriarch/updater.yaml", "--mode", "host"});
    REQUIRE_MESSAGE(valid.exit_code == 0, valid.out << valid.err);
    RunResult start = m.run({"systemctl", "start", "myriarch-updater.service"}, 90s);
    CHECK_MESSAGE(start.exit_code == 0,
                  start.err << m.run({"journalctl", "-u", "myriarch-updater", "--no-pager"}).out);
    CHECK(property(m, "myriarch-updater.service", "ActiveState") == "active");
    CHECK(property(m, "myriarch-updater.service", "SubState") == "running");
    // STATUS= as `systemctl status` shows it follows the supervisor's unit: "unit … running (pid
    // N)" once the updater has read it running, with systemd's MainPID.
    std::string status_text;
    CHECK_MESSAGE(wait_until(
                      [&] {
                          status_text = property(m, "myriarch-updater.service", "StatusText");
                          std::string pid = property(m, "opampsupervisor.service", "MainPID");
                          return status_text ==
                                 "unit opampsupervisor.service running (pid " + pid + ")";
                      },
                      30s, 100ms),
                  status_text);
    // The supervisor's unit runs the collector from `current`, seeded by the updater.
    std::string exe;
    bool running = wait_until(
        [&] {
            exe = collector_exe(m);
            return !exe.empty();
        },
        60s, 100ms);
    CHECK_MESSAGE(running,
                  m.run({"journalctl", "--no-pager", "-u", "opampsupervisor", "-n", "40"}).out);
    CHECK(exe == "/var/lib/myriarch/collector/versions/" + first + "/otelcol-contrib");
    CHECK(trimmed(m.run({"readlink", "/var/lib/myriarch/collector/current"}).out) ==
          "versions/" + first);
    CHECK(wait_until(
        [&] { return http_get("127.0.0.1", updater_health, "/readyz", 2s).status == 200; }, 60s,
        100ms));
    const std::string supervisor_pid = property(m, "opampsupervisor.service", "MainPID");

    // An upgrade (the same package again): postinst restarts the updater on the new files, the
    // supervisor's unit is not touched.
    const std::string updater_pid = property(m, "myriarch-updater.service", "MainPID");
    RunResult upgrade = m.run({"dpkg", "-i", "/opt/myr/myriarch-updater.deb"}, 120s);
    REQUIRE_MESSAGE(upgrade.exit_code == 0, upgrade.out << upgrade.err);
    CHECK(property(m, "myriarch-updater.service", "ActiveState") == "active");
    CHECK(property(m, "myriarch-updater.service", "MainPID") != updater_pid);
    CHECK(property(m, "opampsupervisor.service", "MainPID") == supervisor_pid);

    // The updater's stop: exit 0 (Result=success), the supervisor left running as it was.
    RunResult stop = m.run({"systemctl", "stop", "myriarch-updater.service"}, 90s);
    CHECK_MESSAGE(stop.exit_code == 0, stop.err);
    CHECK(property(m, "myriarch-updater.service", "ActiveState") == "inactive");
    CHECK(property(m, "myriarch-updater.service", "Result") == "success");
    CHECK(property(m, "opampsupervisor.service", "ActiveState") == "active");
    CHECK(property(m, "opampsupervisor.service", "MainPID") == supervisor_pid);

    // Remove keeps the volume (the supervisor runs the collector from it) and disables the unit;
    // installed again, it is enabled again; purge removes the volume and the conffile.
    RunResult remove = m.run({"dpkg", "-r", "myriarch-updater"}, 120s);
    REQUIRE_MESSAGE(remove.exit_code == 0, remove.out << remove.err);
    CHECK_FALSE(exists(m.root() + "/lib/systemd/system/myriarch-updater.service"));
    CHECK(exists(m.root() + "/var/lib/myriarch/collector/current/otelcol-contrib"));
    CHECK(exists(m.root() + "/etc/myriarch/updater.yaml"));
    CHECK(property(m, "opampsupervisor.service", "MainPID") == supervisor_pid);
    RunResult again = m.run({"dpkg", "-i", "/opt/myr/myriarch-updater.deb"}, 120s);
    REQUIRE_MESSAGE(again.exit_code == 0, again.out << again.err);
    CHECK(trimmed(m.run({"systemctl", "is-enabled", "myriarch-updater.service"}).out) == "enabled");
    // The kept, valid updater.yaml: the reinstall started the updater again.
    CHECK(property(m, "myriarch-updater.service", "ActiveState") == "active");
    RunResult purge = m.run({"dpkg", "-P", "myriarch-updater"}, 120s);
    REQUIRE_MESSAGE(purge.exit_code == 0, purge.out << purge.err);
    CHECK_FALSE(exists(m.root() + "/var/lib/myriarch"));
    CHECK_FALSE(exists(m.root() + "/etc/myriarch/updater.yaml"));
    CHECK(m.run({"systemctl", "is-enabled", "myriarch-updater.service"}).exit_code != 0);
}
