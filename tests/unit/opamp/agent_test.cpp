#include "opamp/agent.hpp"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <map>

#include "fakes.hpp"
#include "harness.hpp"
#include "loop/fake_scheduler.hpp"
#include "opamp_stand_ins.hpp"

using namespace myr;
using namespace myr::opamp;
using namespace myr::opamp::testing;
using namespace std::chrono_literals;

namespace {

std::map<std::string, std::string> attrs(const std::vector<KeyValue>& kvs) {
    std::map<std::string, std::string> m;
    for (auto& kv : kvs) m[kv.key] = kv.value;
    return m;
}

// An agent with fake seams in its own state directory; jitter fixed at the middle (r = 0.5) unless
// a test sets `r`.
struct Rig {
    test::TempDir dir;
    loop::FakeScheduler sched;
    FakeNet net;
    FixedStatusProvider status;
    UnavailablePackageHandler packages;
    double r = 0.5;
    std::unique_ptr<Agent> agent;
    AgentOptions opt;

    Rig() {
        opt.state_dir = statedir::StateDir::open(dir.path()).value();
        opt.host_name = "pod-0";
        opt.service_version = "0.1.0";
        status.health_value = ComponentHealth{true, 1000, "", "running", 2000};
        status.active_version = "0.116.0";
    }
    void make() {
        AgentDeps d;
        d.status = &status;
        d.packages = &packages;
        d.transport = net.factory();
        d.sched = &sched;
        d.random01 = [this] { return r; };
        auto a = Agent::create(opt, std::move(d));
        REQUIRE(a);
        agent = std::move(*a);
    }
    void start_connected() {
        make();
        agent->start();
        REQUIRE(net.conns.size() == 1);
        net.open();
    }
    std::vector<AgentToServer>& sent() { return net.last().sent; }
    void advance(Duration d) { sched.advance(d); }
};

}  // namespace

TEST_CASE("agent: the first message is a full report with every attribute and capability") {
    Rig rig;
    rig.status.image_version = "0.115.0";
    rig.start_connected();
    REQUIRE(rig.sent().size() == 1);
    const AgentToServer& m = rig.sent()[0];
    CHECK(m.instance_uid == uid_bytes(rig.agent->instance_uid()));
    CHECK(m.sequence_num == 1);
    CHECK(m.capabilities == 0x2819);
    CHECK(m.capabilities == (agent_cap::reports_status | agent_cap::accepts_packages |
                             agent_cap::reports_package_statuses | agent_cap::reports_health |
                             agent_cap::reports_heartbeat));
    REQUIRE(m.agent_description);
    auto id = attrs(m.agent_description->identifying_attributes);
    CHECK(id.size() == 3);
    CHECK(id["service.name"] == "myriarch-updater");
    CHECK(id["service.instance.id"] == uid_to_text(rig.agent->instance_uid()));
    CHECK(id["service.version"] == "0.1.0");
    auto non = attrs(m.agent_description->non_identifying_attributes);
    CHECK(non["host.name"] == "pod-0");
    CHECK(non["os.type"] == "linux");
    CHECK(non["host.arch"] == host_arch());
    CHECK(!non["host.arch"].empty());
    CHECK(non["dev.myriarch.updater.install_method"] == "container");
    CHECK(non["dev.myriarch.updater.image_collector_version"] == "0.115.0");
    CHECK(non["dev.myriarch.collector.version"] == "0.116.0");
    CHECK(non.count("dev.myriarch.collector.instance_uid") == 0);  // no storage dir: omitted
    for (auto& kv : m.agent_description->non_identifying_attributes) CHECK(kv.is_string);
    REQUIRE(m.health);
    CHECK(m.health->healthy);
    CHECK(m.health->status == "running");
    CHECK(m.health->start_time_unix_nano == 1000);
    REQUIRE(m.package_statuses);
    CHECK(m.package_statuses->packages.empty());
    CHECK_FALSE(m.agent_disconnect);
}

