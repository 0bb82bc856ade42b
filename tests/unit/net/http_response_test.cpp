// HTTP/1.1 response parsing: body framings, caps, the upgrade stop, Retry-After.
#include "net/http_response.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace myr;
using namespace myr::net;

namespace {

struct Parsed {
    Status status;
    HttpHead head;
    std::string body;
    size_t used = 0;
    bool complete = false;
};

// Feeds `text` in pieces of `step` bytes; `eof` then tells the parser the connection closed.
Parsed parse(const std::string& text, size_t step, bool eof, HttpLimits limits = {},
             bool upgrade = false, bool head_request = false) {
    Parsed p;
    ResponseParser::Handlers h;
    h.on_head = [&](const HttpHead& head) -> Status {
        p.head = head;
        return {};
    };
    h.on_body = [&](std::string_view piece) -> Status {
        p.body.append(piece);
        return {};
    };
    ResponseParser parser(limits, h, upgrade, head_request);
    for (size_t at = 0; at < text.size() && !parser.complete(); at += step) {
        auto r = parser.feed(std::string_view(text).substr(at, step));
        if (!r) {
            p.status = r.fail();
            return p;
        }
        p.used = at + *r;
    }
    if (eof && !parser.complete()) p.status = parser.finish();
    p.complete = parser.complete();
    return p;
}

}  // namespace

TEST_CASE("http response: Content-Length body, whole and byte by byte") {
    const std::string text =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world";
    for (size_t step : {text.size(), size_t{1}, size_t{7}}) {
        CAPTURE(step);
        Parsed p = parse(text, step, false);
        REQUIRE(p.status.ok());
        CHECK(p.complete);
        CHECK(p.head.status == 200);
        CHECK(p.head.reason == "OK");
        CHECK(p.head.header("content-type").value_or("") == "text/plain");
        CHECK(p.body == "hello world");
    }
}

TEST_CASE("http response: chunked body with extensions and trailers") {
    const std::string text =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n";
    for (size_t step : {text.size(), size_t{1}, size_t{3}}) {
        CAPTURE(step);
        Parsed p = parse(text, step, false);
        REQUIRE(p.status.ok());
        CHECK(p.complete);
        CHECK(p.body == "hello world");
    }
}

TEST_CASE("http response: a body delimited by the connection close needs the EOF") {
    const std::string text = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end";
    Parsed p = parse(text, text.size(), false);
    CHECK(!p.complete);
    p = parse(text, text.size(), true);
    REQUIRE(p.status.ok());
    CHECK(p.complete);
    CHECK(p.body == "until the end");
}

TEST_CASE("http response: a truncated Content-Length body fails at EOF") {
    Parsed p = parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", 100, true);
    CHECK(!p.status.ok());
    CHECK(p.status.error().message().find("before the end of the response body") !=
          std::string::npos);
    p = parse("HTTP/1.1 200 OK\r\nContent-Le", 100, true);
    CHECK(!p.status.ok());
    CHECK(p.status.error().message().find("response head") != std::string::npos);
}

TEST_CASE("http response: bytes after a complete response are left unused") {
    const std::string text = "HTTP/1.1 204 No Content\r\nX: y\r\n\r\nEXTRA";
    Parsed p = parse(text, text.size(), false);
    REQUIRE(p.status.ok());
    CHECK(p.complete);
    CHECK(p.used == text.size() - 5);
}

TEST_CASE("http response: 101 stops after the head when asked; the rest is the new protocol") {
    const std::string head =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    const std::string text = head + "\x82\x02hi";
    Parsed p = parse(text, text.size(), false, {}, true);
    REQUIRE(p.status.ok());
    CHECK(p.complete);
    CHECK(p.head.status == 101);
    CHECK(p.used == head.size());
    CHECK(p.head.header_has_token("connection", "upgrade"));
    CHECK(p.head.header_has_token("Upgrade", "WebSocket"));
}

TEST_CASE("http response: an interim 100 Continue is skipped") {
    Parsed p = parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                     1000, false);
    REQUIRE(p.status.ok());
    CHECK(p.head.status == 200);
    CHECK(p.body == "ok");
}

