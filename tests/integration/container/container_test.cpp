// The real binary as PID 1 of a new PID namespace and, where said, as a child subreaper,
// supervising the stand-in supervisor (the launcher: tests/support/pid1.hpp).
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <regex>
#include <sstream>

#include "harness.hpp"
#include "pid1.hpp"
#include "updater_config.hpp"

using namespace myr::test;

namespace {

std::string fake_supervisor() {
    return env_path("MYRIARCH_FAKE_OPAMPSUPERVISOR");
}

char state_of(pid_t pid) {
    std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()) return '?';
    return stat[close + 2];
}

struct Tree {
    int total = 0;
    int zombies = 0;
};

// All descendants of `pid` (not `pid` itself).
Tree descendants(pid_t pid) {
    Tree t;
    std::vector<pid_t> pending = children_of(pid);
    while (!pending.empty()) {
        pid_t p = pending.back();
        pending.pop_back();
        ++t.total;
        if (state_of(p) == 'Z') ++t.zombies;
        for (pid_t c : children_of(p)) pending.push_back(c);
    }
    return t;
}

// The settings every test here starts from; each test changes what it is about. The container
// seeds the collector volume before its child starts, so it needs an image binary that answers
// --version: the stand-in collector as release 0.116.0.
UpdaterConfig settings(TempDir& dir) {
    std::string seed = dir / "seed-otelcol";
    REQUIRE(run({"cp", env_path("MYRIARCH_FAKE_OTELCOL"), seed}).exit_code == 0);
    std::string content = read_file(seed) + "\n#MYRIARCH-FAKE version=0.116.0\n";
    write_file(seed, content, 0755);
    UpdaterConfig c;
    c.install_dir = dir / "install";
    c.state_dir = dir / "state";
    c.storage_dir = dir / "supervisor";
    c.seed_binary = seed;
    c.restart_delay = "200ms";
    c.max_restarts = 5;
    c.restart_window = "1m";
    c.stop_timeout = "2s";
    c.health_port = 0;  // probes disabled
    return c;
}

// Starts the updater with `s` written to the test's updater.yaml.
Updater start(TempDir& dir, const UpdaterConfig& s, Launch how = Launch::pid1) {
    return Updater(s.write(dir / "updater.yaml"), how);
}

void zombie_test(bool pid1) {
    TempDir dir;
    UpdaterConfig s = settings(dir);
    // The first run spawns 200 orphans and exits without waiting for them; the restart does not.
    std::string fake = fake_supervisor();
    s.supervisor_command = {
        "/bin/sh", "-c",
        "if [ ! -e " + dir / "once" + " ]; then touch " + dir / "once" + "; exec " + fake +
            " --orphans 200 --orphan-life 4000 --exit-after 300; else exec " + fake + "; fi"};
    s.restart_delay = "300ms";
    Updater u = start(dir, s, pid1 ? Launch::pid1 : Launch::subreaper);
    // The orphans come to the updater (PID 1, or subreaper): seen here as its descendants.
    int most = 0;
    CHECK(wait_until(
        [&] {
            most = std::max(most, descendants(u.pid()).total);
            return most >= 200;
        },
        15s));
    MESSAGE("most descendants seen at once: " << most);
    CHECK(u.wait_for_log("restart scheduled"));
    // After they exit, none is left as a zombie: only the restarted supervisor remains.
    Tree t;
    CHECK(wait_until(
        [&] {
            t = descendants(u.pid());
            return t.total == 1 && t.zombies == 0 && u.count("child started") == 2;
        },
        20s));
    CHECK(t.zombies == 0);
    CHECK(t.total == 1);
    u.signal(SIGTERM);
    auto st = u.wait(20s);
    REQUIRE(st.has_value());
    CHECK(WIFEXITED(*st));
    CHECK(WEXITSTATUS(*st) == 0);
}

// The last "child exited" line of the updater's log: the signal that ended the child (0 when it
// exited with a code) and where the line starts.
struct ChildEnd {
    int signal = -1;  // -1: no such line
    size_t at = std::string::npos;
};
ChildEnd last_child_end(const std::string& log) {
    ChildEnd end;
    std::regex re("msg=\"child exited\" pid=[0-9]+ (signal=([0-9]+)|code=)");
    for (std::sregex_iterator it(log.begin(), log.end(), re), stop; it != stop; ++it) {
        end.signal = (*it)[2].matched ? std::stoi((*it)[2]) : 0;
        end.at = static_cast<size_t>(it->position());
    }
    return end;
}

