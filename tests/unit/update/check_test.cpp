#include "update/check.hpp"

#include <doctest/doctest.h>

#include <string>

#include "core/hex.hpp"

using namespace myr;
using namespace myr::update;

namespace {

using Kind = CheckVerdict::Kind;

const std::string kHash(32, 'p');

struct Case {
    const char* name = "";
    // The offer.
    std::string version = "0.117.0";
    bool has_file = true;
    size_t content_hash_size = 32;
    std::string url = "https://artifacts.example/otelcol.tar.gz";
    // The volume.
    std::string active = "0.116.0";
    bool intact = true;
    std::string previous = "0.115.0";
    std::optional<Attempt> last = std::nullopt;
    std::string active_hash = {};                 // raw bytes; "" when not known
    uint64_t active_size = 0;                     // 0: no estimate of the new binary
    std::optional<uint64_t> room = std::nullopt;  // on the volume; nullopt: statvfs failed
    // The policy.
    std::optional<std::string> minimum = std::nullopt;
    bool allow_downgrade = false;
    int skew = 1;
    std::string supervisor = {};  // "" when not known
    // The verdict.
    Kind kind = Kind::proceed;
    Rule rule = Rule::none;
    std::string text = {};
    std::string canonical = {};  // with proceed and installed; "" = the offered version
};

Attempt last_attempt(Outcome o, std::string version, std::string hash = kHash) {
    return Attempt{hex::encode(hash), std::move(version), o, "signature: bad", "t"};
}

// The attempts above have no readable time ("t"): quarantined until the offer changes.
const std::string kQuarantined =
    "quarantined: signature: bad (until the offer changes or myriarch-updater forget)";

// clang-format off
const Case kCases[] = {
    {.name = "a newer version passes"},
    {.name = "room for the estimate (the active binary and 64 KiB) passes",
     .active_size = 1'000'000, .room = 1'065'536},
    {.name = "no room for the estimate is refused last", .active_size = 1'000'000,
     .room = 1'065'535, .kind = Kind::refused, .rule = Rule::no_room,
     .text = "not enough space on /v: need 1065536 (1.0 MiB), have 1065535 (1.0 MiB); the new "
             "binary is estimated by the size of the active 0.116.0"},
    {.name = "no room and a bad URL: the URL is refused first", .url = "http://elsewhere/x",
     .active_size = 1'000'000, .room = 10, .kind = Kind::refused, .rule = Rule::url_refused,
     .text = "download URL refused: http://elsewhere/x: not allowed"},
    {.name = "no estimate without an intact active binary", .active_size = 0, .room = 0},
    {.name = "room not known: no rule", .active_size = 1'000'000},
    {.name = "an unparsable version is refused first", .version = "banana", .minimum = "9.0.0",
     .kind = Kind::refused, .rule = Rule::unparsable_version,
     .text = "offered version \"banana\" does not parse"},
    {.name = "below update.minimumVersion", .version = "0.110.0", .minimum = "0.115.0",
     .kind = Kind::refused, .rule = Rule::below_minimum,
     .text = "version 0.110.0 is below update.minimumVersion 0.115.0"},
    {.name = "the minimum comes before installed", .version = "0.116.0", .minimum = "0.117.0",
     .kind = Kind::refused, .rule = Rule::below_minimum,
     .text = "version 0.116.0 is below update.minimumVersion 0.117.0"},
    {.name = "at the minimum passes", .minimum = "0.117.0"},
    {.name = "the active version, intact, is installed", .version = "0.116.0",
     .kind = Kind::installed},
    {.name = "the active version, broken, is installed again", .version = "0.116.0",
     .intact = false},
    {.name = "a downgrade is refused", .version = "0.114.0", .kind = Kind::refused,
     .rule = Rule::downgrade,
     .text = "version 0.114.0 is older than the active 0.116.0 (update.allowDowngrade is false "
             "and it is not the previous version 0.115.0)"},
    {.name = "a downgrade without a previous version says so", .version = "0.114.0",
     .previous = "", .kind = Kind::refused, .rule = Rule::downgrade,
     .text = "version 0.114.0 is older than the active 0.116.0 (update.allowDowngrade is false "
             "and it is not the previous version (none))"},
    {.name = "a downgrade to the previous version passes", .version = "0.115.0"},
    {.name = "a downgrade passes with allowDowngrade", .version = "0.114.0",
     .allow_downgrade = true},
    {.name = "a downgrade over a broken active version passes", .version = "0.114.0",
     .intact = false},
    {.name = "the same offer failed before", .last = last_attempt(Outcome::failed, "0.117.0"),
     .kind = Kind::refused, .rule = Rule::quarantined,
     .text = kQuarantined},
    {.name = "the same offer rolled back before",
     .last = last_attempt(Outcome::rolled_back, "0.117.0"), .kind = Kind::refused,
     .rule = Rule::quarantined,
     .text = kQuarantined},
    {.name = "a transient failure of the same offer is tried again",
     .last = [] { Attempt a = last_attempt(Outcome::failed, "0.117.0"); a.cls = FailureClass::transient;
                  return a; }()},
    {.name = "a lifted quarantine lets the same offer through",
     .last = [] { Attempt a = last_attempt(Outcome::failed, "0.117.0"); a.lifted = "t";
                  return a; }()},
    {.name = "installed before is no reason to refuse",
     .last = last_attempt(Outcome::installed, "0.117.0")},
    {.name = "the same offer interrupted by a restart goes on (it resumes its download)",
     .last = last_attempt(Outcome::interrupted, "0.117.0")},
    {.name = "another package hash failed before",
     .last = last_attempt(Outcome::failed, "0.117.0", std::string(32, 'q'))},
    {.name = "another version failed before", .last = last_attempt(Outcome::failed, "0.118.0")},
    {.name = "a failure without a package hash is not this offer",
     .last = Attempt{"", "0.117.0", Outcome::interrupted, "x", "t"}},
    {.name = "no file", .has_file = false, .kind = Kind::refused, .rule = Rule::no_file,
     .text = "the offer has no file to download"},
    {.name = "a content hash that is not a SHA-256", .content_hash_size = 16,
     .kind = Kind::refused, .rule = Rule::bad_content_hash,
     .text = "content_hash is 16 bytes, not a SHA-256"},
    // One canonical name, checked before anything is fetched.
    {.name = "a v-prefixed version passes under its canonical name", .version = "v0.117.0",
     .canonical = "0.117.0"},
    {.name = "a v-prefixed active version is installed", .version = "v0.116.0",
     .kind = Kind::installed, .canonical = "0.116.0"},
    {.name = "a version of 128 characters passes", .version = "0.117.0-" + std::string(120, 'a')},
    {.name = "a longer one cannot name a directory", .version = "v0.117.0-" + std::string(121, 'a'),
     .kind = Kind::refused, .rule = Rule::version_too_long,
     .text = "offered version \"v0.117.0-" + std::string(55, 'a') + "...\" is 129 characters; a "
             "version names a directory on the volume and may have at most 128"},
    {.name = "an unparsable version is echoed short", .version = std::string(100, 'x'),
     .kind = Kind::refused, .rule = Rule::unparsable_version,
     .text = "offered version \"" + std::string(64, 'x') + "...\" does not parse"},
    {.name = "failed before under its v-prefixed name", .version = "v0.117.0",
     .last = last_attempt(Outcome::failed, "0.117.0"), .kind = Kind::refused,
     .rule = Rule::quarantined,
     .text = kQuarantined},
    {.name = "failed before, stored by an older build as v0.117.0",
     .last = last_attempt(Outcome::failed, "v0.117.0"), .kind = Kind::refused,
     .rule = Rule::quarantined, .text = kQuarantined},
    // Rebuilds of the active version.
    {.name = "the active version with build metadata is refused", .version = "0.116.0+build2",
     .kind = Kind::refused, .rule = Rule::rebuild,
     .text = "version 0.116.0+build2 differs from the active 0.116.0 only in build metadata, "
             "which does not order versions: another build is not installed over the running "
             "one; offer it under a new version"},
    {.name = "a build of the active version without its metadata is refused",
     .version = "0.116.0", .active = "0.116.0+b1", .kind = Kind::refused, .rule = Rule::rebuild,
     .text = "version 0.116.0 differs from the active 0.116.0+b1 only in build metadata, which "
             "does not order versions: another build is not installed over the running one; "
             "offer it under a new version"},
    {.name = "the same build metadata is installed", .version = "0.116.0+b1",
     .active = "0.116.0+b1", .kind = Kind::installed},
    {.name = "re-spun bytes of the active version are refused", .version = "0.116.0",
     .active_hash = std::string(32, 'o'), .kind = Kind::refused, .rule = Rule::respun,
     .text = "0.116.0 is active with package hash " + hex::encode(std::string(32, 'o')) +
             "; the offer has hash " + hex::encode(kHash) + ": a re-spun release is not installed "
             "over the running one; offer it under a new version"},
    {.name = "the active version's own hash is installed", .version = "0.116.0",
     .active_hash = kHash, .kind = Kind::installed},
    {.name = "a build of a new version passes", .version = "0.117.0+build2"},
    // update.maxMinorSkew against the supervisor's version.
    {.name = "one minor from the supervisor passes", .supervisor = "0.116.0"},
    {.name = "two minors from the supervisor are refused", .version = "0.118.0",
     .supervisor = "0.116.0", .kind = Kind::refused, .rule = Rule::minor_skew,
     .text = "version 0.118.0 is 2 minor versions from the supervisor's 0.116.0 "
             "(update.maxMinorSkew is 1)"},
    {.name = "two minors below the supervisor are refused too", .version = "0.114.0",
     .allow_downgrade = true, .supervisor = "0.116.0", .kind = Kind::refused,
     .rule = Rule::minor_skew,
     .text = "version 0.114.0 is 2 minor versions from the supervisor's 0.116.0 "
             "(update.maxMinorSkew is 1)"},
    {.name = "another major version is refused", .version = "1.16.0", .supervisor = "0.116.0",
     .kind = Kind::refused, .rule = Rule::minor_skew,
     .text = "version 1.16.0 has another major version than the supervisor's 0.116.0 "
             "(update.maxMinorSkew is 1)"},
    {.name = "a minor too long to count is far", .version = "0.1234567890123456789012.0",
     .supervisor = "0.116.0", .kind = Kind::refused, .rule = Rule::minor_skew,
     .text = "version 0.1234567890123456789012.0 is more than 1 minor versions from the "
             "supervisor's 0.116.0 (update.maxMinorSkew is 1)"},
    {.name = "a wider skew passes", .version = "0.120.0", .skew = 4, .supervisor = "0.116.0"},
    {.name = "skew 0 keeps the supervisor's minor", .skew = 0, .supervisor = "0.116.0",
     .kind = Kind::refused, .rule = Rule::minor_skew,
     .text = "version 0.117.0 is 1 minor versions from the supervisor's 0.116.0 "
             "(update.maxMinorSkew is 0)"},
    {.name = "-1 turns the rule off", .version = "3.0.0", .skew = -1, .supervisor = "0.116.0"},
    {.name = "an unknown supervisor version turns the rule off", .version = "3.0.0"},
    {.name = "the active version is installed whatever the skew", .version = "0.116.0",
     .supervisor = "0.110.0", .kind = Kind::installed},
    {.name = "a URL the downloader refuses", .url = "http://elsewhere.example/x",
     .kind = Kind::refused, .rule = Rule::url_refused,
     .text = "download URL refused: http://elsewhere.example/x: not allowed"},
};
// clang-format on

}  // namespace

