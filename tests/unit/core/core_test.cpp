#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/fault.hpp"
#include "core/log.hpp"
#include "core/result.hpp"
#include "core/time.hpp"

using namespace myr;
using namespace std::chrono_literals;

TEST_CASE("duration: units and combinations parse exactly") {
    CHECK(parse_duration("500ms").value() == 500ms);
    CHECK(parse_duration("30s").value() == 30s);
    CHECK(parse_duration("10m").value() == 10min);
    CHECK(parse_duration("1h").value() == 1h);
    CHECK(parse_duration("1h30m").value() == 90min);
    CHECK(parse_duration("2.5s").value() == 2500ms);
    CHECK(parse_duration("0s").value() == 0ms);
    CHECK(parse_duration("-5s").value() == -5000ms);
}

TEST_CASE("duration: bad input names the problem") {
    CHECK(parse_duration("").error().message().find("empty") != std::string::npos);
    CHECK(parse_duration("30").error().message().find("needs a unit") != std::string::npos);
    CHECK(parse_duration("5 minutes").error().message().find("unknown unit") != std::string::npos);
    CHECK(parse_duration("five").error().message().find("expected a number") != std::string::npos);
    CHECK(parse_duration("1.0001ms").error().message().find("more precise") != std::string::npos);
    CHECK(parse_duration("99999999999999999999h").error().message().find("too large") !=
          std::string::npos);
    CHECK(parse_duration("2562047788015216h").error().message().find("too large") !=
          std::string::npos);
    CHECK_FALSE(parse_duration("s").ok());
    CHECK_FALSE(parse_duration("-").ok());
    CHECK_FALSE(parse_duration(".s").ok());
}

TEST_CASE("duration: formatting round-trips") {
    for (auto d : {0ms, 1ms, 999ms, 1000ms, 1500ms, 60000ms, 600000ms, 3600000ms, 5400000ms}) {
        auto back = parse_duration(format_duration(d));
        REQUIRE(back.ok());
        CHECK(back.value() == d);
    }
    CHECK(format_duration(1500ms) == "1.5s");
    CHECK(format_duration(10min) == "10m");
}

TEST_CASE("size: binary and decimal units, overflow refused") {
    CHECK(parse_size("1024").value() == 1024);
    CHECK(parse_size("512B").value() == 512);
    CHECK(parse_size("64KiB").value() == 64 * 1024);
    CHECK(parse_size("1GiB").value() == (1ULL << 30));
    CHECK(parse_size("1MB").value() == 1000000);
    CHECK_FALSE(parse_size("-1").ok());
    CHECK_FALSE(parse_size("1.5GiB").ok());
    CHECK(parse_size("99999999999GiB").error().message().find("too large") != std::string::npos);
    CHECK(parse_size("18446744073709551616").error().message().find("too large") !=
          std::string::npos);
    CHECK(format_size(1ULL << 30) == "1GiB");
    CHECK(format_size(1000) == "1000B");
}

