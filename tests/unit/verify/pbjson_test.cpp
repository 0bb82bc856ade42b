#include "verify/pbjson.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace myr::verify;

namespace {

myr::json::Ptr doc(const std::string& text) {
    auto d = parse_json(text, 1 << 20, 16);
    REQUIRE_MESSAGE(d.ok(), text);
    return std::move(*d);
}

}  // namespace

TEST_CASE(
    "pbjson: refuses documents over the size cap, too deep, malformed or with trailing data") {
    CHECK_FALSE(parse_json(std::string(100, ' ') + "{}", 50, 16).ok());
    CHECK(parse_json("{\"a\":[[[1]]]}", 100, 16).ok());
    auto deep = parse_json("{\"a\":[[[[[[1]]]]]]}", 100, 4);
    REQUIRE_FALSE(deep.ok());
    CHECK(deep.error().message().find("malformed JSON") == 0);
    CHECK_FALSE(parse_json("{\"a\":1", 100, 16).ok());
    CHECK_FALSE(parse_json("{\"a\":1} {}", 100, 16).ok());
    CHECK_FALSE(parse_json("[1]", 100, 16).ok());
    CHECK(parse_json("{\"a\":1}\n  ", 100, 16).ok());
}

TEST_CASE("pbjson: int64 fields follow protobuf-JSON (strings, numbers, omitted zero)") {
    auto d = doc(R"({"s":"123","n":7,"neg":"-1","negn":-3,"big":"9223372036854775808",)"
                 R"("max":"9223372036854775807","frac":1.5,"txt":"12a","lead":"012","empty":""})");
    CHECK(*count_member(d.get(), "s", "s") == 123);
    CHECK(*count_member(d.get(), "n", "n") == 7);
    CHECK(*count_member(d.get(), "missing", "missing") == 0);
    CHECK(*count_member(d.get(), "max", "max") == INT64_MAX);
    for (const char* bad : {"neg", "negn", "big", "frac", "txt", "lead", "empty"}) {
        CAPTURE(bad);
        auto r = count_member(d.get(), bad, bad);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message().rfind(std::string(bad) + ": ", 0) == 0);
    }
    auto huge = doc(R"({"n":123456789012345678901234567890})");
    CHECK_FALSE(count_member(huge.get(), "n", "n").ok());
}

TEST_CASE("pbjson: bytes are strict standard base64") {
    CHECK(*base64_decode("aGVsbG8=") == Bytes{'h', 'e', 'l', 'l', 'o'});
    CHECK(base64_decode("").value().empty());
    CHECK_FALSE(base64_decode("aGVsbG8").ok());     // no padding
    CHECK_FALSE(base64_decode("aGVs\nbG8=").ok());  // line break
    CHECK_FALSE(base64_decode("aGVs bG8=").ok());   // space
    CHECK_FALSE(base64_decode("aGVsbG8-").ok());    // URL alphabet
    CHECK_FALSE(base64_decode("a===").ok());
    CHECK(base64_encode(Bytes{'h', 'e', 'l', 'l', 'o'}) == "aGVsbG8=");
    auto d = doc(R"({"b":"AAE=","bad":"!!!!","num":5})");
    CHECK(*bytes_member(d.get(), "b", "b", true) == Bytes{0, 1});
    CHECK_FALSE(bytes_member(d.get(), "bad", "bad", true).ok());
    CHECK_FALSE(bytes_member(d.get(), "num", "num", true).ok());
    CHECK_FALSE(bytes_member(d.get(), "none", "none", true).ok());
    CHECK(bytes_member(d.get(), "none", "none", false)->empty());
}

TEST_CASE("pbjson: arrays are capped") {
    auto d = doc(R"({"a":[1,2,3],"o":{}})");
    CHECK(array_member(d.get(), "a", "a", 3)->size() == 3);
    auto over = array_member(d.get(), "a", "a", 2);
    REQUIRE_FALSE(over.ok());
    CHECK(over.error().message() == "a: 3 elements, more than the limit of 2");
    CHECK_FALSE(array_member(d.get(), "o", "o", 2).ok());
    CHECK(array_member(d.get(), "x", "x", 2)->empty());
}

TEST_CASE("pbjson: RFC 3339 times, with fractions and offsets") {
    CHECK(*parse_rfc3339("1970-01-01T00:00:00Z") == 0);
    CHECK(*parse_rfc3339("2023-07-12T15:56:36Z") == 1689177396);
    CHECK(*parse_rfc3339("2022-10-31T23:59:59.999Z") == 1667260799);
    CHECK(*parse_rfc3339("2023-07-12T17:56:36+02:00") == 1689177396);
    CHECK(*parse_rfc3339("2000-02-29T00:00:00Z") == 951782400);
    CHECK_FALSE(parse_rfc3339("2023-07-12 15:56:36Z").ok());
    CHECK_FALSE(parse_rfc3339("2023-07-12T15:56:36").ok());
    CHECK_FALSE(parse_rfc3339("2023-13-12T15:56:36Z").ok());
    CHECK_FALSE(parse_rfc3339("2023-07-12T15:56:36Zjunk").ok());
    CHECK_FALSE(parse_rfc3339("").ok());
}
