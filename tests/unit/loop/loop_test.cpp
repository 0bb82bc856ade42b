#include "loop/loop.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>

using namespace myr;
using namespace std::chrono_literals;

TEST_CASE("loop: a one-shot timer fires once and the loop closes cleanly") {
    loop::Loop loop;
    int fired = 0;
    {
        loop::Timer t(loop);
        t.start(Duration(5), [&] { ++fired; });
        CHECK(t.active());
        CHECK(loop.run_until([&] { return fired > 0; }, 5s));
        CHECK_FALSE(t.active());
    }
    CHECK(fired == 1);
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: a repeating timer fires until stopped and reports the time left") {
    loop::Loop loop;
    int fired = 0;
    {
        loop::Timer t(loop);
        t.start(
            Duration(1), [&] { ++fired; }, Duration(1));
        CHECK(loop.run_until([&] { return fired >= 3; }, 5s));
        t.stop();
        CHECK(t.remaining() == Duration(0));
        t.start(Duration(60'000), [] {});
        CHECK(t.remaining() > Duration(50'000));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: a timer destroyed from inside its own callback is freed after close") {
    loop::Loop loop;
    auto t = std::make_unique<loop::Timer>(loop);
    bool fired = false;
    t->start(Duration(1), [&] {
        fired = true;
        t.reset();
    });
    CHECK(loop.run_until([&] { return fired; }, 5s));
    CHECK(t == nullptr);
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: a signal watcher turns a signal into a loop event") {
    loop::Loop loop;
    int got = 0;
    {
        loop::SignalWatcher w(loop);
        REQUIRE(w.start(SIGUSR2, [&](int s) { got = s; }));
        ::kill(::getpid(), SIGUSR2);
        CHECK(loop.run_until([&] { return got != 0; }, 5s));
    }
    CHECK(got == SIGUSR2);
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: post_work runs the job off the loop thread and completes on it") {
    loop::Loop loop;
    auto loop_thread = std::this_thread::get_id();
    std::thread::id work_thread;
    bool done = false;
    bool done_on_loop = false;
    loop::post_work(
        loop, [&] { work_thread = std::this_thread::get_id(); },
        [&](bool cancelled) {
            CHECK_FALSE(cancelled);
            done = true;
            done_on_loop = std::this_thread::get_id() == loop_thread;
        });
    CHECK(loop.run_until([&] { return done; }, 5s));
    CHECK(done_on_loop);
    CHECK(work_thread != loop_thread);
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: close() closes handles left open and still ends at zero") {
    loop::Loop loop;
    auto* raw = new uv_timer_t;
    uv_timer_init(loop.get(), raw);
    uv_timer_start(
        raw, [](uv_timer_t*) {}, 100000, 0);
    CHECK(loop.close() == 0);
    delete raw;
}