TEST_CASE("agent: values not known yet are omitted, and reported once they are") {
    Rig rig;
    rig.status.active_version = "";
    rig.start_connected();
    auto non = attrs(rig.sent()[0].agent_description->non_identifying_attributes);
    CHECK(non.count("dev.myriarch.updater.image_collector_version") == 0);
    CHECK(non.count("dev.myriarch.collector.version") == 0);
    rig.status.image_version = "0.115.0";
    rig.agent->state_changed();
    REQUIRE(rig.sent().size() == 2);
    const AgentToServer& m = rig.sent()[1];
    REQUIRE(m.agent_description);
    CHECK(attrs(m.agent_description
                    ->non_identifying_attributes)["dev.myriarch.updater.image_collector_version"] ==
          "0.115.0");
    CHECK_FALSE(m.health);  // unchanged parts are not resent
    CHECK_FALSE(m.package_statuses);
    CHECK(m.sequence_num == 2);
}

TEST_CASE("agent: nothing is sent for a ServerToAgent that changes nothing") {
    Rig rig;
    rig.start_connected();
    ServerToAgent s;
    s.instance_uid = uid_bytes(rig.agent->instance_uid());
    s.capabilities = 0x1f;
    rig.net.deliver(s);
    rig.net.deliver(s);
    rig.agent->state_changed();
    CHECK(rig.sent().size() == 1);
}

TEST_CASE("agent: ReportFullState resends everything with the next sequence number") {
    Rig rig;
    rig.start_connected();
    ServerToAgent s;
    s.flags = server_flag::report_full_state;
    rig.net.deliver(s);
    rig.sched.run_pending();  // answered on the next turn
    REQUIRE(rig.sent().size() == 2);
    CHECK(rig.sent()[1].sequence_num == 2);
    CHECK(rig.sent()[1].agent_description);
    CHECK(rig.sent()[1].health);
    CHECK(rig.sent()[1].package_statuses);
}

TEST_CASE("agent: a health change is reported alone") {
    Rig rig;
    rig.start_connected();
    rig.status.health_value.healthy = false;
    rig.status.health_value.status = "collector health check failing";
    rig.agent->state_changed();
    REQUIRE(rig.sent().size() == 2);
    REQUIRE(rig.sent()[1].health);
    CHECK_FALSE(rig.sent()[1].health->healthy);
    CHECK(rig.sent()[1].health->status == "collector health check failing");
    CHECK_FALSE(rig.sent()[1].agent_description);
}

TEST_CASE("agent: heartbeats every 30 s counted from the last message sent") {
    Rig rig;
    rig.start_connected();
    rig.advance(29s);
    CHECK(rig.sent().size() == 1);
    rig.advance(1s);
    REQUIRE(rig.sent().size() == 2);
    const AgentToServer& hb = rig.sent()[1];
    CHECK(hb.sequence_num == 2);
    CHECK(hb.instance_uid == uid_bytes(rig.agent->instance_uid()));
    CHECK_FALSE(hb.agent_description);
    CHECK_FALSE(hb.health);
    // A report in between pushes the next heartbeat back.
    rig.advance(20s);
    rig.status.health_value.status = "changed";
    rig.agent->state_changed();
    REQUIRE(rig.sent().size() == 3);
    rig.advance(29s);
    CHECK(rig.sent().size() == 3);
    rig.advance(1s);
    CHECK(rig.sent().size() == 4);
}

TEST_CASE("agent: the server's heartbeat interval replaces ours, and 0 turns heartbeats off") {
    Rig rig;
    rig.start_connected();
    ServerToAgent s;
    s.heartbeat_interval_seconds = 5;
    rig.net.deliver(s);
    CHECK(rig.sent().size() == 1);  // a settings offer alone is no reason to send
    CHECK(rig.agent->heartbeat_interval() == 5s);
    rig.advance(5s);
    CHECK(rig.sent().size() == 2);
    rig.advance(5s);
    CHECK(rig.sent().size() == 3);
    s.heartbeat_interval_seconds = 0;
    rig.net.deliver(s);
    rig.advance(10min);
    CHECK(rig.sent().size() == 3);
}

