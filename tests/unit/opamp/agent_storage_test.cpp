#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>

#include "fakes.hpp"
#include "harness.hpp"
#include "loop/fake_scheduler.hpp"
#include "opamp/agent.hpp"
#include "opamp_stand_ins.hpp"

using namespace myr;
using namespace myr::opamp;
using namespace myr::opamp::testing;

namespace {

std::string attr(const AgentToServer& m, const std::string& key) {
    if (!m.agent_description) return "<none>";
    for (auto& kv : m.agent_description->non_identifying_attributes) {
        if (kv.key == key) return kv.value;
    }
    return "<absent>";
}

void replace(const test::TempDir& dir, const std::string& text) {
    test::write_file(dir / ".tmp", text);
    REQUIRE(rename((dir / ".tmp").c_str(), (dir / "persistent_state.yaml").c_str()) == 0);
}

}  // namespace

TEST_CASE("agent: the collector uid comes from persistent_state.yaml and a rewrite is reported") {
    test::TempDir state, storage;
    replace(storage, "instance_id: 0190a6f4-6c1e-7a3b-9c2d-000000000001\n");
    loop::FakeScheduler sched;
    FakeNet net;
    FixedStatusProvider status;
    UnavailablePackageHandler packages;
    AgentOptions o;
    o.state_dir = statedir::StateDir::open(state.path()).value();
    o.supervisor_storage_dir = storage.path();
    o.persistent_state_poll = std::chrono::milliseconds(20);
    AgentDeps d;
    d.sched = &sched;
    d.status = &status;
    d.packages = &packages;
    d.transport = net.factory();
    auto a = Agent::create(o, std::move(d));
    REQUIRE(a);
    auto& agent = **a;
    agent.start();
    net.open();
    REQUIRE(net.last().sent.size() == 1);
    CHECK(attr(net.last().sent[0], "dev.myriarch.collector.instance_uid") ==
          "0190a6f4-6c1e-7a3b-9c2d-000000000001");

    // The next poll sees the rename and reports the new uid.
    replace(storage, "instance_id: 0190a6f4-6c1e-7a3b-9c2d-000000000002\n");
    sched.advance(std::chrono::milliseconds(20));
    REQUIRE(net.last().sent.size() == 2);
    CHECK(attr(net.last().sent[1], "dev.myriarch.collector.instance_uid") ==
          "0190a6f4-6c1e-7a3b-9c2d-000000000002");

    // Malformed: the attribute disappears (reported), and nothing is fatal.
    replace(storage, "instance_id: [broken\n");
    sched.advance(std::chrono::milliseconds(20));
    REQUIRE(net.last().sent.size() == 3);
    CHECK(attr(net.last().sent[2], "dev.myriarch.collector.instance_uid") == "<absent>");
    CHECK(agent.state() == Agent::State::connected);

    bool done = false;
    agent.stop([&] { done = true; });
    net.closed(TransportClosed{1000, "", 0, std::nullopt, ""});
    CHECK(done);
    a->reset();
    CHECK(sched.armed_timers() == 0);
}
