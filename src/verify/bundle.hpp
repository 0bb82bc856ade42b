// A Sigstore bundle (v0.1, v0.2, v0.3), parsed into plain data. Parsing checks shape only;
// verify_bundle() checks meaning. The content is a messageSignature or a DSSE envelope; the
// material a Fulcio certificate (or chain) or a managed key's hint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "verify/dsse.hpp"
#include "verify/pbjson.hpp"

namespace myr::verify {

enum class BundleVersion { v0_1, v0_2, v0_3 };

struct InclusionProof {
    int64_t log_index = 0;
    int64_t tree_size = 0;
    Bytes root_hash;
    std::vector<Bytes> hashes;
    std::string checkpoint;  // the signed-note envelope, empty when absent
};

struct TlogEntry {
    int64_t log_index = 0;
    Bytes log_id;
    std::string kind;     // "hashedrekord", "dsse", "intoto"
    std::string version;  // "0.0.1" (Rekor v1); "0.0.2" is Rekor v2
    int64_t integrated_time = 0;
    Bytes signed_entry_timestamp;  // empty without an inclusionPromise
    std::optional<InclusionProof> inclusion_proof;
    Bytes canonicalized_body;
};

enum class Material { certificate, public_key };
enum class Content { message_signature, dsse_envelope };

struct Bundle {
    BundleVersion version = BundleVersion::v0_3;
    Material material = Material::certificate;
    // DER, leaf first. v0.1/v0.2 may carry further chain certificates; they are not trusted.
    std::vector<Bytes> certificates;
    std::vector<TlogEntry> tlog_entries;
    // timestampVerificationData.rfc3161Timestamps[].signedTimestamp, DER (verify/timestamp.hpp).
    std::vector<Bytes> rfc3161_timestamps;
    Content content = Content::message_signature;
    std::string digest_algorithm;  // messageSignature.messageDigest.algorithm
    Bytes message_digest;
    Bytes signature;
    Envelope envelope;  // when content == dsse_envelope
};

// Largest bundle accepted.
inline constexpr size_t kMaxBundleBytes = 1024 * 1024;
// Most hashes accepted in an inclusion proof (a tree of 2^64 leaves needs 64).
inline constexpr size_t kMaxProofHashes = 64;

// Errors read "bundle: <field>: <why>".
[[nodiscard]] Result<Bundle> parse_bundle(std::string_view json);

}  // namespace myr::verify
