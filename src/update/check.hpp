// Checking, decided before anything is done (RAUC's r_install_make_plans): the offered package,
// what the volume says and the policy in, a verdict out. It posts no event and touches nothing;
// the installer acts on the verdict. The rules run in the order of the issue, and each refusal
// names its rule (a code for programs, a sentence for the report).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "core/time.hpp"
#include "update/ports.hpp"

namespace myr::update {

struct CheckPolicy {
    std::optional<std::string> minimum_version;  // canonical
    bool allow_downgrade = false;
    // update.maxMinorSkew against the supervisor's version (canonical; "" when unknown, and then
    // the rule is not applied); a negative skew turns the rule off.
    int max_minor_skew = 1;
    std::string supervisor_version;
    // update.quarantineFor (zero: until the offer changes), measured from the failure's record
    // to `now`.
    Duration quarantine_for = std::chrono::hours(24);
    WallTime now{};
    // The trusted root in use (Verifier::trust): a signature refused under another root is not
    // held against the package.
    std::string trust;
};

enum class Rule {
    none,                // not refused
    unparsable_version,  // the offered version is not a semantic version
    version_too_long,    // its canonical form is longer than version::kMaxLength
    below_minimum,       // older than update.minimumVersion
    downgrade,           // older than the active one, not allowed, not the previous one
    rebuild,             // the active version with other build metadata: no order between them
    respun,              // the active version with another package hash
    minor_skew,          // too many minor versions from the supervisor's (update.maxMinorSkew)
    quarantined,         // last-attempt.json: this package failed deterministically, recently
    no_file,             // nothing to download
    bad_content_hash,    // content_hash is not a SHA-256
    url_refused,         // the downloader's URL policy says no
    no_room,             // the volume has no room for the new binary (estimated; not an attempt)
};
const char* to_string(Rule r);
// A Checking refusal's failure class (docs/update.md, "Failure classes"): the quarantine answers
// from the record of a deterministic failure; every other rule is our policy or the node's state.
FailureClass class_of(Rule r);

struct CheckVerdict {
    enum class Kind { proceed, installed, refused };
    Kind kind = Kind::proceed;
    Rule rule = Rule::none;  // with refused
    std::string text;        // with refused: why, for the report
    // With proceed and installed: the offered version in canonical form, the one name the
    // install goes by from here on (journal, volume, state files, comparisons).
    std::string version;
};

// The downloader's URL policy, asked only once every other rule passed.
using UrlCheck = std::function<Status(const std::string& url)>;

CheckVerdict check_offer(const OfferedPackage& pkg, const Inspection& in, const CheckPolicy& policy,
                         const UrlCheck& check_url);

// What the download must leave free on the spool's filesystem besides the archive: the new binary
// (estimated as in the room rule) when the spool shares the volume's filesystem, else 0.
uint64_t spool_reserve(const Inspection& in);

// Checking, once the policy passed and before anything is fetched: an offer without a bundle
// passes only when signatures are not required. A bundle that is there is always verified,
// required or not (a bad signature is a sign of tampering, not a missing feature), and against the
// offered content hash, so that a refused signature costs no download.
struct SignatureVerdict {
    enum class Kind { verify, unsigned_allowed, refused };
    Kind kind = Kind::verify;
    Why why;  // with refused
};
SignatureVerdict check_signature(const OfferedFile& file, bool require_signature);

// Verifying, after the download: the digest the download computed must be the offered content
// hash, the one the signature was verified against. nullopt when it is.
std::optional<Why> check_digest(const OfferedFile& file, const std::string& sha256_hex);

}  // namespace myr::update