TEST_CASE("check_offer: offer x inspection x policy -> verdict") {
    for (const Case& c : kCases) {
        CAPTURE(c.name);
        OfferedPackage pkg;
        pkg.name = "otelcol-contrib";
        pkg.version = c.version;
        pkg.hash = kHash;
        if (c.has_file) {
            pkg.file = OfferedFile{c.url, std::string(c.content_hash_size, 'a'), "", {}};
        }
        std::optional<Inspection::Room> room;
        if (c.room) room = Inspection::Room{"/v", *c.room, 1};
        Inspection in{c.active,      c.intact,      c.previous, c.last,
                      c.active_hash, c.active_size, room,       room};
        CheckPolicy policy{c.minimum, c.allow_downgrade, c.skew, c.supervisor};
        int url_checks = 0;
        CheckVerdict v = check_offer(pkg, in, policy, [&](const std::string& url) -> Status {
            ++url_checks;
            if (url.rfind("https://artifacts.example/", 0) == 0) return {};
            return fail(Errc::invalid, url + ": not allowed");
        });
        CHECK(v.kind == c.kind);
        CHECK(to_string(v.rule) == std::string(to_string(c.rule)));
        CHECK(v.text == c.text);
        if (c.kind != Kind::refused)
            CHECK(v.version == (c.canonical.empty() ? c.version : c.canonical));
        // The URL policy is asked last, only when every other rule let the offer through.
        bool asked =
            c.kind != Kind::installed &&
            (c.kind == Kind::proceed || c.rule == Rule::url_refused || c.rule == Rule::no_room);
        CHECK(url_checks == (asked ? 1 : 0));
    }
}

