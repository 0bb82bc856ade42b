#include "core/time.hpp"

#include <algorithm>
#include <ctime>
#include <limits>

namespace myr {
namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// Multiplies with overflow checking.
bool mul_ok(uint64_t a, uint64_t b, uint64_t& out) {
    return !__builtin_mul_overflow(a, b, &out);
}
bool add_ok(uint64_t a, uint64_t b, uint64_t& out) {
    return !__builtin_add_overflow(a, b, &out);
}

template <class TimePoint>
TimePoint saturate(TimePoint t, Duration d) {
    using Rep = typename TimePoint::duration;
    // The duration in the clock's own unit first (milliseconds to nanoseconds may overflow on
    // its own), then the sum; either overflow holds the result at the end it ran past.
    const auto limit = [&] { return d.count() < 0 ? TimePoint::min() : TimePoint::max(); };
    typename Rep::rep ticks = 0;
    constexpr auto ratio = std::chrono::duration_cast<Rep>(Duration(1)).count();
    if (__builtin_mul_overflow(d.count(), ratio, &ticks)) return limit();
    typename Rep::rep sum = 0;
    if (__builtin_add_overflow(t.time_since_epoch().count(), ticks, &sum)) return limit();
    return TimePoint(Rep(sum));
}

}  // namespace

WallTime saturating_add(WallTime t, Duration d) {
    return saturate(t, d);
}

MonoTime saturating_add(MonoTime t, Duration d) {
    return saturate(t, d);
}

WallTime from_unix_seconds(int64_t unix_s) {
    const int64_t s = std::clamp(unix_s, -kMaxUnixSeconds, kMaxUnixSeconds);
    return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::seconds(s)));
}

WallTime wall_now() {
    return std::chrono::system_clock::now();
}

std::string format_rfc3339(WallTime t, bool millis) {
    using namespace std::chrono;
    auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
    time_t secs = static_cast<time_t>(ms / 1000);
    long frac = static_cast<long>(ms % 1000);
    if (frac < 0) {
        frac += 1000;
        secs -= 1;
    }
    struct tm tm {};
    gmtime_r(&secs, &tm);
    char buf[48];
    size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    std::string out(buf, n);
    if (millis) {
        char f[8];
        snprintf(f, sizeof f, ".%03ld", frac);
        out += f;
    }
    out += 'Z';
    return out;
}

Result<WallTime> parse_rfc3339(std::string_view text) {
    // "YYYY-MM-DDTHH:MM:SSZ" or with ".mmm" before the Z: exactly what format_rfc3339 writes.
    const std::string s(text);
    auto bad = [&] { return fail(Errc::invalid, "not an RFC 3339 UTC time: \"" + s + "\""); };
    if (s.size() != 20 && s.size() != 24) return bad();
    struct tm tm {};
    const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == nullptr || end != s.c_str() + 19) return bad();
    long millis = 0;
    if (s.size() == 24) {
        if (s[19] != '.' || !is_digit(s[20]) || !is_digit(s[21]) || !is_digit(s[22])) return bad();
        millis = (s[20] - '0') * 100 + (s[21] - '0') * 10 + (s[22] - '0');
    }
    if (s.back() != 'Z') return bad();
    const time_t secs = timegm(&tm);
    return WallTime{} + std::chrono::seconds(secs) + std::chrono::milliseconds(millis);
}