std::vector<long> logged_delays(const std::string& log) {
    std::vector<long> out;
    std::regex re("restart scheduled.*delay_ms=([0-9]+)");
    for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it) {
        out.push_back(std::stol((*it)[1]));
    }
    return out;
}

}  // namespace

TEST_CASE("container as PID 1: 200 orphaned grandchildren are reaped, none left as a zombie") {
    if (!can_run_pid1()) return;
    zombie_test(true);
}

TEST_CASE("container as subreaper: 200 orphaned grandchildren are reaped, none left as a zombie") {
    zombie_test(false);
}

TEST_CASE("container: HUP, USR1 and USR2 reach the child; TERM stops it and exits 0") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = settings(dir);
    s.supervisor_command = {fake_supervisor(), "--signals-file", dir / "signals"};
    Updater u = start(dir, s);
    REQUIRE(u.wait_for_log("child started"));
    REQUIRE(wait_until(
        [&] { return u.out().find("fake-opampsupervisor: started") != std::string::npos; }, 10s));
    for (int sig : {SIGHUP, SIGUSR1, SIGUSR2}) {
        u.signal(sig);
        // One at a time: the same signal twice in a row could merge.
        std::string name = sig == SIGHUP ? "HUP" : sig == SIGUSR1 ? "USR1" : "USR2";
        CHECK(wait_until([&] { return read_file(dir / "signals").find(name) != std::string::npos; },
                         10s));
    }
    CHECK(u.count("signal forwarded") == 3);
    u.signal(SIGTERM);
    auto st = u.wait(20s);
    REQUIRE(st.has_value());
    CHECK(WIFEXITED(*st));
    CHECK(WEXITSTATUS(*st) == 0);
    CHECK(read_file(dir / "signals").find("TERM") != std::string::npos);
    CHECK(u.log().find("shutdown: complete") != std::string::npos);
    CHECK(u.log().find("restart scheduled") == std::string::npos);
}

TEST_CASE("container: stopSignal reaches an upstream-like supervisor's group; both end in exit 0") {
    // The stand-in in upstream mode dies of TERM (as the real supervisor does) and stops in order
    // on INT (tests/integration/real observes the real one).
    if (!can_run_pid1()) return;
    for (const char* sig : {"TERM", "INT"}) {
        CAPTURE(sig);
        TempDir dir;
        UpdaterConfig s = settings(dir);
        s.supervisor_command = {fake_supervisor(), "--upstream-signals",
                                "--signals-file",  dir / "signals",
                                "--agent",         env_path("MYRIARCH_FAKE_OTELCOL")};
        s.stop_signal = sig;
        Updater u = start(dir, s);
        REQUIRE(wait_until(
            [&] { return u.out().find("fake-opampsupervisor: started") != std::string::npos; },
            10s));
        CHECK(u.stop() == 0);
        CHECK(read_file(dir / "signals") == std::string(sig) + "\n");
        // TERM: the leader died of it; INT: it exited after stopping its agent.
        CHECK_MESSAGE(last_child_end(u.log()).signal == (std::string(sig) == "TERM" ? SIGTERM : 0),
                      u.log());
        CHECK(u.log().find("child did not stop in time") == std::string::npos);
    }
}

TEST_CASE("container: a second TERM during shutdown does not skip the stop sequence") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = settings(dir);
    s.supervisor_command = {fake_supervisor(), "--ignore-term", "--signals-file", dir / "signals"};
    s.stop_timeout = "1500ms";
    Updater u = start(dir, s);
    REQUIRE(u.wait_for_log("child started"));
    REQUIRE(wait_until(
        [&] { return u.out().find("fake-opampsupervisor: started") != std::string::npos; }, 10s));
    u.signal(SIGTERM);
    REQUIRE(u.wait_for_log("stopping child"));
    u.signal(SIGTERM);
    CHECK(u.wait_for_log("shutdown already in progress"));
    auto st = u.wait(20s);
    REQUIRE(st.has_value());
    CHECK(WEXITSTATUS(*st) == 0);
    CHECK(u.log().find("child did not stop in time, killed") != std::string::npos);
    CHECK_MESSAGE(last_child_end(u.log()).signal == SIGKILL, u.log());
}

