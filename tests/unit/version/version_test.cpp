#include "version/version.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using myr::version::compare;
using myr::version::Order;
using myr::version::parse;

namespace {

struct Case {
    const char* a;
    const char* b;
    Order want;
};

}  // namespace

TEST_CASE("version: compare follows semver precedence on the hard cases") {
    const std::vector<Case> cases = {
        {"1.0.0-rc.1", "1.0.0", Order::less},
        {"1.0.0", "1.0.0-rc.1", Order::greater},
        {"1.0.0-alpha.10", "1.0.0-alpha.2", Order::greater},
        {"v0.116.0", "0.116.0", Order::equal},
        {"0.116.0", "0.117.0", Order::less},
        {"0.116.0", "0.99.0", Order::greater},
        {"10.0.0", "9.0.0", Order::greater},
        {"1.0.0+build.1", "1.0.0+build.2", Order::equal},
        {"1.0.0-rc.1+x", "1.0.0-rc.1", Order::equal},
        // The full example chain of semver §11.4.
        {"1.0.0-alpha", "1.0.0-alpha.1", Order::less},
        {"1.0.0-alpha.1", "1.0.0-alpha.beta", Order::less},
        {"1.0.0-alpha.beta", "1.0.0-beta", Order::less},
        {"1.0.0-beta", "1.0.0-beta.2", Order::less},
        {"1.0.0-beta.2", "1.0.0-beta.11", Order::less},
        {"1.0.0-beta.11", "1.0.0-rc.1", Order::less},
        {"1.0.0-rc.1", "1.0.0", Order::less},
        {"1.0.0-1", "1.0.0-a", Order::less},
        {"1.0.0-A", "1.0.0-a", Order::less},
        {"1.0.0-0a", "1.0.0-1", Order::greater},
        // Huge numbers order by value and never overflow.
        {"99999999999999999999999.0.0", "99999999999999999999998.0.0", Order::greater},
        {"1.0.0-alpha.99999999999999999999999", "1.0.0-alpha.3", Order::greater},
        {"18446744073709551616.0.0", "18446744073709551615.0.0", Order::greater},
        // Anything else is not comparable, in either position.
        {"0.116 ", "0.116.0", Order::not_comparable},
        {"0.116", "0.116.0", Order::not_comparable},
        {"0.116.0", "", Order::not_comparable},
        {"01.0.0", "1.0.0", Order::not_comparable},
        {"1.02.0", "1.2.0", Order::not_comparable},
        {"1.0.0-01", "1.0.0-1", Order::not_comparable},
        {"1.0.0-", "1.0.0", Order::not_comparable},
        {"1.0.0-a..b", "1.0.0", Order::not_comparable},
        {"1.0.0+", "1.0.0", Order::not_comparable},
        {"1.0.0+a..b", "1.0.0", Order::not_comparable},
        {"1.0.0.0", "1.0.0", Order::not_comparable},
        {" 1.0.0", "1.0.0", Order::not_comparable},
        {"V1.0.0", "1.0.0", Order::not_comparable},
        {"vv1.0.0", "1.0.0", Order::not_comparable},
        {"v", "1.0.0", Order::not_comparable},
        {"1.0.0-rc_1", "1.0.0", Order::not_comparable},
        {"1..0", "1.0.0", Order::not_comparable},
        {"-1.0.0", "1.0.0", Order::not_comparable},
        {"1.0.0/../x", "1.0.0", Order::not_comparable},
    };
    for (const Case& c : cases) {
        CAPTURE(c.a);
        CAPTURE(c.b);
        CHECK(compare(c.a, c.b) == c.want);
    }
}

TEST_CASE("version: parse splits the parts and keeps build metadata") {
    auto v = parse("v1.2.3-rc.1.x-y+build.007");
    REQUIRE(v);
    CHECK(v->major == "1");
    CHECK(v->minor == "2");
    CHECK(v->patch == "3");
    CHECK(v->prerelease == std::vector<std::string>{"rc", "1", "x-y"});
    CHECK(v->build == "build.007");  // leading zeros are fine in build metadata
    CHECK(myr::version::to_string(*v) == "1.2.3-rc.1.x-y+build.007");
}

TEST_CASE("version: to_string drops the leading v and round-trips") {
    for (const char* s : {"0.116.0", "1.0.0-alpha.10", "2.0.0+meta", "0.0.0-0"}) {
        auto v = parse(s);
        REQUIRE(v);
        CHECK(myr::version::to_string(*v) == s);
        CHECK(myr::version::is_canonical(s));
    }
    CHECK(myr::version::to_string(*parse("v0.116.0")) == "0.116.0");
}

TEST_CASE("version: only canonical versions may name a directory") {
    CHECK_FALSE(myr::version::is_canonical("v0.116.0"));
    CHECK_FALSE(myr::version::is_canonical(".."));
    CHECK_FALSE(myr::version::is_canonical("0.116.0/x"));
    CHECK_FALSE(myr::version::is_canonical("../0.116.0"));
    CHECK_FALSE(myr::version::is_canonical(""));
    CHECK_FALSE(myr::version::is_canonical("0.116.0\n"));
}

TEST_CASE("version: compare on parsed values is antisymmetric") {
    const std::vector<const char*> chain = {"0.1.0-alpha", "0.1.0-alpha.1", "0.1.0-beta",
                                            "0.1.0",       "0.2.0",         "1.0.0-rc.1",
                                            "1.0.0",       "1.0.1",         "10.0.0"};
    for (size_t i = 0; i < chain.size(); ++i) {
        for (size_t j = 0; j < chain.size(); ++j) {
            CAPTURE(chain[i]);
            CAPTURE(chain[j]);
            int want = i < j ? -1 : (i > j ? 1 : 0);
            CHECK(compare(*parse(chain[i]), *parse(chain[j])) == want);
        }
    }
}