Result<Duration> parse_duration(std::string_view text) {
    if (text.empty()) return fail("empty duration (expected e.g. 500ms, 30s, 10m, 1h)");
    // Work in microseconds so "1.5ms" can be detected as sub-millisecond and refused.
    uint64_t total_us = 0;
    size_t i = 0;
    bool negative = false;
    if (text[0] == '-') {
        negative = true;
        i = 1;
    } else if (text[0] == '+') {
        i = 1;
    }
    if (i >= text.size()) return fail("invalid duration \"" + std::string(text) + "\"");
    while (i < text.size()) {
        if (!is_digit(text[i]) && text[i] != '.') {
            return fail("invalid duration \"" + std::string(text) + "\": expected a number");
        }
        uint64_t whole = 0;
        size_t digits = 0;
        while (i < text.size() && is_digit(text[i])) {
            if (!mul_ok(whole, 10, whole) || !add_ok(whole, uint64_t(text[i] - '0'), whole)) {
                return fail("duration \"" + std::string(text) + "\" is too large");
            }
            ++i;
            ++digits;
        }
        // Fraction, kept to 6 digits (microseconds); more digits must be zero.
        uint64_t frac = 0, frac_scale = 1;
        if (i < text.size() && text[i] == '.') {
            ++i;
            size_t fdigits = 0;
            while (i < text.size() && is_digit(text[i])) {
                if (fdigits < 6) {
                    frac = frac * 10 + uint64_t(text[i] - '0');
                    frac_scale *= 10;
                } else if (text[i] != '0') {
                    return fail("duration \"" + std::string(text) + "\" is more precise than 1ms");
                }
                ++i;
                ++fdigits;
            }
            if (fdigits == 0 && digits == 0) {
                return fail("invalid duration \"" + std::string(text) + "\"");
            }
        } else if (digits == 0) {
            return fail("invalid duration \"" + std::string(text) + "\"");
        }
        size_t unit_start = i;
        while (i < text.size() && !is_digit(text[i]) && text[i] != '.') ++i;
        std::string_view unit = text.substr(unit_start, i - unit_start);
        uint64_t unit_us;
        if (unit == "ms") {
            unit_us = 1000;
        } else if (unit == "s") {
            unit_us = 1000'000;
        } else if (unit == "m") {
            unit_us = 60'000'000;
        } else if (unit == "h") {
            unit_us = 3'600'000'000ULL;
        } else if (unit.empty()) {
            return fail("duration \"" + std::string(text) +
                        "\" needs a unit (ms, s, m or h), e.g. \"30s\"");
        } else {
            return fail("duration \"" + std::string(text) + "\" has unknown unit \"" +
                        std::string(unit) + "\" (use ms, s, m or h)");
        }
        uint64_t part;
        if (!mul_ok(whole, unit_us, part) || !add_ok(total_us, part, total_us)) {
            return fail("duration \"" + std::string(text) + "\" is too large");
        }
        // frac/frac_scale of a unit, in microseconds; unit_us is divisible by any frac_scale <= 1e6
        // except for ms (1000 us): handle by multiplying first, which cannot overflow here.
        uint64_t frac_us = frac * unit_us / frac_scale;
        if (frac * unit_us % frac_scale != 0) {
            return fail("duration \"" + std::string(text) + "\" is more precise than 1ms");
        }
        if (!add_ok(total_us, frac_us, total_us)) {
            return fail("duration \"" + std::string(text) + "\" is too large");
        }
    }
    if (total_us % 1000 != 0) {
        return fail("duration \"" + std::string(text) + "\" is more precise than 1ms");
    }
    uint64_t ms = total_us / 1000;
    if (ms > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return fail("duration \"" + std::string(text) + "\" is too large");
    }
    int64_t v = static_cast<int64_t>(ms);
    return Duration(negative ? -v : v);
}

std::string format_duration(Duration d) {
    int64_t ms = d.count();
    if (ms == 0) return "0s";
    std::string sign;
    uint64_t u;
    if (ms < 0) {
        sign = "-";
        u = static_cast<uint64_t>(-(ms + 1)) + 1;
    } else {
        u = static_cast<uint64_t>(ms);
    }
    if (u % 3'600'000 == 0) return sign + std::to_string(u / 3'600'000) + "h";
    if (u % 60'000 == 0) return sign + std::to_string(u / 60'000) + "m";
    if (u % 1000 == 0) return sign + std::to_string(u / 1000) + "s";
    if (u < 1000) return sign + std::to_string(u) + "ms";
    std::string frac = std::to_string(u % 1000);
    frac.insert(0, 3 - frac.size(), '0');
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    return sign + std::to_string(u / 1000) + "." + frac + "s";
}

Result<uint64_t> parse_size(std::string_view text) {
    if (text.empty()) return fail("empty size (expected e.g. 512MiB, 1GiB)");
    size_t i = 0;
    uint64_t n = 0;
    while (i < text.size() && is_digit(text[i])) {
        if (!mul_ok(n, 10, n) || !add_ok(n, uint64_t(text[i] - '0'), n)) {
            return fail("size \"" + std::string(text) + "\" is too large");
        }
        ++i;
    }
    if (i == 0) return fail("invalid size \"" + std::string(text) + "\": expected a whole number");
    std::string_view unit = text.substr(i);
    uint64_t mult;
    if (unit.empty() || unit == "B") {
        mult = 1;
    } else if (unit == "KiB") {
        mult = 1ULL << 10;
    } else if (unit == "MiB") {
        mult = 1ULL << 20;
    } else if (unit == "GiB") {
        mult = 1ULL << 30;
    } else if (unit == "TiB") {
        mult = 1ULL << 40;
    } else if (unit == "KB" || unit == "kB") {
        mult = 1000;
    } else if (unit == "MB") {
        mult = 1000'000;
    } else if (unit == "GB") {
        mult = 1000'000'000;
    } else {
        return fail("size \"" + std::string(text) + "\" has unknown unit \"" + std::string(unit) +
                    "\" (use B, KiB, MiB, GiB)");
    }
    uint64_t out;
    if (!mul_ok(n, mult, out)) return fail("size \"" + std::string(text) + "\" is too large");
    return out;
}

std::string format_size(uint64_t b) {
    if (b != 0 && b % (1ULL << 40) == 0) return std::to_string(b >> 40) + "TiB";
    if (b != 0 && b % (1ULL << 30) == 0) return std::to_string(b >> 30) + "GiB";
    if (b != 0 && b % (1ULL << 20) == 0) return std::to_string(b >> 20) + "MiB";
    if (b != 0 && b % (1ULL << 10) == 0) return std::to_string(b >> 10) + "KiB";
    return std::to_string(b) + "B";
}

}  // namespace myr
