// Durations, clocks and time stamps. Timers and backoff take a Clock so tests can move time by
// hand.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace myr {

using Duration = std::chrono::milliseconds;
using MonoTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

class Clock {
  public:
    virtual ~Clock() = default;
    virtual MonoTime now() const = 0;
    virtual WallTime wall() const = 0;
};

// A clock that only moves when told to, for pure functions of time (the restart policy). Code on
// the loop gets its time from loop::Scheduler, whose UvScheduler is the real clock.
class FakeClock : public Clock {
  public:
    MonoTime now() const override { return mono_; }
    WallTime wall() const override { return wall_; }
    void advance(Duration d) {
        mono_ += d;
        wall_ += d;
    }

  private:
    MonoTime mono_{std::chrono::hours(1000)};
    WallTime wall_{std::chrono::seconds(1'800'000'000)};
};

WallTime wall_now();

// `t + d`, held at the clock's last (or first) representable instant instead of wrapping: a
// deadline formed from a configured or stored duration must never land in the past because the
// sum overflowed the clock's int64 nanoseconds (about 292 years from the epoch).
WallTime saturating_add(WallTime t, Duration d);
MonoTime saturating_add(MonoTime t, Duration d);

// The largest Unix time, in seconds, that a WallTime holds (2262-04-11): a stored time past it is
// not one this program wrote.
inline constexpr int64_t kMaxUnixSeconds =
    std::chrono::duration_cast<std::chrono::seconds>(WallTime::duration::max()).count();
// `unix_s` as a WallTime, held within [-kMaxUnixSeconds, kMaxUnixSeconds] (a stored or received
// number of seconds may be anything).
WallTime from_unix_seconds(int64_t unix_s);

// "2026-11-29T07:14:27Z", or with millis "2026-11-29T07:14:27.123Z". Always UTC.
std::string format_rfc3339(WallTime t, bool millis = false);
// Whole seconds since the Unix epoch (what the journal stores for a trial's deadline).
inline int64_t unix_seconds(WallTime t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}
// The form format_rfc3339 writes (UTC, "Z", optional millis) back to a time.
Result<WallTime> parse_rfc3339(std::string_view text);

// "500ms", "30s", "10m", "1h", "1h30m", "2.5s". A unit is required; the result must fit in
// int64 milliseconds. Sub-millisecond precision is refused rather than silently rounded.
Result<Duration> parse_duration(std::string_view text);
// The shortest exact form: 1500ms -> "1.5s", 600000ms -> "10m".
std::string format_duration(Duration d);

// "1024", "512B", "64KiB", "100MiB", "1GiB" (also KB/MB/GB as powers of 1000). Must fit in uint64.
Result<uint64_t> parse_size(std::string_view text);
std::string format_size(uint64_t bytes);

}  // namespace myr
