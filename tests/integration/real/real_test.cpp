// The product against the real upstream programs built from their Go modules
// (tests/real/build-tools.sh): the OpAMP Supervisor, a collector, an opamp-go server. Stand-ins
// only agree with our own reading of upstream; these cases check that reading.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "pid1.hpp"
#include "real_support.hpp"

using namespace myr::test;
using namespace myr::test::real;
using opamp::get;
using opamp::str;

namespace {

// Whether `pid` is gone or a zombie (an orphan reparented away from us is not reaped by us).
bool gone(pid_t pid) {
    std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    if (stat.empty()) return true;
    size_t close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

long since_ms(std::chrono::steady_clock::time_point t0) {
    return static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count());
}

// A UUID's text as the server's hex of the 16 bytes.
std::string hex_uid(std::string uuid) {
    uuid.erase(std::remove(uuid.begin(), uuid.end(), '-'), uuid.end());
    return uuid;
}

// A volume as the updater leaves it after seeding, for cases that run the supervisor without it.
void plant_volume(const Peers& p) {
    const std::string dir = p.install + "/versions/" + p.versions[0];
    REQUIRE(run({"mkdir", "-p", dir}).exit_code == 0);
    REQUIRE(run({"cp", p.seed, dir + "/otelcol-contrib"}).exit_code == 0);
    REQUIRE(::symlink(("versions/" + p.versions[0]).c_str(), (p.install + "/current").c_str()) ==
            0);
}

// The supervisor run straight from the test (in its own process group) on a planted volume, once
// its collector serves.
Process supervise(const Peers& p) {
    plant_volume(p);
    Process sup = Process::spawn({p.supervisor_bin(), "--config=" + p.supervisor_config()});
    REQUIRE_MESSAGE(p.wait_collector_healthy(), sup.err());
    return sup;
}

// The peers, the opamp-go server and the supervisor run straight from the test, its collector
// serving: the set-up of the cases that observe the supervisor without the updater.
struct Supervised {
    explicit Supervised(const std::string& tools)
        : p(tools), server(p.dir, tools, {"--token", p.token}), sup(start(p, server)) {}
    static Process start(Peers& p, const GoServer& server) {
        p.write_peer_configs(server.ws_url());
        return supervise(p);
    }
    Peers p;
    GoServer server;
    Process sup;
};

}  // namespace

