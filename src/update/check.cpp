#include "update/check.hpp"

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <variant>

#include "core/hex.hpp"
#include "update/state_files.hpp"
#include "version/version.hpp"

namespace myr::update {
namespace {

CheckVerdict refuse(Rule rule, std::string text) {
    return CheckVerdict{CheckVerdict::Kind::refused, rule, std::move(text), {}};
}

// An offered text repeated in a reason: the server may send anything, the report stays short.
std::string echo(const std::string& text) {
    constexpr size_t kEcho = 64;
    return text.size() <= kEcho ? text : text.substr(0, kEcho) + "...";
}

// The name an install goes by, once: what does not parse or could not name a version directory
// is refused here, before anything is downloaded or stopped.
std::variant<version::Version, CheckVerdict> canonical(const std::string& offered) {
    auto parsed = version::parse(offered);
    if (!parsed) {
        return refuse(Rule::unparsable_version,
                      "offered version \"" + echo(offered) + "\" does not parse");
    }
    const std::string canon = version::to_string(*parsed);
    if (canon.size() > version::kMaxLength) {
        return refuse(Rule::version_too_long,
                      "offered version \"" + echo(offered) + "\" is " +
                          std::to_string(canon.size()) +
                          " characters; a version names a directory on the volume and may have "
                          "at most " +
                          std::to_string(version::kMaxLength));
    }
    return *parsed;
}

// The same precedence as the active version: installed when it is that version with the bytes
// it was installed from. Build metadata does not order versions (semver §10), so another build
// of the active version is neither newer nor older, and a package hash other than the one the
// active version was installed with is a re-spun release: both are refused rather than installed
// over the running collector (the directory would be the same or unordered, and the report would
// claim bytes that were never fetched).
CheckVerdict same_as_active(const std::string& canon, const OfferedPackage& pkg,
                            const Inspection& in) {
    if (canon != in.active) {
        return refuse(Rule::rebuild, "version " + canon + " differs from the active " + in.active +
                                         " only in build metadata, which does not order "
                                         "versions: another build is not installed over the "
                                         "running one; offer it under a new version");
    }
    if (!in.active_package_hash.empty() && !pkg.hash.empty() &&
        pkg.hash != in.active_package_hash) {
        return refuse(Rule::respun, canon + " is active with package hash " +
                                        hex::encode(in.active_package_hash) +
                                        "; the offer has hash " + hex::encode(pkg.hash) +
                                        ": a re-spun release is not installed over the running "
                                        "one; offer it under a new version");
    }
    return CheckVerdict{CheckVerdict::Kind::installed, Rule::none, {}, canon};
}

// The active version, intact, against the offered one: the same precedence is decided above;
// older is a downgrade, allowed by the setting or when it is the previous version (going back
// one step).
std::optional<CheckVerdict> against_active(const std::string& canon, const OfferedPackage& pkg,
                                           const Inspection& in, const CheckPolicy& policy) {
    if (!in.active_intact) return std::nullopt;
    switch (version::compare(canon, in.active)) {
        case version::Order::equal:
            return same_as_active(canon, pkg, in);
        case version::Order::less:
            if (policy.allow_downgrade || canon == in.previous) return std::nullopt;
            return refuse(Rule::downgrade,
                          "version " + canon + " is older than the active " + in.active +
                              " (update.allowDowngrade is false and it is not the previous "
                              "version " +
                              (in.previous.empty() ? "(none)" : in.previous) + ")");
        case version::Order::greater:
        case version::Order::not_comparable:
            return std::nullopt;
    }
    return std::nullopt;
}

// How many minor versions apart two canonical minor numbers are; nullopt when too many digits to
// count (then they are far apart unless equal).
std::optional<uint64_t> minor_distance(const std::string& a, const std::string& b) {
    if (a == b) return 0;
    if (a.size() > 18 || b.size() > 18) return std::nullopt;
    uint64_t x = std::stoull(a), y = std::stoull(b);
    return x > y ? x - y : y - x;
}

// update.maxMinorSkew: the supervisor and the collector it runs stay within that many minor
// versions of each other (and in one major version).
std::optional<CheckVerdict> against_supervisor(const version::Version& offered,
                                               const CheckPolicy& policy) {
    if (policy.max_minor_skew < 0) return std::nullopt;
    auto sup = version::parse(policy.supervisor_version);
    if (!sup) return std::nullopt;  // unknown: the runtime said so at start
    const std::string canon = version::to_string(offered);
    const std::string setting =
        " (update.maxMinorSkew is " + std::to_string(policy.max_minor_skew) + ")";
    if (offered.major != sup->major) {
        return refuse(Rule::minor_skew, "version " + canon +
                                            " has another major version than the supervisor's " +
                                            policy.supervisor_version + setting);
    }
    auto d = minor_distance(offered.minor, sup->minor);
    if (d && *d <= static_cast<uint64_t>(policy.max_minor_skew)) return std::nullopt;
    std::string how_far =
        d ? std::to_string(*d) : "more than " + std::to_string(policy.max_minor_skew);
    return refuse(Rule::minor_skew, "version " + canon + " is " + how_far +
                                        " minor versions from the supervisor's " +
                                        policy.supervisor_version + setting);
}

// "1638400 (1.6 MiB)": bytes for programs, a size for people.
std::string bytes_and_size(uint64_t n) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(n);
    size_t u = 0;
    while (v >= 1024 && u + 1 < std::size(units)) {
        v /= 1024;
        ++u;
    }
    char size[32];
    std::snprintf(size, sizeof size, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return std::to_string(n) + " (" + size + ")";
}

constexpr uint64_t kRoomSlack = 64 * 1024;

// Room first. Before its archive is fetched, the offered binary is estimated by the active
// binary's size (releases of one collector distribution are of similar size); the extraction then
// checks each member's own size before writing it. The binary lands in the volume's staging and
// stays as a version directory next to the active one, and the previous version is only removed by
// the GC after a commit: nothing on the volume counts as freed before. The slack covers the
// marker and the directories.
std::optional<CheckVerdict> against_room(const Inspection& in) {
    if (in.active_size == 0 || !in.volume_room) return std::nullopt;
    const uint64_t need = in.active_size + kRoomSlack;
    if (in.volume_room->available >= need) return std::nullopt;
    return refuse(Rule::no_room,
                  "not enough space on " + in.volume_room->path + ": need " + bytes_and_size(need) +
                      ", have " + bytes_and_size(in.volume_room->available) +
                      "; the new binary is estimated by the size of the active " + in.active);
}

// last-attempt.json may come from an older build that stored the offered name (`v0.118.0`):
// both sides are compared in canonical form.
bool same_version(const std::string& stored, const std::string& canon) {
    auto v = version::parse(stored);
    return (v ? version::to_string(*v) : stored) == canon;
}

// The quarantine (docs/update.md, "Failure classes"): a deterministic failure of this very package
// (hash and version) keeps it out, so that the server offering it again gets the recorded failure
// and the artifact server no request. It ends when the offer changes, when update.quarantineFor
// has passed since the failure was recorded, or when `myriarch-updater forget` lifted it. A
// transient failure whose retries ran out and an install a restart interrupted are tried again.
std::optional<CheckVerdict> quarantine(const OfferedPackage& pkg, const std::string& canon,
                                       const std::optional<Attempt>& last,
                                       const CheckPolicy& policy) {
    if (!last || !quarantines(*last) || last->package_hash_hex != hex::encode(pkg.hash) ||
        !same_version(last->version, canon)) {
        return std::nullopt;
    }
    // A signature refused under a root the operator has since replaced is checked again: the
    // refusal may have been the root's (another CA, a rotated log key), not the package's.
    if (!last->trust.empty() && last->trust != policy.trust) return std::nullopt;
    std::string until = "until the offer changes";
    if (auto end = quarantine_end(*last, policy.quarantine_for)) {
        if (policy.now >= *end) return std::nullopt;
        until = "until " + format_rfc3339(*end);
    }
    return refuse(Rule::quarantined,
                  "quarantined: " + last->reason + " (" + until + " or myriarch-updater forget)");
}

}  // namespace

const char* to_string(Rule r) {
    switch (r) {
        case Rule::none:
            return "none";
        case Rule::unparsable_version:
            return "unparsable-version";
        case Rule::version_too_long:
            return "version-too-long";
        case Rule::below_minimum:
            return "below-minimum";
        case Rule::downgrade:
            return "downgrade";
        case Rule::rebuild:
            return "rebuild";
        case Rule::respun:
            return "respun";
        case Rule::minor_skew:
            return "minor-skew";
        case Rule::quarantined:
            return "quarantined";
        case Rule::no_file:
            return "no-file";
        case Rule::bad_content_hash:
            return "bad-content-hash";
        case Rule::url_refused:
            return "url-refused";
        case Rule::no_room:
            return "no-room";
    }
    return "?";
}

FailureClass class_of(Rule r) {
    return r == Rule::quarantined ? FailureClass::deterministic : FailureClass::refused;
}

CheckVerdict check_offer(const OfferedPackage& pkg, const Inspection& in, const CheckPolicy& policy,
                         const UrlCheck& check_url) {
    auto parsed = canonical(pkg.version);
    if (auto* refused = std::get_if<CheckVerdict>(&parsed)) return *refused;
    const version::Version& offered = std::get<version::Version>(parsed);
    const std::string canon = version::to_string(offered);
    if (policy.minimum_version &&
        version::compare(canon, *policy.minimum_version) == version::Order::less) {
        return refuse(Rule::below_minimum, "version " + canon + " is below update.minimumVersion " +
                                               *policy.minimum_version);
    }
    if (auto v = against_active(canon, pkg, in, policy)) return *v;
    if (auto v = against_supervisor(offered, policy)) return *v;
    if (auto v = quarantine(pkg, canon, in.last_attempt, policy)) return *v;
    if (!pkg.file) return refuse(Rule::no_file, "the offer has no file to download");
    if (pkg.file->content_hash.size() != 32) {
        return refuse(Rule::bad_content_hash, "content_hash is " +
                                                  std::to_string(pkg.file->content_hash.size()) +
                                                  " bytes, not a SHA-256");
    }
    if (auto st = check_url(pkg.file->url); !st) {
        return refuse(Rule::url_refused, "download URL refused: " + st.error().message());
    }
    if (auto v = against_room(in)) return *v;
    return CheckVerdict{CheckVerdict::Kind::proceed, Rule::none, {}, canon};
}

uint64_t spool_reserve(const Inspection& in) {
    if (in.active_size == 0 || !in.volume_room || !in.spool_room) return 0;
    if (in.volume_room->device != in.spool_room->device) return 0;
    return in.active_size + kRoomSlack;
}

SignatureVerdict check_signature(const OfferedFile& file, bool require_signature) {
    using Kind = SignatureVerdict::Kind;
    if (!file.signature.empty()) return {Kind::verify, {}};
    if (!require_signature) return {Kind::unsigned_allowed, {}};
    return {Kind::refused,
            {Failure::signature,
             "signature required (update.requireSignature) but the offer has none"}};
}

std::optional<Why> check_digest(const OfferedFile& file, const std::string& sha256_hex) {
    const std::string expected = hex::encode(file.content_hash);
    if (sha256_hex == expected) return std::nullopt;
    return Why{Failure::integrity,
               "content hash mismatch: offered " + expected + ", downloaded " + sha256_hex};
}

}  // namespace myr::update
