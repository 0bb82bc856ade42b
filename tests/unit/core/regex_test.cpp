// core/regex: the identity pattern matcher. std::regex (ECMAScript, regex_match), which the product
// used before, is the oracle for every pattern of the supported syntax: the same verdict on each
// text, so replacing it changed no identity's outcome.
#include "core/regex.hpp"

#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

using myr::Regex;

namespace {

bool matches(const std::string& re, const std::string& text) {
    auto r = Regex::compile(re);
    REQUIRE_MESSAGE(r, re << ": " << (r ? std::string() : r.error().message()));
    return r->full_match(text);
}

std::string refusal(const std::string& re) {
    auto r = Regex::compile(re);
    return r ? "(compiled)" : r.error().message();
}

}  // namespace

TEST_CASE("regex: the same verdict as std::regex_match on the supported syntax") {
    const std::vector<std::string> patterns = {
        "^https://github\\.com/open-telemetry/opentelemetry-collector-releases/\\.github/"
        "workflows/base-release\\.yaml@refs/tags/v.*$",
        "^https://github\\.com/[a-z-]+/[^/]+/\\.github/workflows/[\\w.-]+\\.ya?ml@refs/tags/"
        "v\\d+\\.\\d+\\.\\d+$",
        "^[a-z]{1,64}\\.(b{2}){3}[{]x$",
        "^(?:a|ab|abc)+c$",
        "^(a*)*b?$",
        "^a{2,}$",
        "^a{0,3}b{2}$",
        "^\\x41\\s\\S\\D\\W$",
        "^[^\\d\\s]+$",
        "^[\\]\\-a-c]*$",
        "^.+@(x|y|)$",
        "^a+?b*?c??$",
        "^x\\$\\^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\\\/$",
        "^[]$",
        "^$",
        "a|b",
        "^ab|cd$",
        "^\\t\\n\\v\\f\\r\\0$",
        "^[\\b]$",
    };
    const std::vector<std::string> texts = {
        "",
        "a",
        "b",
        "ab",
        "abc",
        "abcc",
        "aaa",
        "aab",
        "aabb",
        "aaaabb",
        "cd",
        "abcd",
        "x@",
        "y@x",
        "ab@y",
        "a@z",
        "abc.bbbbbb{x",
        "abc.bbbbb{x",
        "A b1 ",
        "A b1!",
        "]-abc",
        "x$^.*+?()[]{}|\\/",
        "\t\n\v\f\r" + std::string(1, '\0'),
        "\b",
        "line\nbreak@x",
        "https://github.com/open-telemetry/opentelemetry-collector-releases/.github/workflows/"
        "base-release.yaml@refs/tags/v0.116.0",
        "https://github.com/open-telemetry/opentelemetry-collector-releases/.github/workflows/"
        "base-release.yaml@refs/heads/main",
        "https://github.com/my-org/repo/.github/workflows/rel_1.yml@refs/tags/v1.2.3",
        "https://github.com/my-org/repo/.github/workflows/rel_1.yml@refs/tags/v1.2.3-rc",
        "https://github.com/My-org/repo/.github/workflows/rel.yaml@refs/tags/v1.2.3",
    };
    for (const auto& re : patterns) {
        const std::regex oracle(re, std::regex::ECMAScript);
        for (const auto& t : texts) {
            CHECK_MESSAGE(matches(re, t) == std::regex_match(t, oracle),
                          "pattern " << re << " text " << t);
        }
    }
}

TEST_CASE("regex: a match is of the whole text, anchors or not") {
    CHECK(matches("b", "b"));
    CHECK_FALSE(matches("b", "abc"));
    CHECK_FALSE(matches("sigstore-conformance", "https://github.com/sigstore-conformance/x"));
    CHECK(matches("^a$|^b$", "b"));
    CHECK_FALSE(matches("a^b", "ab"));
    CHECK_FALSE(matches(".", "\n"));
    CHECK(matches(".", "\xc3"));
}

TEST_CASE("regex: what it does not support is refused with the construct and its offset") {
    CHECK(refusal("^abc(") == "unmatched ( at offset 4");
    CHECK(refusal("^abc)") == "unmatched ) at offset 4");
    CHECK(refusal("^[a-") == "unmatched [ at offset 1");
    CHECK(refusal("^(a)\\1$") == "backreferences are not supported at offset 6");
    CHECK(refusal("^(?=a)a$") ==
          "lookaround and named groups ((?=, (?!, (?<) are not supported at "
          "offset 2");
    CHECK(refusal("^(?<n>a)$") ==
          "lookaround and named groups ((?=, (?!, (?<) are not supported at "
          "offset 2");
    CHECK(refusal("^\\ba$") == "word boundaries (\\b) are not supported at offset 3");
    CHECK(refusal("^\\u0041$") == "unknown escape \\u at offset 3");
    CHECK(refusal("^\\cA$") == "unknown escape \\c at offset 3");
    CHECK(refusal("*a") == "nothing to repeat before * at offset 0");
    CHECK(refusal("^a|+$") == "nothing to repeat before + at offset 3");
    CHECK(refusal("^a{x}$") ==
          "{ starts no repetition count (write \\{ for the character) at "
          "offset 2");
    CHECK(refusal("^a{2$") == "repetition count without its } at offset 2");
    CHECK(refusal("^a{3,2}$") == "repetition count {n,m} with m below n at offset 2");
    CHECK(refusal("^[z-a]$") == "range out of order at offset 4");
    CHECK(refusal("^[\\d-z]$") == "a class such as \\d cannot end a range at offset 6");
    CHECK(refusal("^\\x4$") == "\\x needs two hex digits at offset 3");
    CHECK(refusal("a\\") == "pattern ends in a backslash at offset 2");
    CHECK(refusal(std::string(101, '(') + std::string(101, ')')) ==
          "groups nested deeper than 100 at offset 101");
    // Every refusal is an `invalid` error: callers branch on the code, not the text.
    CHECK(Regex::compile("(").error().code() == myr::Errc::invalid);
}

TEST_CASE("regex: counted repetitions are bounded by states, before anything is built") {
    const std::string over = "repetition counts expand to more than 20000 states";
    CHECK(refusal("^[a-z]{99999}$") == over);
    CHECK(refusal("^a{1000}{1000}$") == over);
    CHECK(refusal("^(x(a{200})){200}$") == over);
    CHECK(refusal("^a{20001,}$") == over);
    CHECK(refusal("^a{4294967295}$") == over);
    CHECK(matches("^a{19990}$", std::string(19990, 'a')));
    CHECK_FALSE(matches("^a{19990}$", std::string(19989, 'a')));
    CHECK(matches("^a{2}{3}$", "aaaaaa"));  // stacked counts multiply, as libstdc++ accepted
}

TEST_CASE("regex: patterns that make a backtracking matcher exponential stay linear here") {
    // (a|a)*b against a's alone: 2^n paths for a backtracker; here each position holds each
    // instruction at most once. A regression would hit the test's timeout, not a wrong verdict.
    const std::string text(5000, 'a');
    CHECK_FALSE(matches("^(a|a)*b$", text));
    CHECK_FALSE(matches("^(a*)*b$", text));
    CHECK(matches("^(a|aa)+$", text));
    CHECK_FALSE(matches("^(.*a){20}b$", text));
}