TEST_CASE("real: the updater as PID 1 runs the real supervisor, which runs the real collector") {
    if (!can_run_pid1()) return;
    const std::string t = tools();
    if (t.empty()) return;
    Peers p(t);
    // The default stop signal, and the one the real supervisor stops in order on; and both
    // agents over wss:// with the test CA.
    std::string stop_signal;
    bool tls = false;
    SUBCASE("container.stopSignal TERM (the default)") {
        stop_signal = "";
    }
    SUBCASE("container.stopSignal INT") {
        stop_signal = "INT";
    }
    SUBCASE("container.stopSignal INT, both agents over wss://") {
        stop_signal = "INT";
        tls = true;
    }
    CAPTURE(stop_signal);
    CAPTURE(tls);
    std::vector<std::string> server_args{"--token", p.token};
    std::string ca;
    if (tls) {
        auto m = opamp::TlsMaterial::make(p.dir);
        server_args.insert(server_args.end(), {"--tls-cert", m.cert, "--tls-key", m.key});
        ca = m.ca;
    }
    GoServer server(p.dir, t, server_args);
    const std::string endpoint = tls ? server.wss_url() : server.ws_url();
    p.write_peer_configs(endpoint, ca);
    p.write_updater(endpoint, stop_signal, ca);

    const auto started = std::chrono::steady_clock::now();
    Updater u(p.updater_config());
    auto logs = [&] {
        return "updater log:\n" + u.log() + "\nstdout (supervisor):\n" + u.out() +
               "\nagent.log:\n" + read_file(p.storage + "/agent.log") + "\nserver:\n" +
               server.err();
    };
    // The supervisor starts the collector from the volume the updater seeded.
    bool collector_up = p.wait_collector_healthy();
    REQUIRE_MESSAGE(collector_up, "the collector's health_check never answered 200\n" << logs());
    MESSAGE("updater start to a healthy real collector: " << since_ms(started) << " ms");
    CHECK(current_of(p.install) == "versions/" + p.versions[0]);
    CHECK(
        wait_until([&] { return p.get(p.supervisor_health_port, "/health") == 200; }, 30s, 100ms));

    // Both agents connect with the one token; none is refused.
    REQUIRE(wait_until([&] { return server.events("open").size() >= 2; }, 30s, 50ms));
    for (auto& o : server.events("open")) {
        CHECK(str(o.get(), "authorization") == "Bearer " + p.token);
    }
    CHECK(server.events("rejected").empty());

    // The updater's report names the collector's instance UID as the real supervisor stored it.
    std::string want_uid;
    REQUIRE(wait_until([&] { return !(want_uid = p.supervisor_instance_id()).empty(); }, 30s));
    std::string seen_uid;
    bool uid_seen = wait_until(
        [&] {
            for (auto& m : server.from("myriarch-updater")) {
                json_object* non = get(m.get(), "non_identifying");
                if (non) seen_uid = str(non, "dev.myriarch.collector.instance_uid");
                if (!seen_uid.empty() && seen_uid == want_uid) return true;
            }
            return false;
        },
        30s, 100ms);
    CHECK_MESSAGE(uid_seen, "persistent_state.yaml instance_id "
                                << want_uid << ", updater reported '" << seen_uid << "'\n"
                                << logs());
    // The supervisor speaks for the running collector: the version string it was linked with.
    bool version_seen =
        wait_until([&] { return supervisor_reported(server, p.versions[0]); }, 30s, 100ms);
    CHECK_MESSAGE(version_seen, logs());

    auto t0 = std::chrono::steady_clock::now();
    int code = u.stop(40s);
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0);
    CHECK_MESSAGE(code == 0, "exit " << code << "\n" << logs());
    MESSAGE("updater stop (" << (stop_signal.empty() ? "TERM" : stop_signal)
                             << ") with the real peers took " << took.count() << " ms");
    // Only INT lets the supervisor say goodbye to the server (AgentToServer.agent_disconnect).
    bool supervisor_said_bye = false;
    for (auto& m : server.events("message")) {
        if (get(get(m.get(), "msg"), "agentDisconnect") != nullptr &&
            str(m.get(), "instance_uid") == hex_uid(want_uid)) {
            supervisor_said_bye = true;
        }
    }
    CHECK(supervisor_said_bye == (stop_signal == "INT"));
}

