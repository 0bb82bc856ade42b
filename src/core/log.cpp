#include "core/log.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <mutex>

#include "core/hex.hpp"
#include "core/time.hpp"

namespace myr::log {
namespace {

Level g_level = Level::info;
Format g_format = Format::text;

const char* level_name(Level l) {
    switch (l) {
        case Level::debug:
            return "debug";
        case Level::info:
            return "info";
        case Level::warn:
            return "warn";
        case Level::error:
            return "error";
    }
    return "?";
}

bool needs_quotes(std::string_view v) {
    if (v.empty()) return true;
    for (unsigned char c : v) {
        if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7f) return true;
    }
    return false;
}

// Escapes for both logfmt quoted values and JSON strings: the same rules serve both.
void append_escaped(std::string& out, std::string_view v) {
    for (unsigned char c : v) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    out += "\\u00";
                    hex::append(out, c);
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
}

void append_text_value(std::string& out, std::string_view v) {
    if (!needs_quotes(v)) {
        out += v;
        return;
    }
    out += '"';
    append_escaped(out, v);
    out += '"';
}

void append_json_string(std::string& out, std::string_view v) {
    out += '"';
    append_escaped(out, v);
    out += '"';
}

}  // namespace

Field::Field(std::string_view k, double v) : key(k), raw(true) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    value = buf;
}

void configure(Level level, Format format) {
    g_level = level;
    g_format = format;
}

Level level() {
    return g_level;
}

bool enabled(Level l) {
    return static_cast<int>(l) >= static_cast<int>(g_level);
}

std::string render(Format format, std::string_view ts, Level lvl, std::string_view msg,
                   std::initializer_list<Field> fields) {
    std::string out;
    out.reserve(128);
    if (format == Format::json) {
        out += "{\"ts\":";
        append_json_string(out, ts);
        out += ",\"level\":";
        append_json_string(out, level_name(lvl));
        out += ",\"msg\":";
        append_json_string(out, msg);
        for (const Field& f : fields) {
            out += ',';
            append_json_string(out, f.key);
            out += ':';
            if (f.raw) {
                out += f.value;
            } else {
                append_json_string(out, f.value);
            }
        }
        out += '}';
        return out;
    }
    out += "ts=";
    out += ts;
    out += " level=";
    out += level_name(lvl);
    out += " msg=";
    append_text_value(out, msg);
    for (const Field& f : fields) {
        out += ' ';
        out += f.key;
        out += '=';
        append_text_value(out, f.value);
    }
    return out;
}

bool RateLimiter::admit(Level level, std::string_view msg, Time now) {
    auto key = std::make_pair(level, std::string(msg));
    auto it = windows_.find(key);
    if (it == windows_.end() || now - it->second.start >= kWindow) {
        if (it == windows_.end() && windows_.size() >= kMaxKeys) return true;
        Window& w = windows_[key];
        if (w.suppressed == 0) w = Window{now, 0, 0};  // a pending summary keeps its window
        it = windows_.find(key);
    }
    Window& w = it->second;
    if (w.written < kBurst) {
        ++w.written;
        return true;
    }
    ++w.suppressed;
    return false;
}

std::vector<RateLimiter::Summary> RateLimiter::due(Time now) {
    std::vector<Summary> out;
    for (auto it = windows_.begin(); it != windows_.end();) {
        if (now - it->second.start < kWindow) {
            ++it;
            continue;
        }
        if (it->second.suppressed > 0) {
            out.push_back(Summary{it->first.first, it->first.second, it->second.suppressed});
        }
        it = windows_.erase(it);
    }
    return out;
}

namespace {

void write_line(std::string line) {
    line += '\n';
    // One write so the line stays whole next to the child's output; retry only on EINTR.
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(STDERR_FILENO, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            return;  // stderr is gone: nothing sensible left to do with a log line
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
}

}  // namespace

namespace {

// The rate limiter's key of a keyed line: the message, a separator no message holds, the key.
constexpr char kKeySep = '\x1f';

void write_limited(Level lvl, std::string_view msg, std::string_view key,
                   std::initializer_list<Field> fields) {
    if (!enabled(lvl)) return;
    // Work-queue jobs may log too.
    static std::mutex mu;
    static RateLimiter limiter;
    std::lock_guard lock(mu);
    const auto now = std::chrono::steady_clock::now();
    const std::string ts = format_rfc3339(wall_now(), true);
    for (const RateLimiter::Summary& s : limiter.due(now)) {
        const std::string_view shown = std::string_view(s.msg).substr(0, s.msg.find(kKeySep));
        write_line(render(
            g_format, ts, s.level, shown,
            {{"suppressed", s.suppressed}, {"note", "identical lines within 10s not written"}}));
    }
    const std::string limit_key =
        key.empty() ? std::string(msg) : std::string(msg) + kKeySep + std::string(key);
    if (!limiter.admit(lvl, limit_key, now)) return;
    write_line(render(g_format, ts, lvl, msg, fields));
}

}  // namespace

void write(Level lvl, std::string_view msg, std::initializer_list<Field> fields) {
    write_limited(lvl, msg, {}, fields);
}

void write_keyed(Level lvl, std::string_view msg, std::string_view key,
                 std::initializer_list<Field> fields) {
    write_limited(lvl, msg, key, fields);
}

}  // namespace myr::log
