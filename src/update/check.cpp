#include "update/check.hpp"

#include "core/hex.hpp"
#include "version/version.hpp"

namespace myr::update {
namespace {

CheckVerdict refuse(Rule rule, std::string text) {
    return CheckVerdict{CheckVerdict::Kind::refused, rule, std::move(text)};
}

// The active version, intact, against the offered one: equal is installed already; older is a
// downgrade, allowed by the setting or when it is the previous version (going back one step).
std::optional<CheckVerdict> against_active(const std::string& canon, const Inspection& in,
                                           const CheckPolicy& policy) {
    if (!in.active_intact) return std::nullopt;
    switch (version::compare(canon, in.active)) {
        case version::Order::equal:
            return CheckVerdict{CheckVerdict::Kind::installed, Rule::none, {}};
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

}  // namespace

const char* to_string(Rule r) {
    switch (r) {
        case Rule::none:
            return "none";
        case Rule::unparsable_version:
            return "unparsable-version";
        case Rule::below_minimum:
            return "below-minimum";
        case Rule::downgrade:
            return "downgrade";
        case Rule::failed_before:
            return "failed-before";
        case Rule::no_file:
            return "no-file";
        case Rule::bad_content_hash:
            return "bad-content-hash";
        case Rule::url_refused:
            return "url-refused";
    }
    return "?";
}

CheckVerdict check_offer(const OfferedPackage& pkg, const Inspection& in, const CheckPolicy& policy,
                         const UrlCheck& check_url) {
    auto parsed = version::parse(pkg.version);
    if (!parsed) {
        return refuse(Rule::unparsable_version,
                      "offered version \"" + pkg.version + "\" does not parse");
    }
    const std::string canon = version::to_string(*parsed);
    if (policy.minimum_version &&
        version::compare(canon, *policy.minimum_version) == version::Order::less) {
        return refuse(Rule::below_minimum, "version " + canon + " is below update.minimumVersion " +
                                               *policy.minimum_version);
    }
    if (auto v = against_active(canon, in, policy)) return *v;
    const std::optional<Attempt>& last = in.last_attempt;
    if (last && last->outcome != Outcome::installed && !last->package_hash_hex.empty() &&
        last->package_hash_hex == hex::encode(pkg.hash) && last->version == canon) {
        return refuse(Rule::failed_before,
                      "failed before, not tried again until the offer changes: " + last->reason);
    }
    if (!pkg.file) return refuse(Rule::no_file, "the offer has no file to download");
    if (pkg.file->content_hash.size() != 32) {
        return refuse(Rule::bad_content_hash, "content_hash is " +
                                                  std::to_string(pkg.file->content_hash.size()) +
                                                  " bytes, not a SHA-256");
    }
    if (auto st = check_url(pkg.file->url); !st) {
        return refuse(Rule::url_refused, "download URL refused: " + st.error().message());
    }
    return CheckVerdict{};
}

ArtifactVerdict check_artifact(const OfferedFile& file, const std::string& sha256_hex,
                               bool require_signature) {
    using Kind = ArtifactVerdict::Kind;
    const std::string expected = hex::encode(file.content_hash);
    if (sha256_hex != expected) {
        return {Kind::refused,
                {Failure::integrity,
                 "content hash mismatch: offered " + expected + ", downloaded " + sha256_hex}};
    }
    if (!file.signature.empty()) return {Kind::verify, {}};
    if (!require_signature) return {Kind::unsigned_allowed, {}};
    return {Kind::refused,
            {Failure::signature,
             "signature required (update.requireSignature) but the offer has none"}};
}

}  // namespace myr::update
