// Offline verification of a Sigstore bundle: the API the installer and `myriarch-updater verify`
// share. The artifact is hashed once by the caller (sha256_file, streaming) and only its digest is
// passed here; the bundle and trusted root are small documents.
//
// Supported: messageSignature bundles (v0.1, v0.2, v0.3) with a Fulcio certificate and one Rekor v1
// hashedrekord/0.0.1 entry. Refused with a reason naming the missing feature: DSSE envelopes,
// managed public keys, Rekor v2 entries, and RFC 3161 timestamps as the only time source.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "hash/sha256.hpp"
#include "verify/bundle.hpp"
#include "verify/identity_policy.hpp"
#include "verify/trusted_root.hpp"

namespace myr::verify {

// Who must have signed. Exactly one of `subject` (exact match) and `subject_regexp` (ECMAScript,
// matched against the whole SAN) is set; `issuer` is compared exactly. `fields` are facts of the
// certificate's Fulcio extensions that must match too (identity_policy.hpp), already bound to a
// version: a `{version}` left in them is compared literally.
struct Identity {
    std::string subject;
    std::string subject_regexp;
    std::string issuer;
    std::vector<FieldRule> fields;
};

struct Verified {
    std::string subject;  // the SAN that matched
    std::string issuer;
    int64_t integrated_time = 0;  // the verified signing time, Unix seconds
    std::string time_source;      // what proved integrated_time, e.g. "SET of <log URL>"
    std::string log;              // the transparency log entry: "<log URL> index <n>"
    std::vector<FieldCheck> fields;
};

// Errors read "<step>: <reason>", e.g. "inclusion proof: computed root != rootHash". Steps:
// bundle, identity policy, certificate, tlog entry, SET, inclusion proof, checkpoint,
// certificate chain, SCT, artifact, tlog body, signature, identity.
[[nodiscard]] Result<Verified> verify_bundle(const TrustedRoot& root, std::string_view bundle_json,
                                             const hash::Digest& artifact_sha256,
                                             const Identity& identity);
[[nodiscard]] Result<Verified> verify_bundle(const TrustedRoot& root, const Bundle& bundle,
                                             const hash::Digest& artifact_sha256,
                                             const Identity& identity);

}  // namespace myr::verify
