#include <doctest/doctest.h>
#include <unistd.h>
#include <uv.h>

#include <cstdio>

#include "fakes.hpp"
#include "harness.hpp"
#include "opamp/agent.hpp"

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
    uv_loop_t loop;
    REQUIRE(uv_loop_init(&loop) == 0);
    {
        auto timers = std::make_shared<FakeTimers>();
        FakeNet net;
        FixedStatusProvider status;
        UnavailableInstaller installer;
        AgentOptions o;
        o.state_dir = state.path();
        o.supervisor_storage_dir = storage.path();
        o.persistent_state_poll = std::chrono::milliseconds(20);
        AgentDeps d;
        d.loop = &loop;
        d.status = &status;
        d.installer = &installer;
        d.transport = net.factory();
        d.timers = timers;
        d.clock = &timers->clock;
        auto a = Agent::create(o, std::move(d));
        REQUIRE(a);
        auto& agent = **a;
        agent.start();
        net.open();
        REQUIRE(net.last().sent.size() == 1);
        CHECK(attr(net.last().sent[0], "dev.myriarch.collector.instance_uid") ==
              "0190a6f4-6c1e-7a3b-9c2d-000000000001");

        // Runs the loop in 10 ms slices (a timer stops it) until pred holds, for up to 10 s.
        uv_timer_t slice;
        uv_timer_init(&loop, &slice);
        auto run_until = [&](auto pred) {
            for (int i = 0; i < 1000 && !pred(); ++i) {
                uv_timer_start(
                    &slice, [](uv_timer_t* t) { uv_stop(t->loop); }, 10, 0);
                uv_run(&loop, UV_RUN_DEFAULT);
            }
            return pred();
        };
        replace(storage, "instance_id: 0190a6f4-6c1e-7a3b-9c2d-000000000002\n");
        REQUIRE(run_until([&] { return net.last().sent.size() == 2; }));
        CHECK(attr(net.last().sent[1], "dev.myriarch.collector.instance_uid") ==
              "0190a6f4-6c1e-7a3b-9c2d-000000000002");

        // Malformed: the attribute disappears (reported), and nothing is fatal.
        replace(storage, "instance_id: [broken\n");
        REQUIRE(run_until([&] { return net.last().sent.size() == 3; }));
        CHECK(attr(net.last().sent[2], "dev.myriarch.collector.instance_uid") == "<absent>");
        CHECK(agent.state() == Agent::State::connected);

        bool done = false;
        agent.stop([&] { done = true; });
        net.closed(TransportClosed{1000, "", 0, std::nullopt, ""});
        CHECK(done);
        a->reset();
        uv_close(reinterpret_cast<uv_handle_t*>(&slice), nullptr);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
}