namespace {

// What stopping the real supervisor's process group with one signal did.
struct StopSeen {
    bool exited = false;  // the supervisor ran to exit() (rather than dying of the signal)
    int exit_code = -1;
    int killed_by = 0;             // the signal that ended it, when it did not exit
    long supervisor_ms = -1;       // signal to the supervisor's end
    long collector_ms = -1;        // signal to the collector's end
    bool collector_clean = false;  // the collector logged its own orderly shutdown
    bool disconnect = false;       // the server got agent_disconnect from the supervisor
    bool same_uid_after = false;   // a second start kept persistent_state.yaml's instance_id
    std::string log;
};

// Runs the real supervisor straight from the test in its own process group (as the updater's
// child service does), waits until its collector serves and the server has heard of it, then
// sends `sig` to the group, as the updater's stop path does.
StopSeen observe_stop(const std::string& t, int sig) {
    StopSeen seen;
    Peers p(t);
    GoServer server(p.dir, t, {"--token", p.token});
    p.write_peer_configs(server.ws_url());
    plant_volume(p);
    const std::string collector_exe = p.first_binary();
    std::optional<Process> sup;
    sup.emplace(Process::spawn({p.supervisor_bin(), "--config=" + p.supervisor_config()}));
    auto logs = [&] {
        return "supervisor:\n" + (sup ? sup->err() : std::string()) + "\nagent.log:\n" +
               read_file(p.storage + "/agent.log");
    };
    REQUIRE_MESSAGE(p.wait_collector_healthy(), logs());
    REQUIRE_MESSAGE(
        wait_until([&] { return supervisor_reported(server, p.versions[0]); }, 30s, 100ms), logs());
    const std::string uid = p.supervisor_instance_id();
    REQUIRE(!uid.empty());
    pid_t collector = find_descendant(sup->pid(), collector_exe);
    REQUIRE_MESSAGE(collector > 0, "no collector process below the supervisor\n" << logs());
    const size_t agent_log_before = read_file(p.storage + "/agent.log").size();

    auto t0 = std::chrono::steady_clock::now();
    sup->signal_group(sig);
    auto st = sup->wait(40s);
    REQUIRE_MESSAGE(st.has_value(), "the supervisor outlived 40 s after signal " << sig);
    seen.supervisor_ms = since_ms(t0);
    seen.exited = WIFEXITED(*st);
    seen.exit_code = seen.exited ? WEXITSTATUS(*st) : -1;
    seen.killed_by = WIFSIGNALED(*st) ? WTERMSIG(*st) : 0;
    REQUIRE(wait_until([&] { return gone(collector); }, 40s, 10ms));
    seen.collector_ms = since_ms(t0);
    const std::string after = read_file(p.storage + "/agent.log").substr(agent_log_before);
    seen.collector_clean = after.find("Shutdown complete") != std::string::npos;
    for (auto& m : server.events("message")) {
        json_object* msg = get(m.get(), "msg");
        if (get(msg, "agentDisconnect") != nullptr) seen.disconnect = true;
    }
    seen.log = logs();

    // The storage must still serve a second start with the same identity.
    sup.emplace(Process::spawn({p.supervisor_bin(), "--config=" + p.supervisor_config()}));
    bool again = p.wait_collector_healthy();
    CHECK_MESSAGE(again, "no second start after signal " << sig << "\n" << logs());
    seen.same_uid_after = again && p.supervisor_instance_id() == uid;
    sup->signal_group(SIGINT);
    CHECK(sup->wait(40s).has_value());
    return seen;
}

std::string describe(const char* sig, const StopSeen& s) {
    std::ostringstream o;
    o << sig << " to the group: supervisor "
      << (s.exited ? "exited " + std::to_string(s.exit_code)
                   : "killed by signal " + std::to_string(s.killed_by))
      << " after " << s.supervisor_ms << " ms, collector gone after " << s.collector_ms
      << " ms, collector logged its shutdown: " << s.collector_clean
      << ", agent_disconnect sent: " << s.disconnect
      << ", same instance_id at the next start: " << s.same_uid_after;
    return o.str();
}

}  // namespace

TEST_CASE("real supervisor: INT stops it in order, TERM kills it at once") {
    const std::string t = tools();
    if (t.empty()) return;
    StopSeen term = observe_stop(t, SIGTERM);
    StopSeen intr = observe_stop(t, SIGINT);
    MESSAGE(describe("TERM", term));
    MESSAGE(describe("INT", intr));
    // Upstream's main waits for os.Interrupt only: SIGTERM takes Go's default action.
    CHECK_MESSAGE(term.killed_by == SIGTERM, term.log);
    CHECK_MESSAGE(intr.exited, intr.log);
    CHECK(intr.exit_code == 0);
    CHECK_MESSAGE(intr.collector_clean, intr.log);
    CHECK(intr.disconnect);
    CHECK(intr.same_uid_after);
    CHECK(term.same_uid_after);
}

TEST_CASE("real collector: the preflight's validate costs, next to the running collector") {
    const std::string t = tools();
    if (t.empty()) return;
    Supervised s(t);
    Peers& p = s.p;
    Process& sup = s.sup;
    REQUIRE(wait_until([&] { return exists(p.effective_config()); }, 30s));
    const std::string collector_exe = p.first_binary();
    pid_t collector = find_descendant(sup.pid(), collector_exe);
    REQUIRE(collector > 0);
    // Settle: the figure wanted is the steady collector, not its first second.
    std::this_thread::sleep_for(3s);
    const long running_rss = proc_kib(collector, "VmRSS:");
    const long running_hwm = proc_kib(collector, "VmHWM:");
    const long supervisor_rss = proc_kib(sup.pid(), "VmRSS:");
    const long supervisor_hwm = proc_kib(sup.pid(), "VmHWM:");

    // The preflight runs the NEW binary against the effective config the supervisor wrote;
    // three runs, the worst counts (the budget is for the peak).
    long worst_kib = 0;
    double worst_s = 0;
    for (int i = 0; i < 3; ++i) {
        RunResult r = run({"/usr/bin/time", "-f", "MYR-TIME %M %e", t + "/otelcol-2", "validate",
                           "--config=" + p.effective_config()},
                          60s);
        REQUIRE_MESSAGE(r.exit_code == 0, "validate failed: " << r.out << r.err);
        size_t at = r.err.rfind("MYR-TIME ");
        REQUIRE(at != std::string::npos);
        long kib = 0;
        double secs = 0;
        REQUIRE(std::sscanf(r.err.c_str() + at, "MYR-TIME %ld %lf", &kib, &secs) == 2);
        worst_kib = std::max(worst_kib, kib);
        worst_s = std::max(worst_s, secs);
    }
    MESSAGE("validate peak RSS " << worst_kib << " KiB, " << worst_s
                                 << " s (worst of 3); running collector VmRSS " << running_rss
                                 << " KiB, VmHWM " << running_hwm << " KiB; supervisor VmRSS "
                                 << supervisor_rss << " KiB, VmHWM " << supervisor_hwm << " KiB");
    CHECK(worst_kib > 0);
    CHECK(running_rss > 0);
    // A broken config must fail validate, or the preflight would pass anything.
    write_file(p.dir / "broken.yaml", read_file(p.effective_config()) + "\nreceivers: [oops\n");
    RunResult bad = run({t + "/otelcol-2", "validate", "--config=" + p.dir / "broken.yaml"}, 60s);
    CHECK(bad.exit_code != 0);
    sup.signal_group(SIGINT);
    CHECK(sup.wait(40s).has_value());
}