TEST_CASE("agent: new_instance_uid is adopted, stored, and used after a restart") {
    Rig rig;
    rig.start_connected();
    const Uid old = rig.agent->instance_uid();
    const Uid fresh = uid_from_text("0190a6f4-6c1e-7a3b-9c2d-0123456789ab").value();
    ServerToAgent s;
    s.instance_uid = uid_bytes(old);
    s.new_instance_uid = uid_bytes(fresh);
    rig.net.deliver(s);
    rig.sched.run_pending();  // stored on the work queue, then adopted
    CHECK(rig.agent->instance_uid() == fresh);
    CHECK(test::read_file(rig.dir / "instance_uid") == uid_to_text(fresh) + "\n");
    REQUIRE(rig.sent().size() == 2);  // service.instance.id changed: reported
    CHECK(rig.sent()[1].instance_uid == uid_bytes(fresh));
    CHECK(attrs(rig.sent()[1].agent_description->identifying_attributes)["service.instance.id"] ==
          uid_to_text(fresh));
    rig.agent.reset();
    rig.make();
    CHECK(rig.agent->instance_uid() == fresh);
}

TEST_CASE("agent: a message for another instance uid is ignored") {
    Rig rig;
    rig.start_connected();
    ServerToAgent s;
    s.instance_uid = std::string(16, '\x09');
    s.flags = server_flag::report_full_state;
    rig.net.deliver(s);
    CHECK(rig.sent().size() == 1);
}

TEST_CASE("agent: malformed and undecodable messages are ignored and the connection stays") {
    Rig rig;
    rig.start_connected();
    rig.net.deliver_raw("\x05garbage");
    rig.net.deliver_raw(std::string("\0\xff\xff\xff", 4));
    rig.net.deliver_raw("");
    CHECK(rig.agent->state() == Agent::State::connected);
    CHECK_FALSE(rig.net.last().close_code);
    ServerToAgent s;
    s.flags = server_flag::report_full_state;
    rig.net.deliver(s);
    rig.sched.run_pending();
    CHECK(rig.sent().size() == 2);
}

TEST_CASE("agent: an offer is answered InstallFailed by the unavailable package handler") {
    Rig rig;
    rig.start_connected();
    ServerToAgent s;
    PackageAvailable top{"otelcol-contrib", PackageType::top_level, "0.117.0", {}, "h-top"};
    PackageAvailable addon{"extra", PackageType::addon, "1.0", {}, "h-addon"};
    s.packages_available = PackagesAvailable{{top, addon}, "all-1"};
    rig.net.deliver(s);
    REQUIRE(rig.sent().size() == 2);
    REQUIRE(rig.sent()[1].package_statuses);
    const PackageStatuses& ps = *rig.sent()[1].package_statuses;
    CHECK(ps.server_provided_all_packages_hash == "all-1");
    REQUIRE(ps.packages.size() == 2);
    for (const auto& p : ps.packages) {
        CHECK(p.status == PackageStatusCode::install_failed);
        CHECK(p.error_message == "installer not available");
    }
    CHECK(ps.packages[0].name == "otelcol-contrib");
    CHECK(ps.packages[0].server_offered_version == "0.117.0");
    CHECK(ps.packages[0].server_offered_hash == "h-top");
    // The same offer again changes nothing: no new message.
    rig.net.deliver(s);
    CHECK(rig.sent().size() == 2);
}