TEST_CASE("container: a child that ignores TERM is killed by SIGKILL after stopTimeout") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = settings(dir);
    s.supervisor_command = {fake_supervisor(), "--ignore-term", "--signals-file", dir / "signals"};
    s.stop_timeout = "2s";
    const Millis stop_timeout = 2s;
    // On top of stopTimeout: the KILL, the reaping and the rest of the shutdown. The suite `timing`
    // runs alone, so a second is plenty even with both cores busy.
    const Millis margin = 1s;
    Updater u = start(dir, s);
    REQUIRE(u.wait_for_log("child started"));
    // Printed once its handlers are in place: a TERM from here on is recorded and ignored.
    REQUIRE(wait_until(
        [&] { return u.out().find("fake-opampsupervisor: started") != std::string::npos; }, 10s));
    auto t0 = std::chrono::steady_clock::now();
    u.signal(SIGTERM);
    auto st = u.wait(20s);
    auto took = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - t0);
    REQUIRE(st.has_value());
    CHECK(WIFEXITED(*st));
    CHECK(WEXITSTATUS(*st) == 0);
    const std::string log = u.log();
    // The child was sent TERM once, and ignored it...
    CHECK(read_file(dir / "signals") == "TERM\n");
    // ...so its end, as the updater's waitpid saw it, came from SIGKILL, after the kill was logged.
    ChildEnd end = last_child_end(log);
    CHECK_MESSAGE(end.signal == SIGKILL, log);
    size_t killed_at = log.find("child did not stop in time, killed");
    CHECK(killed_at != std::string::npos);
    CHECK(end.at > killed_at);
    MESSAGE("TERM to exit with stopTimeout 2s: " << took.count() << " ms");
    // The kill timer starts when the updater handles the TERM, after t0. libuv's millisecond clock
    // may fire it up to 1 ms early, less than the kill, reaping and exit after it take.
    CHECK(took >= stop_timeout);
    CHECK(took <= stop_timeout + margin);
}

TEST_CASE("container: a crashing child restarts with growing delays, then the crash loop exits 1") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = settings(dir);
    s.supervisor_command = {fake_supervisor(), "--exit-after", "100", "--exit-code", "3"};
    s.restart_delay = "200ms";
    s.max_restarts = 3;
    Updater u = start(dir, s);
    auto st = u.wait(30s);
    REQUIRE(st.has_value());
    CHECK(WIFEXITED(*st));
    CHECK(WEXITSTATUS(*st) == 1);
    CHECK(logged_delays(u.log()) == std::vector<long>{200, 400, 800});
    CHECK(u.count("child exited") == 4);
    CHECK(u.count("code=3") == 4);
    CHECK(u.log().find("crash loop: giving up") != std::string::npos);
}

TEST_CASE(
    "container: exec failure of a missing command is logged with errno and counts as a crash") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = settings(dir);
    s.supervisor_command = {dir / "no-such-supervisor"};
    s.max_restarts = 1;
    Updater u = start(dir, s);
    auto st = u.wait(30s);
    REQUIRE(st.has_value());
    CHECK(WEXITSTATUS(*st) == 1);
    CHECK(u.count("child exec failed") == 2);
    CHECK(u.log().find("errno=2") != std::string::npos);
    CHECK(u.log().find("exit_code=127") != std::string::npos);
    CHECK(u.count(" code=127") == 2);
    CHECK(u.log().find("crash loop") != std::string::npos);
}

TEST_CASE("container: probes follow the child through start, crash and restart") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = settings(dir);
    s.supervisor_command = {"/bin/sh", "-c",
                            "if [ ! -e " + dir / "once" + " ]; then touch " + dir / "once" +
                                "; exec " + fake_supervisor() +
                                " --exit-after 1500 --exit-code 2; else exec " + fake_supervisor() +
                                "; fi"};
    s.restart_delay = "2s";
    s.health_port = reserve_port();
    Updater u = start(dir, s);
    int port = s.health_port;
    REQUIRE(u.wait_for_log("probe server listening"));
    CHECK(wait_until([&] { return http_get("127.0.0.1", port, "/readyz").status == 200; }, 10s));
    CHECK(http_get("127.0.0.1", port, "/healthz").status == 200);
    // The crash: not ready while the restart is pending, and it says why.
    HttpResponse r;
    CHECK(wait_until(
        [&] {
            r = http_get("127.0.0.1", port, "/readyz");
            return r.status == 503;
        },
        10s));
    CHECK(r.body.find("restarting in") != std::string::npos);
    CHECK(http_get("127.0.0.1", port, "/healthz").status == 200);
    CHECK(wait_until([&] { return http_get("127.0.0.1", port, "/readyz").status == 200; }, 10s));
    CHECK(http_get("127.0.0.1", port, "/nope").status == 404);
    u.signal(SIGTERM);
    auto st = u.wait(20s);
    REQUIRE(st.has_value());
    CHECK(WEXITSTATUS(*st) == 0);
}