TEST_CASE("real server: the agent talks OpAMP with opamp-go's server and decodes its offer") {
    const std::string t = tools();
    if (t.empty()) return;
    TempDir dir;
    write_file(dir / "token", "interop-token\n", 0600);
    std::vector<std::string> server_args{"--token", "interop-token"};
    std::vector<std::string> agent_args{"--token-file", dir / "token"};
    bool tls = false;
    SUBCASE("ws://") {
        agent_args.push_back("--allow-insecure");
    }
    SUBCASE("wss:// with the test CA") {
        tls = true;
    }
    if (tls) {
        auto m = opamp::TlsMaterial::make(dir);
        server_args.insert(server_args.end(), {"--tls-cert", m.cert, "--tls-key", m.key});
        agent_args.insert(agent_args.end(), {"--ca-file", m.ca});
    }
    GoServer server(dir, t, server_args);
    opamp::Driver agent(dir, tls ? server.wss_url() : server.ws_url(), agent_args);
    REQUIRE_MESSAGE(wait_until([&] { return !server.from("myriarch-updater").empty(); }, 20s),
                    agent.err() << server.err());
    auto first = server.from("myriarch-updater").front();
    json_object* id = get(first.get(), "identifying");
    CHECK(str(id, "service.name") == "myriarch-updater");
    CHECK(str(get(first.get(), "non_identifying"), "host.name") == "pod-7");
    CHECK(str(first.get(), "instance_uid").size() == 32);  // 16 bytes, hex
    CHECK(str(server.events("open").front().get(), "authorization") == "Bearer interop-token");

    // An offer from the server: the agent must decode opamp-go's encoding of it.
    const std::string hash(64, 'a');
    write_file(dir / "opamp-go.commands",
               "{\"to\":\"myriarch-updater\",\"name\":\"otelcol-contrib\",\"version\":\"0.149.1\","
               "\"url\":\"http://127.0.0.1:1/artifacts/otelcol.tar.gz\",\"hash\":\"" +
                   hash + "\"}\n");
    bool decoded = wait_until(
        [&] {
            for (auto& m : agent.server_messages()) {
                json_object* pkgs = get(get(m.get(), "packages_available"), "packages");
                if (pkgs == nullptr || json_object_array_length(pkgs) != 1) continue;
                json_object* e = json_object_array_get_idx(pkgs, 0);
                if (str(e, "name") == "otelcol-contrib" && str(e, "version") == "0.149.1" &&
                    str(e, "download_url") == "http://127.0.0.1:1/artifacts/otelcol.tar.gz" &&
                    str(e, "content_hash") == hash) {
                    return true;
                }
            }
            return false;
        },
        20s);
    CHECK_MESSAGE(decoded, "agent events: " << read_file(dir / "agent-events.jsonl") << "\n"
                                            << agent.err());
    CHECK(agent.stop() == 0);
}