TEST_CASE("agent: after an unexpected close it reconnects once at once, then backs off") {
    Rig rig;
    rig.r = 0.0;  // lowest jitter: delays are exactly half the base
    rig.start_connected();
    rig.net.closed();
    CHECK(rig.agent->state() == Agent::State::waiting);
    CHECK(rig.sched.next_due() == 0ms);
    rig.advance(0ms);
    REQUIRE(rig.net.conns.size() == 2);
    rig.net.open();
    CHECK(rig.sent().size() == 1);  // a new connection starts with a full report
    CHECK(rig.sent()[0].agent_description);
    CHECK(rig.sent()[0].sequence_num == 2);  // sequence continues across connections
    rig.net.closed();
    CHECK(rig.sched.next_due() == 250ms);  // 0.5 s × 0.5
    rig.advance(250ms);
    REQUIRE(rig.net.conns.size() == 3);
    rig.net.closed(TransportClosed{0, "", 0, std::nullopt, "connection refused"});
    CHECK(rig.sched.next_due() == 375ms);  // 0.75 s × 0.5
    rig.advance(375ms);
    rig.net.closed(TransportClosed{0, "", 0, std::nullopt, "connection refused"});
    CHECK(rig.sched.next_due() == 562ms);
}

TEST_CASE("agent: backoff delays stay within ±50 % of 0.5 s × 1.5^n and never exceed 60 s") {
    Backoff lo({}, [] { return 0.0; });
    Backoff hi({}, [] { return 0.999999; });
    double base = 500;
    for (int n = 0; n < 30; ++n) {
        const Duration a = lo.next();
        const Duration b = hi.next();
        const double cb = std::min(base, 60000.0);
        CHECK(a.count() == static_cast<int64_t>(cb * 0.5));
        CHECK(b.count() <= 60000);
        CHECK(b.count() >= static_cast<int64_t>(std::min(cb * 1.5, 60000.0)) - 1);
        base *= 1.5;
    }
}

TEST_CASE("agent: a connection that stayed up resets the backoff") {
    Rig rig;
    rig.r = 0.0;
    rig.start_connected();
    rig.net.closed();
    rig.advance(0ms);
    rig.net.closed(TransportClosed{0, "", 0, std::nullopt, "refused"});
    rig.advance(250ms);
    rig.net.closed(TransportClosed{0, "", 0, std::nullopt, "refused"});
    rig.advance(375ms);
    rig.net.open();
    rig.advance(kStableConnection);
    rig.net.closed();
    CHECK(rig.sched.next_due() == 0ms);  // immediate again
    rig.advance(0ms);
    rig.net.closed(TransportClosed{0, "", 0, std::nullopt, "refused"});
    CHECK(rig.sched.next_due() == 250ms);
}

TEST_CASE("agent: 503 and 429 honour Retry-After, at least 30 s without it") {
    Rig rig;
    rig.make();
    rig.agent->start();
    rig.net.closed(TransportClosed{0, "", 503, 7s, "upgrade answered with HTTP 503"});
    CHECK(rig.sched.next_due() == 7s);
    rig.advance(7s);
    REQUIRE(rig.net.conns.size() == 2);
    rig.net.closed(TransportClosed{0, "", 429, std::nullopt, "upgrade answered with HTTP 429"});
    CHECK(rig.sched.next_due() >= 30s);
    rig.advance(6999ms);
    CHECK(rig.net.conns.size() == 2);
}

TEST_CASE("agent: 401 backs off like any failure") {
    Rig rig;
    rig.r = 0.0;
    rig.make();
    rig.agent->start();
    rig.net.closed(TransportClosed{0, "", 401, std::nullopt, "upgrade answered with HTTP 401"});
    CHECK(rig.sched.next_due() == 250ms);
    rig.advance(250ms);
    rig.net.closed(TransportClosed{0, "", 401, std::nullopt, "upgrade answered with HTTP 401"});
    CHECK(rig.sched.next_due() == 375ms);
}

