#include "loop/fake_scheduler.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace myr;
using namespace std::chrono_literals;

TEST_CASE("fake scheduler: timers fire at their due time, earliest first, ties in arming order") {
    loop::FakeScheduler s;
    const MonoTime t0 = s.now();
    std::vector<std::string> seen;
    auto a = s.timer();
    auto b = s.timer();
    auto c = s.timer();
    a->start(30s, [&] { seen.push_back("a@" + std::to_string((s.now() - t0) / 1s)); });
    b->start(10s, [&] { seen.push_back("b@" + std::to_string((s.now() - t0) / 1s)); });
    c->start(10s, [&] { seen.push_back("c@" + std::to_string((s.now() - t0) / 1s)); });
    CHECK(s.next_due() == Duration(10s));
    s.advance(9s);
    CHECK(seen.empty());
    s.advance(1min);
    CHECK(seen == std::vector<std::string>{"b@10", "c@10", "a@30"});
    CHECK(s.now() - t0 == 69s);
    CHECK(s.armed_timers() == 0);
}

TEST_CASE("fake scheduler: a repeating timer fires once per period until stopped") {
    loop::FakeScheduler s;
    int n = 0;
    auto t = s.timer();
    t->start_repeating(1s, [&] {
        if (++n == 3) t->stop();
    });
    s.advance(10s);
    CHECK(n == 3);
    CHECK_FALSE(t->active());
}

TEST_CASE("fake scheduler: destroying or re-arming a timer inside its callback is safe") {
    loop::FakeScheduler s;
    int fired = 0;
    auto t = s.timer();
    t->start(1s, [&] {
        ++fired;
        t->start(5s, [&] {
            ++fired;
            t.reset();
        });
    });
    CHECK(t->remaining() == Duration(1s));
    s.advance(3s);
    CHECK(fired == 1);
    CHECK(t->remaining() == Duration(3s));
    s.advance(10s);
    CHECK(fired == 2);
    CHECK(t == nullptr);
}

TEST_CASE("fake scheduler: a destroyed timer never fires") {
    loop::FakeScheduler s;
    bool fired = false;
    s.timer()->start(1s, [&] { fired = true; });
    s.advance(1h);
    CHECK_FALSE(fired);
}

TEST_CASE(
    "fake scheduler: posts wait for run_pending, and what a timer posts runs before the next") {
    loop::FakeScheduler s;
    std::vector<int> order;
    s.post([&] { order.push_back(1); });
    CHECK(order.empty());
    CHECK(s.posted() == 1);
    auto a = s.timer();
    auto b = s.timer();
    a->start(1s, [&] {
        order.push_back(2);
        s.post([&] { order.push_back(3); });
    });
    b->start(2s, [&] { order.push_back(4); });
    s.advance(5s);
    CHECK(order == std::vector<int>{1, 2, 3, 4});
}

TEST_CASE("fake scheduler: work runs on run_pending, or is cancelled like at a shutdown") {
    loop::FakeScheduler s;
    int work = 0;
    std::vector<bool> done;
    s.post_work([&] { ++work; }, [&](bool c) { done.push_back(c); });
    CHECK(s.queued_work() == 1);
    CHECK(s.run_pending() == 1);
    CHECK(work == 1);
    s.post_work([&] { ++work; }, [&](bool c) { done.push_back(c); });
    s.cancel_work();
    CHECK(work == 1);
    CHECK(done == std::vector<bool>{false, true});
}

TEST_CASE("fake scheduler: wall time moves with monotonic time") {
    loop::FakeScheduler s;
    WallTime w0 = s.wall();
    s.advance(90s);
    CHECK(s.wall() - w0 == 90s);
}
