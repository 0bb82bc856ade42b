// One line per event on stderr: logfmt by default (`ts=… level=info msg="child started" pid=42`),
// or JSON objects with log.format: json. Each line goes out in a single write(2) so it never
// interleaves with the child's output, which shares our stderr.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

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

void write(Level level, std::string_view msg, std::initializer_list<Field> fields = {});

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
