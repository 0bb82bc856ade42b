#include "service/child_service.hpp"

#include <doctest/doctest.h>
#include <sys/wait.h>

#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"
#include "proc/reaper.hpp"

using namespace myr;
using namespace myr::service;
using namespace std::chrono_literals;

namespace {
ChildSettings sh(const std::string& script, Duration stop_timeout = 2s) {
    ChildSettings s;
    s.command = {"/bin/sh", "-c", script};
    s.stop_timeout = stop_timeout;
    s.restart = {Duration(50), 3, 1min};
    return s;
}
}  // namespace

TEST_CASE("child service: stop on purpose ends the child and nothing restarts it") {
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        ChildService child(reaper, sched, sh("exec sleep 30"));
        bool started = false;
        child.start([&](Status st) { started = st.ok(); });
        CHECK(loop.run_until([&] { return started; }, 5s));
        CHECK(child.state() == State::running);
        bool stopped = false;
        child.stop([&](Status st) { stopped = st.ok(); });
        CHECK(child.state() == State::stopping);
        CHECK(loop.run_until([&] { return stopped; }, 10s));
        CHECK(child.state() == State::stopped);
        loop.run_until([] { return false; }, Duration(300));
        CHECK(child.state() == State::stopped);
        CHECK(child.starts() == 1);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("child service: an unexpected end restarts, and the crash loop gives up") {
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        ChildService child(reaper, sched, sh("exit 3"));
        std::string reason;
        child.on_give_up([&](const std::string& r) { reason = r; });
        child.start([](Status) {});
        CHECK(loop.run_until([&] { return !reason.empty(); }, 10s));
        CHECK(child.starts() == 4);  // the first start and 3 restarts, then the 4th end gives up
        CHECK(child.state() == State::stopped);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("child service: a child ignoring TERM is killed after stopTimeout") {
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        ChildService child(reaper, sched,
                           sh("trap '' TERM; while :; do sleep 0.05; done", Duration(300)));
        bool started = false;
        child.start([&](Status st) { started = st.ok(); });
        REQUIRE(loop.run_until([&] { return started; }, 5s));
        loop.run_until([] { return false; }, Duration(200));  // let the trap be set
        bool stopped = false;
        child.stop([&](Status) { stopped = true; });
        CHECK(loop.run_until([&] { return stopped; }, 10s));
        CHECK(child.state() == State::stopped);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("child service: start during backoff starts at once; environment is ours") {
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        auto s = sh("exit 1");
        s.restart.restart_delay = 60s;
        ChildService child(reaper, sched, s);
        child.start([](Status) {});
        CHECK(loop.run_until([&] { return child.state() == State::starting; }, 5s));
        CHECK(child.describe().find("restarting in") != std::string::npos);
        child.start([](Status) {});
        CHECK(child.starts() == 2);
        CHECK_FALSE(child.environment().empty());
        bool stopped = false;
        child.stop([&](Status) { stopped = true; });
        CHECK(loop.run_until([&] { return stopped; }, 5s));
    }
    CHECK(loop.close() == 0);
}