TEST_CASE("http response: HEAD answers have no body whatever Content-Length says") {
    Parsed p =
        parse("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", 1000, false, {}, false, true);
    REQUIRE(p.status.ok());
    CHECK(p.complete);
    CHECK(p.body.empty());
}

TEST_CASE("http response: caps on head and body") {
    HttpLimits small;
    small.max_head = 100;
    small.max_body = 10;
    Parsed p = parse("HTTP/1.1 200 OK\r\nX-Big: " + std::string(200, 'a') + "\r\n\r\n", 1000, false,
                     small);
    CHECK(!p.status.ok());
    CHECK(p.status.error().message().find("head larger than 100 bytes") != std::string::npos);

    p = parse("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world", 1000, false, small);
    CHECK(!p.status.ok());
    CHECK(p.status.error().message().find("exceeds the limit") != std::string::npos);
    CHECK(p.body.empty());  // refused on the header, before any byte of the body

    p = parse(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
        "chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n",
        1000, false, small);
    CHECK(!p.status.ok());
    CHECK(p.body.size() <= 10);

    // Many small headers count too.
    std::string many = "HTTP/1.1 200 OK\r\n";
    for (int i = 0; i < 50; ++i) many += "A: b\r\n";
    p = parse(many + "\r\n", 1000, false, small);
    CHECK(!p.status.ok());
}

TEST_CASE("http response: malformed input is refused with a reason") {
    Parsed p = parse("HTTP/1.1 abc OK\r\n\r\n", 100, false);
    CHECK(!p.status.ok());
    CHECK(p.status.error().message().find("malformed HTTP response") != std::string::npos);
    p = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 100, false);
    CHECK(!p.status.ok());
}

TEST_CASE("http response: a failing body handler stops parsing with its own message") {
    ResponseParser::Handlers h;
    h.on_body = [](std::string_view) -> Status { return fail("disk full"); };
    ResponseParser parser({}, h);
    auto r = parser.feed("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc");
    REQUIRE(!r);
    CHECK(r.error().message() == "disk full");
}

TEST_CASE("retry-after: delta seconds and the three HTTP-date forms") {
    using namespace std::chrono;
    const WallTime now = system_clock::from_time_t(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT
    CHECK(parse_retry_after("120", now) == Duration(seconds(120)));
    CHECK(parse_retry_after(" 0 ", now) == Duration::zero());
    CHECK(parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", now) == Duration(seconds(60)));
    CHECK(parse_retry_after("Sunday, 06-Nov-94 08:51:37 GMT", now) == Duration(seconds(120)));
    CHECK(parse_retry_after("Sun Nov  6 08:52:37 1994", now) == Duration(seconds(180)));
    CHECK(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now) == Duration::zero());
    CHECK(!parse_retry_after("", now));
    CHECK(!parse_retry_after("soon", now));
    CHECK(!parse_retry_after("-5", now));
    CHECK(!parse_retry_after("Sun, 06 Nov 1994 08:50:37 PST", now));
    CHECK(parse_retry_after("99999999999999999999", now).has_value());
}

TEST_CASE("retry-after: a date far in the future is capped, not wrapped to zero") {
    using namespace std::chrono;
    const WallTime now = system_clock::from_time_t(784111777);
    const Duration year = duration_cast<Duration>(hours(24 * 365));
    // Year 9999 is past what a nanosecond time_point holds (2262): it once wrapped to 0 (also
    // found by fuzz_http as a signed overflow once UBSan stopped the run, with year 3994).
    CHECK(parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now) == year);
    CHECK(parse_retry_after("Thu, 01 Jan 2300 00:00:00 GMT", now) == year);
    CHECK(parse_retry_after("9999999999", now) == year);
    CHECK(parse_retry_after("99999999999999999999", now) == year);
    CHECK(parse_retry_after("Sun, 06 Nov 3994 08:49:37 GMT", now) == year);
    CHECK(parse_retry_after("Sun Nov  6 08:52:37 9999", now) == year);
}
