// The agent against the scripted OpAMP server, through real sockets (ws:// and wss://).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <optional>
#include <thread>

#include "opamp_support.hpp"

using namespace myr::test;
using namespace myr::test::opamp;

namespace {

std::string uid_text_of(const std::string& hex) {
    return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
           hex.substr(16, 4) + "-" + hex.substr(20);
}

std::vector<int64_t> open_times(const Server& s) {
    std::vector<int64_t> t;
    for (auto& j : s.events("open")) t.push_back(num(j.get(), "t_ms"));
    return t;
}

}  // namespace

TEST_CASE("opamp: the first report carries every attribute, capability, health and statuses") {
    TempDir dir;
    Server server(dir, {});
    Driver agent(dir, server.ws_url(), {});
    REQUIRE_MESSAGE(server.wait_messages(1), agent.err());
    auto m = server.messages()[0];
    json_object* o = m.get();
    CHECK(num(o, "sequence_num") == 1);
    CHECK(num(o, "capabilities") == 0x2819);
    const std::string uid_hex = str(o, "instance_uid");
    REQUIRE(uid_hex.size() == 32);
    CHECK(uid_hex[12] == '7');  // UUIDv7
    json_object* id = get(o, "identifying");
    REQUIRE(id);
    CHECK(json_object_object_length(id) == 3);
    CHECK(str(id, "service.name") == "myriarch-updater");
    CHECK(str(id, "service.instance.id") == uid_text_of(uid_hex));
    CHECK(str(id, "service.version") == "0.1.0");
    json_object* non = get(o, "non_identifying");
    REQUIRE(non);
    CHECK(str(non, "host.name") == "pod-7");
    CHECK(str(non, "os.type") == "linux");
    CHECK_FALSE(str(non, "host.arch").empty());
    CHECK(str(non, "dev.myriarch.updater.install_method") == "container");
    CHECK(str(non, "dev.myriarch.updater.image_collector_version") == "0.115.0");
    CHECK(str(non, "dev.myriarch.collector.version") == "0.116.0");
    CHECK_FALSE(get(non, "dev.myriarch.collector.instance_uid"));  // no storage dir given
    json_object* h = get(o, "health");
    REQUIRE(h);
    CHECK(flag(h, "healthy"));
    CHECK(str(h, "status") == "running");
    CHECK(get(o, "package_statuses"));
    // The uid is the one stored in the state directory.
    CHECK(read_file(agent.state_dir() + "/instance_uid") == uid_text_of(uid_hex) + "\n");
}

TEST_CASE("opamp: replies without news are not answered, sequence numbers grow by one") {
    TempDir dir;
    Server server(dir, {});  // replies to every message
    Driver agent(dir, server.ws_url(), {"--heartbeat-ms", "300"});
    REQUIRE(server.wait_messages(6));
    auto msgs = server.messages();
    for (size_t i = 0; i < msgs.size(); ++i) {
        CHECK(num(msgs[i].get(), "sequence_num") == static_cast<int64_t>(i + 1));
    }
    // Heartbeats only: nothing but uid/seq/capabilities after the first report.
    for (size_t i = 1; i < msgs.size(); ++i) {
        CHECK_FALSE(get(msgs[i].get(), "identifying"));
        CHECK_FALSE(get(msgs[i].get(), "health"));
    }
    // Spacing comes from the heartbeat, not from the replies: no message loop.
    auto first = num(msgs[1].get(), "t_ms"), last = num(msgs.back().get(), "t_ms");
    CHECK((last - first) >= 250 * static_cast<int64_t>(msgs.size() - 2));
    CHECK(agent.stop() == 0);
    auto after = server.messages();
    REQUIRE_FALSE(after.empty());
    CHECK(flag(after.back().get(), "agent_disconnect"));
    CHECK(server.wait_events("peer_close", 1, 5s));
    CHECK(num(server.events("peer_close")[0].get(), "code") == 1000);
}

TEST_CASE("opamp: ReportFullState gets everything again") {
    TempDir dir;
    Server server(dir, {"--on", "1:full"});
    Driver agent(dir, server.ws_url(), {});
    REQUIRE(server.wait_messages(2));
    auto m = server.messages()[1];
    CHECK(num(m.get(), "sequence_num") == 2);
    CHECK(get(m.get(), "identifying"));
    CHECK(get(m.get(), "non_identifying"));
    CHECK(get(m.get(), "health"));
    CHECK(get(m.get(), "package_statuses"));
}