TEST_CASE("rfc3339: UTC with optional millis") {
    WallTime t{std::chrono::milliseconds(1'700'000'000'123LL)};
    CHECK(format_rfc3339(t) == "2023-11-14T22:13:20Z");
    CHECK(format_rfc3339(t, true) == "2023-11-14T22:13:20.123Z");
    // Read back: what format_rfc3339 writes, nothing else.
    CHECK(parse_rfc3339("2023-11-14T22:13:20.123Z").value() == t);
    CHECK(parse_rfc3339("2023-11-14T22:13:20Z").value() ==
          WallTime{std::chrono::seconds(1'700'000'000)});
    for (const char* bad : {"", "t", "2023-11-14T22:13:20", "2023-11-14T22:13:20+01:00",
                            "2023-11-14 22:13:20Z", "2023-11-14T22:13:20.12Z"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_rfc3339(bad).ok());
    }
}

TEST_CASE("log: logfmt quotes what needs it, JSON escapes control characters") {
    std::string text = log::render(log::Format::text, "T", log::Level::info, "child started",
                                   {{"pid", 42}, {"path", "/a b"}, {"ok", true}});
    CHECK(text == "ts=T level=info msg=\"child started\" pid=42 path=\"/a b\" ok=true");
    std::string json =
        log::render(log::Format::json, "T", log::Level::warn, "x\ny", {{"n", 7}, {"s", "q\"\x01"}});
    CHECK(json ==
          "{\"ts\":\"T\",\"level\":\"warn\",\"msg\":\"x\\ny\",\"n\":7,\"s\":\"q\\\"\\u0001\"}");
}

TEST_CASE("result: context is prefixed layer by layer") {
    auto inner = []() -> Status { return fail_errno("write", ENOSPC); };
    auto outer = [&]() -> Status {
        MYR_TRY(inner(), "copy to staging");
        return {};
    };
    Status s = outer();
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message() == "copy to staging: write: No space left on device");
    CHECK(s.error().sys_errno() == ENOSPC);
    Result<int> r = 5;
    CHECK(r.ok());
    CHECK(*r == 5);
}

TEST_CASE("fault: a named point fails on the chosen pass only") {
    ::setenv("MYRIARCH_FAULT", "a.b:fail@2,c:fail", 1);
    fault::reload();
#ifdef MYR_FAULT_INJECTION
    CHECK(fault::point("a.b").ok());
    CHECK_FALSE(fault::point("a.b").ok());
    CHECK(fault::point("a.b").ok());
    CHECK_FALSE(fault::point("c").ok());
    CHECK(fault::point("d").ok());
#else
    CHECK(fault::point("c").ok());
#endif
    ::unsetenv("MYRIARCH_FAULT");
    fault::reload();
    CHECK(fault::point("c").ok());
}

TEST_CASE("fault: term sends SIGTERM to the process and the step goes on") {
    // Blocked, the signal stays pending where the test can see it instead of ending the run.
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    REQUIRE(::sigprocmask(SIG_BLOCK, &term, &old) == 0);
    ::setenv("MYRIARCH_FAULT", "t.x:term@2", 1);
    fault::reload();
    sigset_t pending;
    CHECK(fault::point("t.x").ok());
    sigpending(&pending);
    CHECK_FALSE(sigismember(&pending, SIGTERM));
    CHECK(fault::point("t.x").ok());
    sigpending(&pending);
#ifdef MYR_FAULT_INJECTION
    CHECK(sigismember(&pending, SIGTERM));
    const timespec none{0, 0};
    CHECK(::sigtimedwait(&term, nullptr, &none) == SIGTERM);
#else
    CHECK_FALSE(sigismember(&pending, SIGTERM));
#endif
    ::unsetenv("MYRIARCH_FAULT");
    fault::reload();
    REQUIRE(::sigprocmask(SIG_SETMASK, &old, nullptr) == 0);
}

TEST_CASE("fake clock moves only when told") {
    FakeClock c;
    auto t0 = c.now();
    c.advance(5s);
    CHECK(c.now() - t0 == 5s);
}

TEST_CASE("log: identical lines past the burst are counted and summarised once") {
    log::RateLimiter rl;
    const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
    size_t written = 0;
    for (int i = 0; i < 100'000; ++i) written += rl.admit(log::Level::warn, "empty message", t0);
    CHECK(written == log::kBurst);
    CHECK(rl.admit(log::Level::warn, "another message", t0));  // counted per message
    CHECK(rl.admit(log::Level::info, "empty message", t0));    // and per level
    CHECK(rl.due(t0 + log::kWindow - std::chrono::milliseconds(1)).empty());
    auto due = rl.due(t0 + log::kWindow);
    REQUIRE(due.size() == 1);
    CHECK(due[0].msg == "empty message");
    CHECK(due[0].suppressed == 100'000 - log::kBurst);
    CHECK(rl.due(t0 + 2 * log::kWindow).empty());                           // reported once
    CHECK(rl.admit(log::Level::warn, "empty message", t0 + log::kWindow));  // a new window
}

TEST_CASE("log: a keyed line counts against its own key, not the message's other keys") {
    log::RateLimiter rl;
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < log::kBurst; ++i)
        CHECK(rl.admit(log::Level::info,
                       "m\x1f"
                       "a",
                       t0));
    CHECK_FALSE(rl.admit(log::Level::info,
                         "m\x1f"
                         "a",
                         t0));
    CHECK(rl.admit(log::Level::info,
                   "m\x1f"
                   "b",
                   t0));
    CHECK(rl.admit(log::Level::info, "m", t0));
}

TEST_CASE("log: a flood of one warning writes a handful of lines, not one each") {
    // stderr goes to a file for the length of the flood.
    char path[] = "/tmp/myr-log-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    const int saved = dup(STDERR_FILENO);
    REQUIRE(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
    for (int i = 0; i < 100'000; ++i) {
        log::warn("ignoring undecodable OpAMP message (flood test)", {{"bytes", i}});
    }
    dup2(saved, STDERR_FILENO);
    close(saved);
    std::string text(static_cast<size_t>(lseek(fd, 0, SEEK_END)), '\0');
    REQUIRE(pread(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()));
    close(fd);
    unlink(path);
    const auto lines = std::count(text.begin(), text.end(), '\n');
    CHECK(lines == static_cast<long>(log::kBurst));  // once 100,000
}

TEST_CASE("time: saturating_add holds a deadline at the clock's end instead of wrapping") {
    const WallTime now = WallTime(std::chrono::seconds(1'800'000'000));
    CHECK(saturating_add(now, std::chrono::hours(1)) == now + std::chrono::hours(1));
    // 2562047 h is past int64 nanoseconds from 2027: `now + d` would wrap into the past.
    CHECK(saturating_add(now, std::chrono::hours(2562047)) == WallTime::max());
    CHECK(saturating_add(now, Duration::max()) == WallTime::max());
    CHECK(saturating_add(now, Duration::min()) == WallTime::min());
    const MonoTime m = MonoTime(std::chrono::hours(1000));
    CHECK(saturating_add(m, Duration::max()) == MonoTime::max());
    CHECK(saturating_add(m, -std::chrono::hours(1)) == m - std::chrono::hours(1));
    CHECK(unix_seconds(from_unix_seconds(1'800'000'000)) == 1'800'000'000);
    CHECK(from_unix_seconds(INT64_MAX) == from_unix_seconds(kMaxUnixSeconds));
    CHECK(format_rfc3339(from_unix_seconds(INT64_MAX)) == "2262-04-11T23:47:16Z");
    CHECK(from_unix_seconds(INT64_MIN) == from_unix_seconds(-kMaxUnixSeconds));
}
