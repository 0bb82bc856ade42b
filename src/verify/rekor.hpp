// Rekor v1 transparency-log evidence: the signed entry timestamp (SET), the RFC 6962/9162 Merkle
// inclusion proof, the signed checkpoint, and the hashedrekord body's agreement with the bundle.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "hash/sha256.hpp"
#include "verify/bundle.hpp"
#include "verify/signer.hpp"
#include "verify/trusted_root.hpp"

namespace myr::verify {

// The log in `logs` whose logId equals `log_id` and whose key is valid at `t`.
[[nodiscard]] Result<const LogKey*> find_log(const std::vector<LogKey>& logs, const Bytes& log_id,
                                             int64_t t);

// ECDSA over the canonical JSON {"body","integratedTime","logID","logIndex"}.
[[nodiscard]] Status verify_signed_entry_timestamp(const TlogEntry& entry, const LogKey& log);

// Recomputes the root from the leaf (the canonicalized body) and the proof's hashes.
[[nodiscard]] Result<hash::Digest> inclusion_root(const Bytes& leaf, uint64_t index,
                                                  uint64_t tree_size,
                                                  const std::vector<Bytes>& hashes);
[[nodiscard]] Status verify_inclusion_proof(const TlogEntry& entry);

// The checkpoint (a signed note) must carry a valid signature by `log` and commit to the proof's
// tree size and root hash.
[[nodiscard]] Status verify_checkpoint(const InclusionProof& proof, const LogKey& log);

// hashedrekord 0.0.1: the body names the artifact digest, the bundle signature and the signer
// (the leaf certificate, or the managed key).
[[nodiscard]] Status check_hashedrekord_body(const TlogEntry& entry, const Bundle& bundle,
                                             const hash::Digest& artifact_sha256,
                                             const Signer& signer);

}  // namespace myr::verify