TEST_CASE("opamp: new_instance_uid is adopted at once and kept across a restart") {
    TempDir dir;
    const std::string fresh = "0190a6f4-6c1e-7a3b-9c2d-0123456789ab";
    Server server(dir, {"--on", "1:new_uid=" + fresh});
    std::string state;
    {
        Driver agent(dir, server.ws_url(), {});
        REQUIRE(server.wait_messages(2));
        auto m = server.messages()[1];
        CHECK(str(m.get(), "instance_uid") == "0190a6f46c1e7a3b9c2d0123456789ab");
        CHECK(str(get(m.get(), "identifying"), "service.instance.id") == fresh);
        CHECK(read_file(agent.state_dir() + "/instance_uid") == fresh + "\n");
        CHECK(agent.stop() == 0);
    }
    Driver again(dir, server.ws_url(), {});
    REQUIRE(server.wait_events("open", 2));
    REQUIRE(wait_until(
        [&] {
            auto msgs = server.messages();
            return msgs.size() >= 4 && num(msgs.back().get(), "conn") == 2;
        },
        20s));
    for (auto& m : server.messages()) {
        if (num(m.get(), "conn") == 2)
            CHECK(str(m.get(), "instance_uid") == "0190a6f46c1e7a3b9c2d0123456789ab");
    }
}

TEST_CASE("opamp: the server's heartbeat interval takes over") {
    TempDir dir;
    Server server(dir, {"--on", "1:heartbeat=1"});
    Driver agent(dir, server.ws_url(), {"--heartbeat-ms", "60000"});
    REQUIRE(server.wait_messages(4, 30s));
    auto msgs = server.messages();
    for (size_t i = 2; i < 4; ++i) {
        const int64_t gap = num(msgs[i].get(), "t_ms") - num(msgs[i - 1].get(), "t_ms");
        CHECK(gap >= 900);
        CHECK(gap <= 3000);
    }
}

TEST_CASE("opamp: an offer is answered InstallFailed 'installer not available'") {
    TempDir dir;
    Server server(dir, {"--on", "1:offer=otelcol-contrib,0.117.0,hash1"});
    Driver agent(dir, server.ws_url(), {});
    REQUIRE(server.wait_messages(2));
    auto m = server.messages()[1];
    json_object* ps = get(m.get(), "package_statuses");
    REQUIRE(ps);
    json_object* pkgs = get(ps, "packages");
    REQUIRE(pkgs);
    REQUIRE(json_object_array_length(pkgs) == 1);
    json_object* p = json_object_array_get_idx(pkgs, 0);
    CHECK(str(p, "name") == "otelcol-contrib");
    CHECK(str(p, "status") == "InstallFailed");
    CHECK(str(p, "error_message") == "installer not available");
    CHECK(str(p, "server_offered_version") == "0.117.0");
    CHECK(str(p, "server_offered_hash") == "6861736831");  // "hash1"
    CHECK(str(ps, "all_packages_hash") == "6861736831");
    // The agent decoded the whole offer, signature and headers included.
    REQUIRE(wait_until([&] { return agent.server_messages().size() >= 1; }, 5s));
    auto ev = agent.server_messages()[0];
    json_object* pa =
        json_object_array_get_idx(get(get(ev.get(), "packages_available"), "packages"), 0);
    REQUIRE(pa);
    CHECK(str(pa, "signature") == "{\"mediaType\":\"bundle\"}");
    CHECK(str(get(pa, "headers"), "X-Artifact-Token") == "t");
    CHECK(str(pa, "content_hash") == std::string(64, '1'));
}

TEST_CASE("opamp: a server that closes after each report sees the reconnects slow down") {
    TempDir dir;
    Server server(dir, {"--each", "close=1000"});
    Driver agent(dir, server.ws_url(), {});
    REQUIRE(server.wait_events("open", 7, 40s));
    auto t = open_times(server);
    // Gap 1 is the one immediate reconnect; gap k (k >= 2) waits 0.5 s × 1.5^(k-2) ± 50 %.
    CHECK(t[1] - t[0] < 400);
    double base = 500;
    for (size_t k = 2; k < 7; ++k) {
        const int64_t gap = t[k] - t[k - 1];
        CHECK_MESSAGE(gap >= static_cast<int64_t>(base * 0.5), "gap " << k << " = " << gap);
        CHECK_MESSAGE(gap <= static_cast<int64_t>(base * 1.5) + 500, "gap " << k << " = " << gap);
        base *= 1.5;
    }
    CHECK(t[6] - t[5] > t[2] - t[1]);
}