TEST_CASE("container: probes answer within 100 ms while slowloris clients hold connections") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = settings(dir);
    s.supervisor_command = {fake_supervisor()};
    s.health_port = reserve_port();
    Updater u = start(dir, s);
    int port = s.health_port;
    REQUIRE(wait_until([&] { return http_get("127.0.0.1", port, "/readyz").status == 200; }, 10s));
    // 30 clients that each send half a request line and then nothing.
    std::vector<int> slow;
    for (int i = 0; i < 30; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
            (void)!::write(fd, "GET /hea", 8);
            slow.push_back(fd);
        } else {
            ::close(fd);
        }
    }
    CHECK(slow.size() == 30);
    std::vector<long> ms;
    for (int i = 0; i < 7; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        auto r = http_get("127.0.0.1", port, "/healthz");
        ms.push_back(static_cast<long>(
            std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - t0).count()));
        CHECK(r.status == 200);
    }
    std::sort(ms.begin(), ms.end());
    MESSAGE("probe latency with 30 slow clients, median " << ms[3] << " ms, max " << ms.back());
    CHECK(ms[3] < 100);
    for (int fd : slow) ::close(fd);
    u.signal(SIGTERM);
    auto st = u.wait(20s);
    REQUIRE(st.has_value());
    CHECK(WEXITSTATUS(*st) == 0);
}

TEST_CASE("container: configuration problems exit 1 listing each of them") {
    TempDir dir;
    write_file(
        dir / "bad.yaml",
        "server:\n  endpoint: ws://127.0.0.1:1/v1/opamp\nupdate:\n  requireSignature: false\n"
        "container:\n  supervisorCommand: []\n  maxRestarts: 0\n");
    auto r = run({updater_bin(), "container", "--config", dir / "bad.yaml"}, 20s);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("container.maxRestarts") != std::string::npos);
    CHECK(r.err.find("container.supervisorCommand") != std::string::npos);
}

// Termination messages (docs/container-mode.md): the reason of a fatal exit in the file the
// kubelet mounts, only when it is there and a regular file.

namespace {

// A supervisor that exits 3 after 100 ms every time: the updater gives up after `max_restarts`
// restarts. The termination message path is dir/termination-log, not created.
UpdaterConfig crash_loop(TempDir& dir, int max_restarts) {
    UpdaterConfig s = settings(dir);
    s.supervisor_command = {fake_supervisor(), "--exit-after", "100", "--exit-code", "3"};
    s.max_restarts = max_restarts;
    s.termination_message_path = dir / "termination-log";
    return s;
}

// A supervisor that runs until stopped, and an empty termination message file as the kubelet
// mounts it.
UpdaterConfig with_message_file(TempDir& dir) {
    UpdaterConfig s = settings(dir);
    s.supervisor_command = {fake_supervisor()};
    s.termination_message_path = dir / "termination-log";
    write_file(s.termination_message_path, "", 0666);
    return s;
}

}  // namespace

TEST_CASE("container: a crash loop leaves its reason in the termination message file") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = crash_loop(dir, 2);
    // What an earlier container left: replaced, not appended to.
    write_file(s.termination_message_path, std::string(6000, 'x'), 0666);
    Updater u = start(dir, s);
    CHECK(u.wait_exit(30s) == 1);
    CHECK_MESSAGE(read_file(s.termination_message_path) ==
                      "crash loop: the supervisor (" + fake_supervisor() +
                          ") had 3 unexpected ends within 1m (maxRestarts 2); gave up\n",
                  u.log());
    CHECK(u.log_has("termination message written"));
}

TEST_CASE("container: an unusable volume leaves its reason in the termination message file") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = with_message_file(dir);
    // A file where the volume's directory should be: recovery cannot open it.
    write_file(s.install_dir, "not a directory");
    Updater u = start(dir, s);
    CHECK(u.wait_exit(30s) == 1);
    std::string m = read_file(s.termination_message_path);
    MESSAGE("termination message: " << m);
    CHECK_MESSAGE(m.rfind("start-up failed while recovering: ", 0) == 0, u.log());
    CHECK(m.find(s.install_dir) != std::string::npos);
    CHECK(!u.log_has("child started"));
    CHECK(read_file(s.install_dir) == "not a directory");
}

