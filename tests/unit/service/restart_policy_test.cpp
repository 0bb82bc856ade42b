#include "service/restart_policy.hpp"

#include <doctest/doctest.h>

#include <vector>

using namespace myr;
using namespace myr::service;
using namespace std::chrono_literals;

namespace {
RestartSettings settings(Duration delay, uint32_t max, Duration window) {
    return RestartSettings{delay, max, window};
}
}  // namespace

TEST_CASE("restart policy: the delay starts at restartDelay and doubles up to 60s") {
    FakeClock clock;
    RestartPolicy p(settings(2s, 100, 10min), clock);
    std::vector<Duration> got;
    for (int i = 0; i < 8; ++i) {
        p.started();
        clock.advance(1s);
        auto d = p.ended_unexpectedly();
        REQUIRE_FALSE(d.give_up);
        got.push_back(d.delay);
        clock.advance(d.delay);
    }
    std::vector<Duration> want{2s, 4s, 8s, 16s, 32s, 60s, 60s, 60s};
    CHECK(got == want);
}

TEST_CASE("restart policy: a child that ran at least 60s resets the delay") {
    FakeClock clock;
    RestartPolicy p(settings(1s, 100, 10min), clock);
    for (int i = 0; i < 4; ++i) {
        p.started();
        clock.advance(1s);
        (void)p.ended_unexpectedly();
    }
    CHECK(p.next_delay() == 16s);
    p.started();
    clock.advance(59s);
    CHECK(p.ended_unexpectedly().delay == 16s);  // 59 s is not stable yet
    p.started();
    clock.advance(60s);
    CHECK(p.ended_unexpectedly().delay == 1s);
    CHECK(p.next_delay() == 2s);
}

TEST_CASE("restart policy: more than maxRestarts ends within the window give up") {
    FakeClock clock;
    RestartPolicy p(settings(1s, 3, 1min), clock);
    for (int i = 1; i <= 3; ++i) {
        p.started();
        clock.advance(1s);
        auto d = p.ended_unexpectedly();
        CHECK_FALSE(d.give_up);
        CHECK(d.recent_ends == static_cast<uint32_t>(i));
    }
    p.started();
    clock.advance(1s);
    auto d = p.ended_unexpectedly();
    CHECK(d.give_up);
    CHECK(d.recent_ends == 4);
    CHECK(d.reason.find("maxRestarts 3") != std::string::npos);
}

TEST_CASE("restart policy: ends older than the window no longer count") {
    FakeClock clock;
    RestartPolicy p(settings(1s, 2, 1min), clock);
    for (int i = 0; i < 2; ++i) {
        p.started();
        clock.advance(1s);
        CHECK_FALSE(p.ended_unexpectedly().give_up);
    }
    clock.advance(2min);
    p.started();
    clock.advance(1s);
    auto d = p.ended_unexpectedly();
    CHECK_FALSE(d.give_up);
    CHECK(d.recent_ends == 1);
}

TEST_CASE("restart policy: a restartDelay above 60s is not shortened by the cap") {
    FakeClock clock;
    RestartPolicy p(settings(90s, 10, 1h), clock);
    p.started();
    CHECK(p.ended_unexpectedly().delay == 90s);
    p.started();
    CHECK(p.ended_unexpectedly().delay == 90s);
}

TEST_CASE("restart policy: reset forgets the ends and the grown delay") {
    FakeClock clock;
    RestartPolicy p(settings(1s, 2, 10min), clock);
    for (int i = 0; i < 2; ++i) {
        p.started();
        clock.advance(1s);
        CHECK_FALSE(p.ended_unexpectedly().give_up);
    }
    CHECK(p.next_delay() == 4s);
    p.reset();
    CHECK(p.next_delay() == 1s);
    for (uint32_t i = 1; i <= 2; ++i) {
        p.started();
        clock.advance(1s);
        auto d = p.ended_unexpectedly();
        CHECK_FALSE(d.give_up);
        CHECK(d.recent_ends == i);
    }
    p.started();
    clock.advance(1s);
    CHECK(p.ended_unexpectedly().give_up);
}