TEST_CASE("opamp: 503 with Retry-After is honoured on the upgrade") {
    TempDir dir;
    Server server(dir, {"--upgrade", "1:503:2"});
    Driver agent(dir, server.ws_url(), {});
    REQUIRE(server.wait_events("open", 1, 20s));
    auto rej = server.events("rejected");
    REQUIRE(rej.size() == 1);
    const int64_t gap = num(server.events("open")[0].get(), "t_ms") - num(rej[0].get(), "t_ms");
    CHECK(gap >= 1900);
    CHECK(server.wait_messages(1));
}

TEST_CASE("opamp: 503 without Retry-After waits at least 30 s") {
    TempDir dir;
    Server server(dir, {"--upgrade", "1:503"});
    Driver agent(dir, server.ws_url(), {});
    REQUIRE(server.wait_events("rejected", 1));
    // The first backoff step is at most 0.75 s, so the delay is exactly the 30 s floor. The agent
    // logs the delay it chose as it schedules the reconnect.
    CHECK_MESSAGE(
        wait_until([&] { return agent.err().find("delay=30000ms") != std::string::npos; }, 10s),
        agent.err());
    // Without the floor a second attempt would come within 0.75 s: none may come in 2 s. This
    // wait is what is tested, not a wait for something to happen.
    CHECK_FALSE(wait_until(
        [&] { return server.events("rejected").size() + server.events("open").size() > 1; }, 2s));
}

TEST_CASE("opamp: error_response Unavailable disconnects and comes back after retry_after") {
    TempDir dir;
    Server server(dir, {"--on", "1:unavailable=1500"});
    Driver agent(dir, server.ws_url(), {});
    REQUIRE(server.wait_events("open", 2, 20s));
    auto t = open_times(server);
    CHECK(t[1] - t[0] >= 1400);
    CHECK(server.wait_events("peer_close", 1, 1s));
    CHECK(num(server.events("peer_close")[0].get(), "code") == 1000);
}

TEST_CASE("opamp: 401 is logged as a bad enrollment token, which never appears in logs") {
    TempDir dir;
    write_file(dir / "token", "tok-do-not-log-42\n", 0600);
    Server server(dir, {"--upgrade", "1:401"});
    Driver agent(dir, server.ws_url(), {"--token-file", dir / "token"});
    REQUIRE(server.wait_events("open", 1, 20s));
    auto rej = server.events("rejected");
    REQUIRE(rej.size() == 1);
    CHECK(str(rej[0].get(), "authorization") == "Bearer tok-do-not-log-42");
    CHECK(str(server.events("open")[0].get(), "authorization") == "Bearer tok-do-not-log-42");
    REQUIRE(server.wait_messages(1));
    agent.stop();
    CHECK(agent.err().find("enrollment token") != std::string::npos);
    CHECK(agent.err().find("401") != std::string::npos);
    CHECK(agent.err().find("tok-do-not-log-42") == std::string::npos);
}

TEST_CASE("opamp: garbage and non-zero-header messages are ignored, the connection stays") {
    TempDir dir;
    Server server(dir, {"--on", "1:garbage=00ffffffff+nonzero_header+text", "--on", "2:full"});
    Driver agent(dir, server.ws_url(), {"--heartbeat-ms", "500"});
    // A text frame is a protocol error for OpAMP (net closes with 1002); before it, the two
    // binary messages are ignored without a reply. Either way the agent goes on reporting.
    REQUIRE(server.wait_messages(3, 20s));
    agent.stop();
    CHECK(agent.err().find("malformed OpAMP message") != std::string::npos);
    CHECK(agent.err().find("undecodable OpAMP message") != std::string::npos);
}

TEST_CASE("opamp: binary garbage alone keeps the same connection") {
    TempDir dir;
    Server server(dir, {"--on", "1:garbage=00ffffffff+nonzero_header", "--on", "2:full"});
    Driver agent(dir, server.ws_url(), {"--heartbeat-ms", "400"});
    REQUIRE(server.wait_messages(3, 20s));
    for (auto& m : server.messages()) CHECK(num(m.get(), "conn") == 1);
    CHECK(server.events("open").size() == 1);
}

TEST_CASE("opamp: an oversize message closes with 1009 and the agent reconnects") {
    TempDir dir;
    Server server(dir, {"--on", "1:oversize=17000000"});
    Driver agent(dir, server.ws_url(), {});
    REQUIRE(server.wait_events("open", 2, 30s));
    auto closes = server.events("peer_close");
    REQUIRE_FALSE(closes.empty());
    CHECK(num(closes[0].get(), "code") == 1009);
}

