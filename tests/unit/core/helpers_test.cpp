#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/file.hpp"
#include "core/hex.hpp"
#include "core/random.hpp"
#include "core/text.hpp"
#include "core/url.hpp"
#include "harness.hpp"

using namespace myr;

TEST_CASE("hex: encodes lower case and decodes either case, exactly") {
    const uint8_t b[] = {0x00, 0x0f, 0xa5, 0xff};
    CHECK(hex::encode(b, sizeof b) == "000fa5ff");
    uint8_t out[4] = {};
    CHECK(hex::decode("000FA5ff", out, 4));
    CHECK(std::equal(out, out + 4, b));
    CHECK_FALSE(hex::decode("000fa5f", out, 4));   // odd length
    CHECK_FALSE(hex::decode("000fa5fg", out, 4));  // not a digit
    CHECK(hex::digit('G') == -1);
}

TEST_CASE("random: bytes differ between calls and the unit value stays in [0, 1)") {
    uint8_t a[16] = {}, b[16] = {};
    random_bytes(a, sizeof a);
    random_bytes(b, sizeof b);
    CHECK_FALSE(std::equal(a, a + 16, b));
    for (int i = 0; i < 1000; ++i) {
        double u = random_unit();
        CHECK(u >= 0.0);
        CHECK(u < 1.0);
    }
}

TEST_CASE("text: trim and lower") {
    CHECK(text::trim("  \ttoken\r\n") == "token");
    CHECK(text::trim(" \n ").empty());
    CHECK(text::lower("Example.COM:443") == "example.com:443");
}

TEST_CASE("text: valid_utf8 replaces ill-formed sequences and cuts on a code point boundary") {
    const std::string fffd = "\xEF\xBF\xBD";
    CHECK(text::valid_utf8("plain ascii") == "plain ascii");
    CHECK(text::valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") ==
          "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    // A Latin-1 no-break space, stray continuation bytes, bytes never used in UTF-8.
    CHECK(text::valid_utf8("404 Not Found\xA0") == "404 Not Found" + fffd);
    CHECK(text::valid_utf8("a\x80\xBF"
                           "b") == "a" + fffd + fffd + "b");
    CHECK(text::valid_utf8("\xC0\xAF\xFF\xFE") == fffd + fffd + fffd + fffd);
    // Truncated sequences: one U+FFFD for the maximal subpart, the byte after it kept.
    CHECK(text::valid_utf8("\xE2\x82x") == fffd + "x");
    CHECK(text::valid_utf8("\xF0\x9F\x98") == fffd);
    CHECK(text::valid_utf8("\xC3") == fffd);
    // Overlong, surrogate, past U+10FFFF: the lead byte alone is the subpart.
    CHECK(text::valid_utf8("\xE0\x80\x80") == fffd + fffd + fffd);
    CHECK(text::valid_utf8("\xED\xA0\x80") == fffd + fffd + fffd);
    CHECK(text::valid_utf8("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);
    // Bounded: the cut never splits a code point, and the ellipsis counts.
    CHECK(text::valid_utf8("abcdef", 6) == "abcdef");
    CHECK(text::valid_utf8("abcdefg", 6) == "abc\xE2\x80\xA6");
    CHECK(text::valid_utf8("ab\xE2\x82\xAC\xE2\x82\xAC", 7) == "ab\xE2\x80\xA6");
    CHECK(text::valid_utf8(std::string(5000, '\xFF'), 100).size() <= 100);
}

TEST_CASE("url: url_for_messages drops user information, query string and fragment") {
    const std::string ellipsis = "\xE2\x80\xA6";
    CHECK(url_for_messages("https://h/a/b.tar.gz") == "https://h/a/b.tar.gz");
    CHECK(url_for_messages("https://h/a?X-Amz-Signature=secret") == "https://h/a?" + ellipsis);
    CHECK(url_for_messages("https://user:pw@h:8443/a#frag") == "https://h:8443/a");
    CHECK(url_for_messages("https://h/p@th?q=1") == "https://h/p@th?" + ellipsis);
    CHECK(url_for_messages("not a url?token") == "not a url?" + ellipsis);
    CHECK(Url{"https", "h", 443, "/a?sig=1"}.shown() == "https://h/a?" + ellipsis);
}

TEST_CASE("file: open_regular follows a symlink but refuses a FIFO and a directory") {
    test::TempDir dir;
    test::write_file(dir / "token", "secret\n");
    REQUIRE(::symlink((dir / "token").c_str(), (dir / "link").c_str()) == 0);
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    auto fd = open_regular(dir / "link");
    REQUIRE(fd);
    auto text = read_bounded(fd->get(), 100);
    REQUIRE(text);
    CHECK(*text == "secret\n");
    auto fifo = open_regular(dir / "fifo");  // must not block waiting for a writer
    REQUIRE_FALSE(fifo);
    CHECK(fifo.error().message().find("not a regular file (FIFO)") != std::string::npos);
    CHECK(fifo.error().sys_errno() == EINVAL);
    auto d = open_regular(dir.path());
    REQUIRE_FALSE(d);
    CHECK(d.error().message().find("directory") != std::string::npos);
    auto missing = open_regular(dir / "missing");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().sys_errno() == ENOENT);
}

TEST_CASE("file: read_bounded refuses more than the limit") {
    test::TempDir dir;
    test::write_file(dir / "big", std::string(101, 'x'));
    auto fd = open_regular(dir / "big");
    REQUIRE(fd);
    auto text = read_bounded(fd->get(), 100);
    REQUIRE_FALSE(text);
    CHECK(text.error().message() == "larger than 100 bytes");
    CHECK(text.error().sys_errno() == EFBIG);
}

TEST_CASE("error: a code by domain survives the context chain; errno errors are system errors") {
    Error e(Errc::integrity, "SHA-256 differs");
    Error chained = e.context("stage").context("activate 0.116.0");
    CHECK(chained.message() == "activate 0.116.0: stage: SHA-256 differs");
    CHECK(chained.code() == Errc::integrity);
    CHECK(Error::from_errno("write", ENOSPC).code() == Errc::system);
    CHECK(Error::from_errno("write", ENOSPC).sys_errno() == ENOSPC);
    CHECK(Error("plain").code() == Errc::unknown);
    Result<int> r = fail(Errc::timeout, "no data received for 60s");
    Status st = r.fail("download");
    CHECK(st.error().code() == Errc::timeout);
    CHECK(std::string(to_string(Errc::cancelled)) == "cancelled");
}

TEST_CASE("text: escape_controls writes out C0, DEL, C1 and backslashes, keeps the rest") {
    using myr::text::escape_controls;
    CHECK(escape_controls("plain text, é and €") == "plain text, é and €");
    CHECK(escape_controls("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m");
    CHECK(escape_controls("a\rb\nc\td") == "a\\x0db\\x0ac\\x09d");
    CHECK(escape_controls(std::string("nul\0x", 5)) == "nul\\x00x");
    CHECK(escape_controls("del\x7f") == "del\\x7f");
    CHECK(escape_controls("csi\xc2\x9b"
                          "2J nel\xc2\x85") == "csi\\u009b2J nel\\u0085");
    CHECK(escape_controls("\xc2\xa0") == "\xc2\xa0");  // U+00A0 is no control
    CHECK(escape_controls("a\\x1b") == "a\\\\x1b");    // what is shown reads back one way
    // A stray C1 byte is not UTF-8: replaced, not passed.
    CHECK(escape_controls("\x9b"
                          "2J") ==
          "\xEF\xBF\xBD"
          "2J");
}