TEST_CASE("container: without the termination message file nothing is created") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = crash_loop(dir, 1);
    Updater u = start(dir, s);
    CHECK(u.wait_exit(30s) == 1);
    CHECK(!exists(s.termination_message_path));
    CHECK(!u.log_has("termination message"));
}

TEST_CASE("container: a symlink at the termination message path is refused, its target kept") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = crash_loop(dir, 1);
    write_file(dir / "precious", "kept", 0666);
    REQUIRE(::symlink((dir / "precious").c_str(), s.termination_message_path.c_str()) == 0);
    Updater u = start(dir, s);
    CHECK(u.wait_exit(30s) == 1);
    CHECK(read_file(dir / "precious") == "kept");
    CHECK_MESSAGE(u.log_has("termination message not written"), u.log());
    CHECK(u.log_has("refusing a symlink"));
}

TEST_CASE("container: a stop on TERM leaves the termination message file alone") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = with_message_file(dir);
    Updater u = start(dir, s);
    REQUIRE(u.wait_for_log("child started", 20s));
    CHECK(u.stop() == 0);
    CHECK(read_file(s.termination_message_path).empty());
}

TEST_CASE("container: a refused configuration leaves its problems in the default message file") {
    if (!can_run_pid1()) return;  // root and unshare: the mount namespace below
    TempDir dir;
    write_file(
        dir / "bad.yaml",
        "server:\n  endpoint: ws://127.0.0.1:1/v1/opamp\nupdate:\n  requireSignature: false\n"
        "container:\n  supervisorCommand: []\n  maxRestarts: 0\n"
        "  terminationMessagePath: " +
            dir / "not-this-one" + "\n");
    // A tmpfs over /dev in a mount namespace of its own: the default path exists there, as the
    // kubelet's mount does in a pod, and the machine's /dev is not touched.
    const std::string script =
        "mount -t tmpfs tmpfs /dev && : >/dev/termination-log && \"$0\" container --config "
        "\"$1\"; echo \"exit=$?\"; cat /dev/termination-log";
    auto r = run({"unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                  updater_bin(), dir / "bad.yaml"},
                 20s);
    MESSAGE(r.out);
    CHECK(r.out.find("exit=1\nconfiguration " + dir / "bad.yaml" + " refused:\n") !=
          std::string::npos);
    CHECK(r.out.find("container.maxRestarts") != std::string::npos);
    CHECK(r.out.find("container.supervisorCommand") != std::string::npos);
    CHECK(!exists(dir / "not-this-one"));
}

// Issue 43, item 7: a journal whose trial counts INT64_MAX boots (a hand on the volume, not the
// updater) is refused as corrupt and moved aside; the start goes on with the version `current`
// names, and the supervisor runs.
TEST_CASE("container: a journal tampered to INT64_MAX boots is moved aside and the start goes on") {
    if (!can_run_pid1()) return;
    TempDir dir;
    UpdaterConfig s = settings(dir);
    s.supervisor_command = {fake_supervisor()};
    {
        Updater seeded = start(dir, s);
        REQUIRE(seeded.wait_for_log("child started", 20s));
        REQUIRE(seeded.stop() == 0);
    }
    const std::string tampered =
        "{\"id\":\"6f1c1b9e-3c2a-4a51-9d7e-0a4b8f1e2d3c\",\"op\":\"update\",\"phase\":\"trial\","
        "\"from\":\"\",\"to\":\"0.116.0\",\"startedAt\":\"2027-01-15T07:30:00.000Z\","
        "\"attempt\":1,\"trialUntil\":1999999999,\"boots\":9223372036854775807}\n";
    write_file(dir / "state/journal.json", tampered);
    Updater u = start(dir, s);
    REQUIRE_MESSAGE(u.wait_for_log("child started", 20s), u.log());
    CHECK_MESSAGE(u.log().find("recovery: journal cannot be parsed") != std::string::npos, u.log());
    CHECK(u.log().find("boots: out of range") != std::string::npos);
    CHECK_FALSE(exists(dir / "state/journal.json"));
    CHECK(run({"readlink", dir / "install/current"}).out == "versions/0.116.0\n");
    CHECK(u.stop() == 0);
}
