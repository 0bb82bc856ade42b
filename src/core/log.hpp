// One line per event on stderr: logfmt by default (`ts=… level=info msg="child started" pid=42`),
// or JSON objects with log.format: json. Each line goes out in a single write(2) so it never
// interleaves with the child's output, which shares our stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace myr::log {

enum class Level { debug, info, warn, error };
enum class Format { text, json };

void configure(Level level, Format format);
Level level();
bool enabled(Level level);

// A key=value pair of a log line. Integers stay unquoted in JSON.
struct Field {
    Field(std::string_view k, std::string_view v) : key(k), value(v) {}
    Field(std::string_view k, const std::string& v) : key(k), value(v) {}
    Field(std::string_view k, const char* v) : key(k), value(v ? v : "") {}
    Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false"), raw(true) {}
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    Field(std::string_view k, I v) : key(k), value(std::to_string(v)), raw(true) {}
    Field(std::string_view k, double v);

    std::string_view key;
    std::string value;
    bool raw = false;  // a number or boolean: no quotes in JSON
};

// Writes one line, unless the rate limit holds it back: identical lines (same level and message,
// whatever the fields) past kBurst within kWindow are counted, not written, and once the window
// ends one line says how many were suppressed (written with the next line logged, as there is no
// timer here). A server flood or a HUP storm then costs a few lines, not 100,000.
void write(Level level, std::string_view msg, std::initializer_list<Field> fields = {});
// As write(), with the limit counted per (level, message, key): for a fixed message whose subject
// varies, so that one subject's lines do not use up another's (the installer's state changes,
// keyed by the offer: a second install within the window is logged in full).
void write_keyed(Level level, std::string_view msg, std::string_view key,
                 std::initializer_list<Field> fields = {});

inline constexpr size_t kBurst = 10;
inline constexpr std::chrono::seconds kWindow{10};

// The rate limit, on an explicit clock so it can be tested.
class RateLimiter {
  public:
    using Time = std::chrono::steady_clock::time_point;
    struct Summary {
        Level level;
        std::string msg;
        uint64_t suppressed;
    };
    // Whether a line may be written now.
    bool admit(Level level, std::string_view msg, Time now);
    // Windows that ended with lines suppressed (each reported once).
    std::vector<Summary> due(Time now);

  private:
    struct Window {
        Time start;
        size_t written = 0;
        uint64_t suppressed = 0;
    };
    // Bounded: past kMaxKeys distinct messages in one window, lines are written unlimited.
    static constexpr size_t kMaxKeys = 256;
    std::map<std::pair<Level, std::string>, Window> windows_;
};

// Renders a line without writing it (tests, and the writer itself). No trailing newline.
std::string render(Format format, std::string_view ts, Level level, std::string_view msg,
                   std::initializer_list<Field> fields);

inline void debug(std::string_view msg, std::initializer_list<Field> f = {}) {
    write(Level::debug, msg, f);
}
inline void info(std::string_view msg, std::initializer_list<Field> f = {}) {
    write(Level::info, msg, f);
}
inline void warn(std::string_view msg, std::initializer_list<Field> f = {}) {
    write(Level::warn, msg, f);
}
inline void error(std::string_view msg, std::initializer_list<Field> f = {}) {
    write(Level::error, msg, f);
}

}  // namespace myr::log
