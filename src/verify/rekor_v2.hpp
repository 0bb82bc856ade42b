// Rekor v2 (rekor-tiles) entries: the hashedrekord 0.0.2 body. Its checkpoint is a C2SP signed note
// whose key ID is SHA-256(origin || "\n" || 0x01 || Ed25519 key), the same bytes the trusted root
// lists as the log's keyId, so the key hint is the keyId's first four bytes as for Rekor v1;
// verify_checkpoint (rekor.hpp) checks both. There is no SET: the time comes from timestamps.
#pragma once

#include <json-c/json.h>

#include "core/result.hpp"
#include "hash/sha256.hpp"
#include "verify/bundle.hpp"

namespace myr::verify {

// The body's spec.hashedRekordV002: data.algorithm SHA2_256 with data.digest the artifact's,
// signature.content the bundle's signature, signature.verifier.x509Certificate the leaf.
[[nodiscard]] Status check_hashedrekord_v002(json_object* body, const Bundle& bundle,
                                             const hash::Digest& artifact_sha256,
                                             const Bytes& leaf_der);

}  // namespace myr::verify