TEST_CASE("check_offer: a quarantine lasts update.quarantineFor from the failure, 0 = for ever") {
    OfferedPackage pkg;
    pkg.name = "otelcol-contrib";
    pkg.version = "0.117.0";
    pkg.hash = kHash;
    pkg.file = OfferedFile{"https://artifacts.example/a.tar.gz", std::string(32, 'a'), "", {}};
    Attempt last = last_attempt(Outcome::rolled_back, "0.117.0");
    last.at = "2026-12-03T06:00:00Z";
    Inspection in{"0.116.0", true, "", last, ""};
    const WallTime failed_at = *parse_rfc3339(last.at);
    auto verdict = [&](Duration quarantine_for, Duration later) {
        CheckPolicy policy{std::nullopt, false, -1, "", quarantine_for, failed_at + later};
        return check_offer(pkg, in, policy, [](const std::string&) { return Status{}; });
    };
    using std::chrono::hours;
    CheckVerdict v = verdict(hours(24), hours(1));
    CHECK(v.rule == Rule::quarantined);
    CHECK(v.text ==
          "quarantined: signature: bad (until 2026-12-04T06:00:00Z or myriarch-updater forget)");
    CHECK(verdict(hours(24), hours(24)).kind == Kind::proceed);
    v = verdict(Duration::zero(), hours(24 * 365));
    CHECK(v.rule == Rule::quarantined);
    CHECK(v.text == kQuarantined);
}