TEST_CASE("real supervisor: USR1 and USR2 change nothing, HUP kills it and orphans its collector") {
    // The updater forwards HUP, USR1 and USR2 to the supervisor's pid (docs/pid1.md). Upstream's
    // main subscribes to os.Interrupt only, so Go's defaults apply to the rest.
    const std::string t = tools();
    if (t.empty()) return;
    Supervised s(t);
    Peers& p = s.p;
    GoServer& server = s.server;
    Process& sup = s.sup;
    // After HUP the group outlives its reaped leader, which Process no longer cleans up: a failed
    // check below must not leave the orphaned collector holding the test's ports.
    struct GroupKill {
        pid_t pgid;
        ~GroupKill() { ::kill(-pgid, SIGKILL); }
    } group_kill{sup.pid()};
    REQUIRE(wait_until([&] { return supervisor_reported(server, p.versions[0]); }, 30s, 100ms));
    const std::string collector_exe = p.first_binary();
    pid_t collector = find_descendant(sup.pid(), collector_exe);
    REQUIRE(collector > 0);

    sup.signal(SIGUSR1);
    sup.signal(SIGUSR2);
    // Nothing may happen: the wait is the scenario.
    std::this_thread::sleep_for(1500ms);
    CHECK(sup.running());
    CHECK(find_descendant(sup.pid(), collector_exe) == collector);
    CHECK(p.get(p.collector_health_port, "/") == 200);

    auto t0 = std::chrono::steady_clock::now();
    sup.signal(SIGHUP);
    auto st = sup.wait(10s);
    REQUIRE_MESSAGE(st.has_value(), "the supervisor outlived HUP by 10 s");
    const long hup_ms = since_ms(t0);
    CHECK(WIFSIGNALED(*st));
    CHECK(WTERMSIG(*st) == SIGHUP);
    // The opamp extension's parent-pid poll (every 5 s) does not stop the orphan: it keeps
    // running, so only the updater's KILL of the crashed group (child_service.cpp,
    // unexpected_end) frees its ports for the restart. The wait is the scenario.
    std::this_thread::sleep_for(12s);
    const bool orphan_alive = !gone(collector);
    const int by = WIFSIGNALED(*st) ? WTERMSIG(*st) : 0;
    MESSAGE("HUP: supervisor killed by signal "
            << by << " after " << hup_ms
            << " ms; orphaned collector running 12 s later: " << orphan_alive);
    CHECK(orphan_alive);
    // What the updater does after an unexpected end: KILL the group, which outlives its leader
    // (the collector is still in it).
    CHECK(::kill(-sup.pid(), SIGKILL) == 0);
    CHECK(wait_until([&] { return gone(collector); }, 10s));
}

TEST_CASE(
    "real server: the agent refuses opamp-go's bad certificates, and opamp-go a wrong token") {
    // The TLS and token failures of the interop case above, against opamp-go's own listener.
    const std::string t = tools();
    if (t.empty()) return;
    TempDir dir;
    auto m = opamp::TlsMaterial::make(dir);
    write_file(dir / "token", "interop-token\n", 0600);
    std::vector<std::string> agent_args{"--token-file", dir / "token", "--ca-file", m.ca};
    std::vector<std::string> server_args{"--token", "interop-token"};
    std::string want;  // what the agent must say it refused
    bool refused_by_server = false;
    SUBCASE("a certificate for another host") {
        server_args.insert(server_args.end(),
                           {"--tls-cert", m.wrong_cert, "--tls-key", m.wrong_key});
        want = "does not match host";
    }
    SUBCASE("a certificate from an untrusted CA") {
        server_args.insert(server_args.end(),
                           {"--tls-cert", m.rogue_cert, "--tls-key", m.rogue_key});
        want = "certificate not trusted";
    }
    SUBCASE("a wrong token over wss://") {
        server_args = {"--token", "another-token", "--tls-cert", m.cert, "--tls-key", m.key};
        want = "401";
        refused_by_server = true;
    }
    CAPTURE(want);
    GoServer server(dir, t, server_args);
    opamp::Driver agent(dir, server.wss_url(), agent_args);
    CHECK_MESSAGE(wait_until([&] { return agent.err().find(want) != std::string::npos; }, 20s),
                  agent.err());
    // No report may reach the server; a TLS refusal happens before any HTTP request.
    CHECK(server.events("message").empty());
    if (refused_by_server) {
        CHECK_FALSE(server.events("rejected").empty());
    } else {
        CHECK(server.events("open").empty());
    }
    agent.stop();
}
