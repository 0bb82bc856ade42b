#include "net/http_response.hpp"

#include <llhttp.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "core/text.hpp"

namespace myr::net {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace

std::optional<std::string_view> HttpHead::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (text::iequals(k, name)) return std::string_view(v);
    }
    return std::nullopt;
}

bool HttpHead::header_has_token(std::string_view name, std::string_view token) const {
    for (const auto& [k, v] : headers) {
        if (!text::iequals(k, name)) continue;
        std::string_view rest = v;
        while (!rest.empty()) {
            const size_t comma = rest.find(',');
            if (text::iequals(trim(rest.substr(0, comma)), token)) return true;
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
    }
    return false;
}

struct ResponseParser::State {
    llhttp_t parser;
    llhttp_settings_t settings;
    HttpLimits limits;
    Handlers handlers;
    bool stop_at_upgrade = false;
    bool head_request = false;
    HttpHead head;
    std::string field;
    std::string value;
    bool in_value = false;
    size_t head_bytes = 0;
    uint64_t body_bytes = 0;
    bool head_done = false;
    bool complete = false;
    std::optional<Error> error;  // why a callback stopped the parser

    static State* of(llhttp_t* p) { return static_cast<State*>(p->data); }

    // Counts bytes of the head; true when over the cap.
    bool add_head(size_t n) {
        head_bytes += n;
        if (head_bytes <= limits.max_head) return false;
        error = Error("response head larger than " + std::to_string(limits.max_head) + " bytes");
        return true;
    }
    void push_header() {
        if (!field.empty() || !value.empty()) {
            head.headers.emplace_back(std::move(field), std::string(trim(value)));
        }
        field.clear();
        value.clear();
        in_value = false;
    }

    static int on_message_begin(llhttp_t* p) noexcept {
        State* s = of(p);
        s->head = HttpHead{};
        s->head_bytes = 0;
        s->in_value = false;
        s->field.clear();
        s->value.clear();
        return 0;
    }
    static int on_status(llhttp_t* p, const char* at, size_t len) noexcept {
        State* s = of(p);
        if (s->add_head(len)) return -1;
        s->head.reason.append(at, len);
        return 0;
    }
    static int on_header_field(llhttp_t* p, const char* at, size_t len) noexcept {
        State* s = of(p);
        if (s->add_head(len + 4)) return -1;  // with ": " and CRLF
        if (s->in_value) s->push_header();
        s->field.append(at, len);
        return 0;
    }
    static int on_header_value(llhttp_t* p, const char* at, size_t len) noexcept {
        State* s = of(p);
        if (s->add_head(len)) return -1;
        s->in_value = true;
        s->value.append(at, len);
        return 0;
    }
    static int on_headers_complete(llhttp_t* p) noexcept {
        State* s = of(p);
        s->push_header();
        s->head.status = p->status_code;
        if (s->head.status < 100 || s->head.status > 999) {
            s->error = Error("malformed HTTP response: status " + std::to_string(s->head.status));
            return -1;
        }
        // An interim answer (100 Continue, 103 Early Hints) is skipped; the real one follows.
        if (s->head.status >= 100 && s->head.status < 200 && s->head.status != 101) return 0;
        s->head_done = true;
        if (p->content_length > s->limits.max_body && (p->flags & F_CONTENT_LENGTH) &&
            !s->head_request && s->head.status != 101) {
            s->error = Error("response body of " + std::to_string(p->content_length) +
                             " bytes exceeds the limit of " + std::to_string(s->limits.max_body));
            return -1;
        }
        if (s->handlers.on_head) {
            auto st = s->handlers.on_head(s->head);
            if (!st) {
                s->error = st.error();
                return -1;
            }
        }
        if (s->head.status == 101 && s->stop_at_upgrade) {
            s->complete = true;
            return 2;
        }
        return s->head_request ? 1 : 0;
    }
    static int on_body(llhttp_t* p, const char* at, size_t len) noexcept {
        State* s = of(p);
        s->body_bytes += len;
        if (s->body_bytes > s->limits.max_body) {
            s->error = Error("response body exceeds the limit of " +
                             std::to_string(s->limits.max_body) + " bytes");
            return -1;
        }
        if (s->handlers.on_body) {
            auto st = s->handlers.on_body(std::string_view(at, len));
            if (!st) {
                s->error = st.error();
                return -1;
            }
        }
        return 0;
    }
    static int on_message_complete(llhttp_t* p) noexcept {
        State* s = of(p);
        if (!s->head_done) return 0;  // the end of an interim answer
        s->complete = true;
        // Stop here: what follows is not part of this response.
        return HPE_PAUSED;
    }
};

ResponseParser::ResponseParser(HttpLimits limits, Handlers handlers, bool stop_at_upgrade,
                               bool head_request)
    : state_(std::make_unique<State>()) {
    State& s = *state_;
    s.limits = limits;
    s.handlers = std::move(handlers);
    s.stop_at_upgrade = stop_at_upgrade;
    s.head_request = head_request;
    llhttp_settings_init(&s.settings);
    s.settings.on_message_begin = &State::on_message_begin;
    s.settings.on_status = &State::on_status;
    s.settings.on_header_field = &State::on_header_field;
    s.settings.on_header_value = &State::on_header_value;
    s.settings.on_headers_complete = &State::on_headers_complete;
    s.settings.on_body = &State::on_body;
    s.settings.on_message_complete = &State::on_message_complete;
    llhttp_init(&s.parser, HTTP_RESPONSE, &s.settings);
    s.parser.data = &s;
}

ResponseParser::~ResponseParser() = default;

Result<size_t> ResponseParser::feed(std::string_view data) {
    State& s = *state_;
    if (s.complete) return size_t{0};
    if (s.error) return fail(*s.error);
    const llhttp_errno_t rc = llhttp_execute(&s.parser, data.data(), data.size());
    if (rc == HPE_OK) return data.size();
    if (rc == HPE_PAUSED || rc == HPE_PAUSED_UPGRADE) {
        const char* pos = llhttp_get_error_pos(&s.parser);
        if (pos == nullptr || pos < data.data()) return size_t{0};
        return static_cast<size_t>(pos - data.data());
    }
    if (!s.error) {
        const char* reason = llhttp_get_error_reason(&s.parser);
        s.error = Error(std::string("malformed HTTP response: ") +
                        (reason != nullptr ? reason : llhttp_errno_name(rc)));
    }
    return fail(*s.error);
}

Status ResponseParser::finish() {
    State& s = *state_;
    if (s.complete) return {};
    if (s.error) return fail(*s.error);
    const llhttp_errno_t rc = llhttp_finish(&s.parser);
    if (s.complete) return {};
    if (s.error) return fail(*s.error);
    if (!s.head_done) return fail("connection closed before the response head was complete");
    (void)rc;
    return fail("connection closed after " + std::to_string(s.body_bytes) +
                " body bytes, before the end of the response body");
}

bool ResponseParser::head_done() const {
    return state_->head_done;
}
bool ResponseParser::complete() const {
    return state_->complete;
}
const HttpHead& ResponseParser::head() const {
    return state_->head;
}

namespace {

int month_index(std::string_view m) {
    static constexpr const char* names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    for (int i = 0; i < 12; ++i) {
        if (m == names[i]) return i;
    }
    return -1;
}

// Seconds since the epoch; kept as time_t because a far-future date does not fit in
// system_clock's nanosecond time_point (year 2262) and would wrap to the past.
std::optional<time_t> parse_http_date(std::string_view v) {
    char wd[16] = {}, mon[4] = {}, tz[4] = {};
    int day = 0, year = 0, hh = 0, mm = 0, ss = 0;
    const std::string s(v);
    std::tm tm{};
    bool ok = false;
    if (std::sscanf(s.c_str(), "%3[A-Za-z], %2d %3s %4d %2d:%2d:%2d %3s", wd, &day, mon, &year, &hh,
                    &mm, &ss, tz) == 8) {
        ok = true;  // IMF-fixdate
    } else if (std::sscanf(s.c_str(), "%15[A-Za-z], %2d-%3s-%2d %2d:%2d:%2d %3s", wd, &day, mon,
                           &year, &hh, &mm, &ss, tz) == 8) {
        year += year < 70 ? 2000 : 1900;  // RFC 850, two-digit year
        ok = true;
    } else if (std::sscanf(s.c_str(), "%3[A-Za-z] %3s %d %2d:%2d:%2d %4d", wd, mon, &day, &hh, &mm,
                           &ss, &year) == 7) {
        std::strcpy(tz, "GMT");  // asctime
        ok = true;
    }
    if (!ok || std::strcmp(tz, "GMT") != 0) return std::nullopt;
    const int m = month_index(mon);
    if (m < 0 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60 || year < 1970) {
        return std::nullopt;
    }
    tm.tm_year = year - 1900;
    tm.tm_mon = m;
    tm.tm_mday = day;
    tm.tm_hour = hh;
    tm.tm_min = mm;
    tm.tm_sec = ss;
    const time_t t = timegm(&tm);
    if (t == static_cast<time_t>(-1)) return std::nullopt;
    return t;
}

}  // namespace

std::optional<Duration> parse_retry_after(std::string_view value, WallTime now) {
    // More than a year is longer than anyone should wait; cap instead of overflowing.
    static constexpr int64_t kCapSeconds = int64_t{365} * 24 * 3600;
    const auto capped = [](int64_t secs) {
        return std::chrono::duration_cast<Duration>(
            std::chrono::seconds(std::min(secs, kCapSeconds)));
    };
    value = trim(value);
    if (value.empty()) return std::nullopt;
    if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        if (value.size() > 10) return capped(kCapSeconds);
        int64_t secs = 0;
        for (char c : value) secs = secs * 10 + (c - '0');
        return capped(secs);
    }
    auto when = parse_http_date(value);
    if (!when) return std::nullopt;
    // Compared in seconds before any conversion to a time_point, which could overflow.
    const int64_t secs = static_cast<int64_t>(*when) -
                         static_cast<int64_t>(std::chrono::system_clock::to_time_t(now));
    if (secs <= 0) return Duration::zero();
    return capped(secs);
}

}  // namespace myr::net
