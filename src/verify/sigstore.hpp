// Offline verification of a Sigstore bundle: the API the installer and `myriarch-updater verify`
// share. The artifact is hashed once by the caller (sha256_file, streaming) and only its digest is
// passed here; the bundle and trusted root are small documents.
//
// Supported: messageSignature bundles (v0.1, v0.2, v0.3) and DSSE envelopes carrying an in-toto
// Statement, signed by a Fulcio certificate or a managed key, with one Rekor v1 entry
// (hashedrekord 0.0.1, dsse 0.0.1, intoto 0.0.2) or, for a message signature, one Rekor v2
// hashedrekord 0.0.2 entry; RFC 3161 timestamps as time sources. Refused with a reason naming
// the missing feature: Rekor v2 dsse entries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "hash/sha256.hpp"
#include "verify/bundle.hpp"
#include "verify/identity_policy.hpp"
#include "verify/trusted_root.hpp"

namespace myr::verify {

// Who must have signed. Exactly one of `subject` (exact match) and `subject_regexp`
// (core/regex.hpp, matched against the whole SAN) is set; `issuer` is compared exactly. `fields`
// are facts of the certificate's Fulcio extensions that must match too (identity_policy.hpp).
// `subject` and `fields` are templates until bind_identity() binds them to a version:
// verify_bundle compares a `{version}` left in them literally. Or, for a bundle signed with a
// managed key, `public_key` (DER SubjectPublicKeyInfo) alone: then the bundle must carry a
// publicKey hint and a signature by that key, and no certificate identity is checked.
struct Identity {
    std::string subject;
    std::string subject_regexp;
    std::string issuer;
    std::vector<FieldRule> fields;
    Bytes public_key;
};

// The artifact's digests. An in-toto subject may name the artifact by SHA-512 only (npm's
// provenance does): a caller that has computed it passes it; empty means not computed.
struct ArtifactDigests {
    hash::Digest sha256{};
    Bytes sha512;
};

// `id` for one offered version: each `{version}` in `subject` and in the certificate fields
// replaced by `version` (version/template.hpp); an unknown placeholder is an error naming where.
// `subject_regexp` and `issuer` are never templates (the configuration refuses one there).
[[nodiscard]] Result<Identity> bind_identity(const Identity& id, std::string_view version);

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
    std::string subject;  // the SAN that matched; for a managed key "key sha256:<SPKI hash>"
    std::string issuer;   // empty for a managed key
    // The verified signing time, Unix seconds: the SET's integratedTime when there is one, else
    // the first timestamp's genTime.
    int64_t integrated_time = 0;
    std::vector<TimeSource> time_sources;  // every verified time, timestamps first
    std::string log;                       // the transparency log entry: "<log URL> index <n>"
    std::vector<FieldCheck> fields;
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
[[nodiscard]] Result<Verified> verify_bundle(const TrustedRoot& root, const Bundle& bundle,
                                             const ArtifactDigests& artifact,
                                             const Identity& identity, const Options& options = {});

}  // namespace myr::verify
