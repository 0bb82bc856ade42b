// Semantic versions as the collector reports them (`0.116.0`, `v0.117.0-rc.1+build.5`).
//
// A version is MAJOR.MINOR.PATCH with an optional `-prerelease` and `+build`, and an optional
// leading `v`. Anything else (two components, trailing spaces, leading zeros, empty identifiers)
// does not parse, and two strings of which one does not parse are "not comparable": the seeding
// table and the installer treat that case explicitly instead of guessing an order.
//
// Numeric parts are kept as digit strings and compared by length, then digit by digit, so
// arbitrarily large numbers order correctly and nothing overflows.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myr::version {

struct Version {
    std::string major, minor, patch;      // decimal digits, no leading zeros
    std::vector<std::string> prerelease;  // identifiers between '-' and '+', in order
    std::string build;                    // after '+', ignored by every comparison
};

enum class Order { less, equal, greater, not_comparable };

// Parses a semantic version, with or without a leading 'v'. No surrounding whitespace is accepted.
std::optional<Version> parse(std::string_view text);

// Semver precedence (semver.org §11): build metadata ignored. Returns -1, 0 or 1.
int compare(const Version& a, const Version& b);
// Parses both; `not_comparable` when either does not parse.
Order compare(std::string_view a, std::string_view b);

// Canonical form without the leading 'v': "0.116.0", "1.0.0-rc.1+build.5".
std::string to_string(const Version& v);
const char* to_string(Order o);

// True when `text` is a version in canonical form (what names a directory under versions/): it
// parses, has no leading 'v', and so contains no '/', no "..", no whitespace.
bool is_canonical(std::string_view text);

// The longest canonical version an offer may have. A version names a directory under versions/
// (NAME_MAX 255) and, with a prefix or suffix, a staging or temporary name next to it: 128 leaves
// room for both, and no real release comes near it. Only offers are held to it (update/check):
// a longer directory already on a volume still reads as a version.
inline constexpr size_t kMaxLength = 128;

}  // namespace myr::version