TEST_CASE("agent: error_response Unavailable disconnects and waits retry_after") {
    Rig rig;
    rig.start_connected();
    ServerToAgent s;
    s.error_response =
        ServerErrorResponse{ServerErrorType::unavailable, "maintenance", 12'000'000'000ull};
    rig.net.deliver(s);
    CHECK(rig.net.last().close_code == 1000);
    CHECK(rig.agent->state() == Agent::State::closing);
    rig.net.closed(TransportClosed{1000, "", 0, std::nullopt, ""});
    CHECK(rig.sched.next_due() == 12s);
    rig.advance(11s);
    CHECK(rig.net.conns.size() == 1);
    rig.advance(1s);
    CHECK(rig.net.conns.size() == 2);
}

TEST_CASE("agent: error_response BadRequest is logged and the connection stays") {
    Rig rig;
    rig.start_connected();
    ServerToAgent s;
    s.error_response = ServerErrorResponse{ServerErrorType::bad_request, "bad", std::nullopt};
    rig.net.deliver(s);
    CHECK(rig.agent->state() == Agent::State::connected);
    CHECK_FALSE(rig.net.last().close_code);
}

TEST_CASE("agent: stop sends agent_disconnect, closes with 1000, and finishes on close") {
    Rig rig;
    rig.start_connected();
    bool done = false;
    rig.agent->stop([&] { done = true; });
    REQUIRE(rig.sent().size() == 2);
    CHECK(rig.sent()[1].agent_disconnect);
    CHECK(rig.sent()[1].sequence_num == 2);
    CHECK(rig.net.last().close_code == 1000);
    CHECK_FALSE(done);
    rig.net.closed(TransportClosed{1000, "", 0, std::nullopt, ""});
    CHECK(done);
    CHECK(rig.agent->state() == Agent::State::stopped);
    rig.advance(10min);
    CHECK(rig.net.conns.size() == 1);  // no reconnect after stop
}

TEST_CASE("agent: a second stop keeps the first caller's callback; each runs once at the end") {
    Rig rig;
    rig.start_connected();
    int first = 0, second = 0, late = 0;
    rig.agent->stop([&] { ++first; });
    rig.agent->stop([&] { ++second; });
    CHECK(rig.agent->state() == Agent::State::stopping);
    CHECK(first + second == 0);
    REQUIRE(rig.sent().size() == 2);  // one goodbye, not two
    rig.net.closed(TransportClosed{1000, "", 0, std::nullopt, ""});
    CHECK(first == 1);
    CHECK(second == 1);
    // The stop timer is gone with the stop: nothing runs a callback again.
    rig.advance(kStopTimeout * 2);
    CHECK(first == 1);
    CHECK(second == 1);
    CHECK(rig.sched.armed_timers() == 0);
    // A stop after the stop answers at once.
    rig.agent->stop([&] { ++late; });
    CHECK(late == 1);
    CHECK(first == 1);
}

TEST_CASE("agent: stop gives up waiting for the close after a few seconds") {
    Rig rig;
    rig.start_connected();
    bool done = false;
    rig.agent->stop([&] { done = true; });
    rig.advance(kStopTimeout);
    CHECK(done);
}

TEST_CASE("agent: stop while waiting to reconnect finishes at once") {
    Rig rig;
    rig.make();
    rig.agent->start();
    rig.net.closed(TransportClosed{0, "", 0, std::nullopt, "refused"});
    bool done = false;
    rig.agent->stop([&] { done = true; });
    CHECK(done);
    rig.advance(10min);
    CHECK(rig.net.conns.size() == 1);
}

TEST_CASE("agent: the enrollment token goes in the Authorization header, from file or env") {
    Rig rig;
    test::write_file(rig.dir / "token", "s3cret-token\n", 0600);
    rig.opt.enrollment_token_file = rig.dir / "token";
    rig.make();
    rig.agent->start();
    REQUIRE(rig.net.last().headers.size() == 1);
    CHECK(rig.net.last().headers[0].first == "Authorization");
    CHECK(rig.net.last().headers[0].second == "Bearer s3cret-token");

    Rig env;
    setenv("MYR_TEST_OPAMP_TOKEN", "env-token", 1);
    env.opt.enrollment_token_env = "MYR_TEST_OPAMP_TOKEN";
    env.make();
    env.agent->start();
    REQUIRE(env.net.last().headers.size() == 1);
    CHECK(env.net.last().headers[0].second == "Bearer env-token");
    unsetenv("MYR_TEST_OPAMP_TOKEN");

    Rig none;
    none.make();
    none.agent->start();
    CHECK(none.net.last().headers.empty());
}

TEST_CASE("agent: nothing is sent while disconnected; the next connection reports the news") {
    Rig rig;
    rig.make();
    rig.agent->start();
    rig.status.health_value.status = "starting";
    rig.agent->state_changed();
    CHECK(rig.sent().empty());
    rig.net.open();
    REQUIRE(rig.sent().size() == 1);
    CHECK(rig.sent()[0].health->status == "starting");
}

TEST_CASE("agent: host name comes from config, then $HOSTNAME, then gethostname") {
    CHECK(resolve_host_name("configured") == "configured");
    setenv("HOSTNAME", "from-env", 1);
    CHECK(resolve_host_name("") == "from-env");
    unsetenv("HOSTNAME");
    CHECK_FALSE(resolve_host_name("").empty());
}

TEST_CASE("agent: error_response Unavailable without retry_after backs off") {
    Rig rig;
    rig.r = 0.0;
    rig.start_connected();
    ServerToAgent s;
    s.error_response = ServerErrorResponse{ServerErrorType::unavailable, "busy", std::nullopt};
    rig.net.deliver(s);
    CHECK(rig.net.last().close_code == 1000);
    rig.net.closed(TransportClosed{1000, "", 0, std::nullopt, ""});
    CHECK(rig.sched.next_due() == 250ms);
}

TEST_CASE("agent: stop during the connection attempt aborts it and sends nothing") {
    Rig rig;
    rig.make();
    rig.agent->start();
    bool done = false;
    rig.agent->stop([&] { done = true; });
    CHECK(rig.net.last().close_code == 1000);
    CHECK(rig.sent().empty());
    rig.net.closed(TransportClosed{1000, "", 0, std::nullopt, ""});
    CHECK(done);
    rig.advance(10min);
    CHECK(rig.net.conns.size() == 1);
}

TEST_CASE("agent: a failed send is retried with the next change, not lost") {
    Rig rig;
    rig.start_connected();
    rig.net.last().fail_sends = true;
    rig.status.health_value.status = "degraded";
    rig.agent->state_changed();
    CHECK(rig.sent().size() == 1);
    rig.net.last().fail_sends = false;
    rig.agent->state_changed();
    REQUIRE(rig.sent().size() == 2);
    CHECK(rig.sent()[1].health->status == "degraded");
    CHECK(rig.sent()[1].sequence_num == 2);  // the failed attempt used no number
}

TEST_CASE("agent: a token file reached through symlinks (a Kubernetes secret volume) is read") {
    Rig rig;
    REQUIRE(mkdir((rig.dir / "..2026_11_29").c_str(), 0700) == 0);
    test::write_file(rig.dir / "..2026_11_29/token", "k8s-token\n", 0600);
    REQUIRE(symlink("..2026_11_29", (rig.dir / "..data").c_str()) == 0);
    REQUIRE(symlink("..data/token", (rig.dir / "token").c_str()) == 0);
    rig.opt.enrollment_token_file = rig.dir / "token";
    rig.make();
    rig.agent->start();
    REQUIRE(rig.net.last().headers.size() == 1);
    CHECK(rig.net.last().headers[0].second == "Bearer k8s-token");
}

TEST_CASE("agent: an unreadable token file means no header, and the connection is still tried") {
    Rig rig;
    rig.opt.enrollment_token_file = rig.dir / "missing-token";
    rig.make();
    rig.agent->start();
    CHECK(rig.net.last().connect_called);
    CHECK(rig.net.last().headers.empty());
}

TEST_CASE("agent: absurd retry and heartbeat values from the server are clamped") {
    Rig rig;
    rig.start_connected();
    ServerToAgent hb;
    hb.heartbeat_interval_seconds = ~0ull;
    rig.net.deliver(hb);
    CHECK(rig.agent->heartbeat_interval() == kMaxHeartbeat);
    ServerToAgent s;
    s.error_response = ServerErrorResponse{ServerErrorType::unavailable, "x", ~0ull};
    rig.net.deliver(s);
    rig.net.closed(TransportClosed{1000, "", 0, std::nullopt, ""});
    CHECK(rig.sched.next_due() == kMaxRetryAfter);
}

namespace {

// Plays a server that refuses every connection attempt in the way `refuse` does, for `minutes`
// simulated minutes, with the shortest jitter (the worst case), and counts the attempts made in
// each minute. Stops counting at 10,000 so that a zero-delay loop ends the test instead of hanging.
std::vector<int> attempts_per_minute(int minutes, const std::function<void(Rig&)>& refuse) {
    Rig rig;
    rig.r = 0.0;
    rig.make();
    rig.agent->start();
    std::vector<int> per(static_cast<size_t>(minutes), 0);
    const MonoTime t0 = rig.sched.now();
    size_t seen = 0;
    for (;;) {
        const auto minute = static_cast<size_t>((rig.sched.now() - t0) / 1min);
        if (minute >= per.size()) return per;
        while (seen < rig.net.conns.size()) {
            ++seen;
            if (++per[minute] >= 10'000) return per;
            refuse(rig);
        }
        const auto due = rig.sched.next_due();
        REQUIRE(due);
        rig.advance(*due);
    }
}

void check_refusal_schedule(const std::vector<int>& per) {
    INFO("attempts per minute: " << [&] {
        std::string s;
        for (int n : per) s += std::to_string(n) + " ";
        return s;
    }());
    CHECK(per[0] <= 12);  // 1 s floor while the backoff grows past it
    for (size_t m = 3; m < per.size(); ++m) CHECK(per[m] <= 2);  // backoff at its 30–60 s cap
}

}  // namespace

TEST_CASE("agent: a server refusing with 503 and Retry-After: 0 gets growing backoff, not a loop") {
    check_refusal_schedule(attempts_per_minute(60, [](Rig& rig) {
        rig.net.closed(TransportClosed{0, "", 503, 0ms, "upgrade answered with HTTP 503"});
    }));
}

TEST_CASE("agent: a server refusing with 429 and no Retry-After waits at least 30 s each time") {
    auto per = attempts_per_minute(60, [](Rig& rig) {
        rig.net.closed(TransportClosed{0, "", 429, std::nullopt, "upgrade answered with HTTP 429"});
    });
    check_refusal_schedule(per);
    for (int n : per) CHECK(n <= 2);
}

TEST_CASE("agent: a server answering Unavailable with retry 0 gets growing backoff, not a loop") {
    check_refusal_schedule(attempts_per_minute(60, [](Rig& rig) {
        rig.net.open();
        ServerToAgent s;
        s.error_response = ServerErrorResponse{ServerErrorType::unavailable, "busy", 0};
        rig.net.deliver(s);
        rig.net.closed(TransportClosed{1000, "", 0, std::nullopt, ""});
    }));
}

TEST_CASE("agent: a server-chosen delay still advances the backoff, and jitter spreads agents") {
    auto delays = [](double r) {
        Rig rig;
        rig.r = r;
        rig.make();
        rig.agent->start();
        std::vector<Duration> out;
        for (int i = 0; i < 12; ++i) {
            rig.net.closed(TransportClosed{0, "", 503, 2s, "upgrade answered with HTTP 503"});
            out.push_back(*rig.sched.next_due());
            rig.advance(out.back());
        }
        return out;
    };
    const auto lo = delays(0.0), hi = delays(0.9);
    CHECK(lo.front() == 2s);  // the server's 2 s, while the backoff is below it
    CHECK(lo.back() > 2s);    // then the backoff, which 2 s refusals kept growing
    CHECK(hi.back() > lo.back());
}

namespace {

// "VmRSS" (now) or "VmHWM" (the peak since the last reset_peak_rss()) in KiB.
long rss_kib(const std::string& field) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
    }
    FAIL("no " << field << " in /proc/self/status");
    return -1;
}
void reset_peak_rss() {
    std::ofstream("/proc/self/clear_refs") << "5";  // Linux ≥ 4.0: VmHWM = VmRSS
}

// A framed ServerToAgent whose offer is `bytes` of empty 2-byte map entries.
std::string offer_of_empty_entries(size_t bytes) {
    std::string entries;
    entries.reserve(bytes);
    while (entries.size() + 2 <= bytes) entries.append("\x0a\x00", 2);
    std::string msg(1, '\0');
    msg.push_back('\x2a');  // field 5, length-delimited
    for (uint64_t v = entries.size();; v >>= 7) {
        msg.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
        if (v < 0x80) break;
    }
    return msg + entries;
}

}  // namespace

