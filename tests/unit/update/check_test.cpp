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
    // The policy.
    std::optional<std::string> minimum = std::nullopt;
    bool allow_downgrade = false;
    // The verdict.
    Kind kind = Kind::proceed;
    Rule rule = Rule::none;
    std::string text = {};
};

Attempt last_attempt(Outcome o, std::string version, std::string hash = kHash) {
    return Attempt{hex::encode(hash), std::move(version), o, "signature: bad", "t"};
}

// clang-format off
const Case kCases[] = {
    {.name = "a newer version passes"},
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
     .kind = Kind::refused, .rule = Rule::failed_before,
     .text = "failed before, not tried again until the offer changes: signature: bad"},
    {.name = "the same offer rolled back before",
     .last = last_attempt(Outcome::rolled_back, "0.117.0"), .kind = Kind::refused,
     .rule = Rule::failed_before,
     .text = "failed before, not tried again until the offer changes: signature: bad"},
    {.name = "installed before is no reason to refuse",
     .last = last_attempt(Outcome::installed, "0.117.0")},
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
        Inspection in{c.active, c.intact, c.previous, c.last};
        CheckPolicy policy{c.minimum, c.allow_downgrade};
        int url_checks = 0;
        CheckVerdict v = check_offer(pkg, in, policy, [&](const std::string& url) -> Status {
            ++url_checks;
            if (url.rfind("https://artifacts.example/", 0) == 0) return {};
            return fail(Errc::invalid, url + ": not allowed");
        });
        CHECK(v.kind == c.kind);
        CHECK(to_string(v.rule) == std::string(to_string(c.rule)));
        CHECK(v.text == c.text);
        // The URL policy is asked last, only when every other rule let the offer through.
        bool asked =
            c.kind != Kind::installed && (c.kind == Kind::proceed || c.rule == Rule::url_refused);
        CHECK(url_checks == (asked ? 1 : 0));
    }
}
