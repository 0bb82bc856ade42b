// Offline verification of a Sigstore bundle: the API the installer and `myriarch-updater verify`
// share. The artifact is hashed once by the caller (sha256_file, streaming) and only its digest is
// passed here; the bundle and trusted root are small documents.
//
// Supported: messageSignature bundles (v0.1, v0.2, v0.3) with a Fulcio certificate, one Rekor v1
// hashedrekord/0.0.1 or Rekor v2 hashedrekord/0.0.2 entry, and RFC 3161 timestamps. Refused with
// a reason naming the missing feature: DSSE envelopes, managed public keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "hash/sha256.hpp"
#include "verify/bundle.hpp"
#include "verify/trusted_root.hpp"

namespace myr::verify {

// Who must have signed. Exactly one of `subject` (exact match) and `subject_regexp` (ECMAScript,
// matched against the whole SAN) is set; `issuer` is compared exactly.
struct Identity {
    std::string subject;
    std::string subject_regexp;
    std::string issuer;
};

// How much verified time the signature needs (docs/sigstore.md, "Time sources").
struct Options {
    // Verified time sources required: each RFC 3161 timestamp and each Rekor v1 SET counts one,
    // like sigstore-go's WithObserverTimestamps(n). Never less than 1 in effect.
    int64_t min_timestamps = 1;
};

// One verified time: a Rekor v1 SET's integratedTime or an RFC 3161 timestamp's genTime.
struct TimeSource {
    enum class Kind { set, rfc3161 };
    Kind kind = Kind::set;
    std::string authority;  // the log's baseUrl or the timestamp authority's uri
    int64_t time = 0;
    std::string kind_name() const { return kind == Kind::set ? "SET" : "RFC 3161"; }
};

struct Verified {
    std::string subject;  // the SAN that matched
    std::string issuer;
    // The verified signing time, Unix seconds: the SET's integratedTime when there is one, else
    // the first timestamp's genTime.
    int64_t integrated_time = 0;
    std::vector<TimeSource> time_sources;  // every verified time, timestamps first
};

// Errors read "<step>: <reason>", e.g. "inclusion proof: computed root != rootHash". Steps:
// bundle, identity policy, certificate, timestamp, tlog entry, SET, inclusion proof, checkpoint,
// timestamps, certificate chain, SCT, artifact, tlog body, signature, identity.
[[nodiscard]] Result<Verified> verify_bundle(const TrustedRoot& root, std::string_view bundle_json,
                                             const hash::Digest& artifact_sha256,
                                             const Identity& identity, const Options& options = {});
[[nodiscard]] Result<Verified> verify_bundle(const TrustedRoot& root, const Bundle& bundle,
                                             const hash::Digest& artifact_sha256,
                                             const Identity& identity, const Options& options = {});

}  // namespace myr::verify