TEST_CASE(
    "agent: an offer of empty entries costs a bounded amount and is answered with one error") {
    for (size_t mib : {2, 15}) {
        CAPTURE(mib);
        Rig rig;
        rig.start_connected();
        const std::string raw = offer_of_empty_entries(mib << 20);
        reset_peak_rss();
        const long before = rss_kib("VmRSS");
        rig.net.deliver_raw(raw);
        const long grown = rss_kib("VmHWM") - before;
        MESSAGE("offer of " << mib << " MiB: peak RSS grew by " << grown << " KiB");
        // Once 1.3 GB for 2 MiB and std::bad_alloc for 15 MiB; now the trimmed copy of the offer.
        CHECK(grown < 48 * 1024);
        REQUIRE(rig.sent().size() == 2);
        const PackageStatuses& ps = *rig.sent()[1].package_statuses;
        CHECK(ps.packages.size() == kMaxOfferedPackages);
        CHECK(ps.error_message == refused_packages_message((mib << 20) / 2 - kMaxOfferedPackages));
    }
}

TEST_CASE("agent: a flood of ReportFullState in one turn is answered with one full report") {
    Rig rig;
    rig.start_connected();
    ServerToAgent s;
    s.flags = server_flag::report_full_state;
    for (int i = 0; i < 1000; ++i) rig.net.deliver(s);
    CHECK(rig.sent().size() == 1);  // nothing queued per flag
    rig.sched.run_pending();
    REQUIRE(rig.sent().size() == 2);
    CHECK(rig.sent()[1].agent_description);
    rig.net.deliver(s);  // a later turn's flag gets its own report
    rig.sched.run_pending();
    CHECK(rig.sent().size() == 3);
}