TEST_CASE("opamp: the collector uid is read from persistent_state.yaml and its rewrite reported") {
    TempDir dir;
    run({"mkdir", "-p", dir / "storage"});
    write_file(dir / "storage/persistent_state.yaml",
               "instance_id: 0190a6f4-6c1e-7a3b-9c2d-000000000001\n");
    Server server(dir, {});
    Driver agent(dir, server.ws_url(), {"--storage-dir", dir / "storage", "--poll-ms", "50"});
    REQUIRE(server.wait_messages(1));
    CHECK(str(get(server.messages()[0].get(), "non_identifying"),
              "dev.myriarch.collector.instance_uid") == "0190a6f4-6c1e-7a3b-9c2d-000000000001");
    write_file(dir / "storage/.tmp", "instance_id: 0190a6f4-6c1e-7a3b-9c2d-000000000002\n");
    REQUIRE(std::rename((dir / "storage/.tmp").c_str(),
                        (dir / "storage/persistent_state.yaml").c_str()) == 0);
    REQUIRE(server.wait_messages(2));
    CHECK(str(get(server.messages()[1].get(), "non_identifying"),
              "dev.myriarch.collector.instance_uid") == "0190a6f4-6c1e-7a3b-9c2d-000000000002");
}

TEST_CASE("opamp: wss:// with the test CA connects; a wrong host name and an untrusted CA do not") {
    TempDir dir;
    TlsMaterial tls = TlsMaterial::make(dir);
    {
        Server good(dir, {"--tls-cert", tls.cert, "--tls-key", tls.key}, 0, "good");
        Driver agent(dir, good.wss_url(), {"--ca-file", tls.ca}, "good");
        REQUIRE_MESSAGE(good.wait_messages(1), agent.err());
        CHECK(agent.stop() == 0);
    }
    {
        Server wrong(dir, {"--tls-cert", tls.wrong_cert, "--tls-key", tls.wrong_key}, 0, "wrong");
        Driver agent(dir, wrong.wss_url(), {"--ca-file", tls.ca}, "wrong");
        // The agent gives up on the handshake and says why; then no upgrade may have happened.
        CHECK_MESSAGE(
            wait_until([&] { return agent.err().find("does not match host") != std::string::npos; },
                       20s),
            agent.err());
        CHECK(wrong.events("open").empty());
        CHECK(wrong.messages().empty());
        agent.stop();
        CHECK_MESSAGE(agent.err().find("does not match host") != std::string::npos, agent.err());
    }
    {
        Server rogue(dir, {"--tls-cert", tls.rogue_cert, "--tls-key", tls.rogue_key}, 0, "rogue");
        Driver agent(dir, rogue.wss_url(), {"--ca-file", tls.ca}, "rogue");
        // The agent gives up on the handshake and says why; then no upgrade may have happened.
        CHECK_MESSAGE(
            wait_until(
                [&] { return agent.err().find("certificate not trusted") != std::string::npos; },
                20s),
            agent.err());
        CHECK(rogue.events("open").empty());
        CHECK(rogue.messages().empty());
        agent.stop();
        CHECK_MESSAGE(agent.err().find("certificate not trusted") != std::string::npos,
                      agent.err());
    }
}

TEST_CASE("opamp: a server restarted 30 times in a row sees the agent stay within its backoff") {
    TempDir dir;
    const int port = reserve_port();
    std::optional<Server> server;
    server.emplace(dir, std::vector<std::string>{}, port);
    Driver agent(dir, "ws://127.0.0.1:" + std::to_string(port) + "/v1/opamp", {});
    REQUIRE(server->wait_messages(1));
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 30; ++i) {
        server->stop();
        server.emplace(dir, std::vector<std::string>{}, port);
        // Each server lives 300 ms: the pace of the restarts is the scenario, not a wait.
        std::this_thread::sleep_for(300ms);
    }
    agent.stop();
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const std::string log = agent.err();
    size_t reconnects = 0, immediate = 0;
    for (size_t p = 0; (p = log.find("opamp disconnected, reconnecting", p)) != std::string::npos;
         ++p) {
        ++reconnects;
        const size_t eol = log.find('\n', p);
        if (log.substr(p, eol - p).find("delay=0ms") != std::string::npos) ++immediate;
    }
    // The most attempts the backoff allows in the time taken: one immediate reconnect, then
    // delays of at least 0.5 × 0.5 s × 1.5^n (the lowest jitter).
    size_t allowed = 1;
    for (double sum = 0, base = 500; sum + base * 0.5 <= elapsed_ms; base *= 1.5) {
        sum += base * 0.5;
        ++allowed;
    }
    MESSAGE("reconnects " << reconnects << ", allowed " << allowed << " in " << elapsed_ms
                          << " ms");
    CHECK(reconnects >= 3);
    CHECK(reconnects <= allowed + 1);  // + the one scheduled by the last close
    CHECK(immediate == 1);
}