TEST_CASE(
    "agent: a new instance uid is stored off the loop and adopted at most once a connection") {
    Rig rig;
    rig.start_connected();
    const Uid old = rig.agent->instance_uid();
    const Uid a = uid_from_text("0190a6f4-6c1e-7a3b-9c2d-0123456789ab").value();
    const Uid b = uid_from_text("0190a6f4-6c1e-7a3b-9c2d-ba9876543210").value();
    ServerToAgent s;
    s.new_instance_uid = uid_bytes(a);
    rig.net.deliver(s);
    // The write and its fsyncs wait on the work queue; the loop went on with the old uid.
    CHECK(rig.sched.queued_work() == 1);
    CHECK(rig.agent->instance_uid() == old);
    // A server flapping between two uids: the second on this connection is ignored.
    for (int i = 0; i < 100; ++i) {
        s.new_instance_uid = uid_bytes(i % 2 ? a : b);
        rig.net.deliver(s);
    }
    CHECK(rig.sched.queued_work() == 1);
    rig.sched.run_pending();
    CHECK(rig.agent->instance_uid() == a);
    CHECK(test::read_file(rig.dir / "instance_uid") == uid_to_text(a) + "\n");
    // The next connection may be given another.
    rig.net.closed();
    rig.advance(0ms);
    rig.net.open();
    s.instance_uid = uid_bytes(a);
    s.new_instance_uid = uid_bytes(b);
    rig.net.deliver(s);
    rig.sched.run_pending();
    CHECK(rig.agent->instance_uid() == b);
}
