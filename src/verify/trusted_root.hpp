// The Sigstore trusted root (`trusted_root.json`): the only trust input of offline verification.
// Keys are kept as raw SubjectPublicKeyInfo bytes and parsed when used (ECDSA and RSA by mbedTLS,
// Ed25519 by verify/ed25519.hpp), so a root that lists a key kind this build cannot use still
// loads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "verify/pbjson.hpp"

namespace myr::verify {

// A closed interval [start, end] in Unix seconds. A missing start makes the entry unusable (the
// protobuf field is required); a missing end means "still valid".
struct ValidFor {
    std::optional<int64_t> start;
    std::optional<int64_t> end;

    bool contains(int64_t t) const { return start && t >= *start && (!end || t <= *end); }
};

// A transparency log (Rekor) or certificate transparency log.
struct LogKey {
    std::string base_url;
    Bytes log_id;             // SHA-256 of the DER SubjectPublicKeyInfo for the logs we can verify
    Bytes spki;               // DER SubjectPublicKeyInfo
    std::string key_details;  // e.g. PKIX_ECDSA_P256_SHA_256
    ValidFor valid_for;
};

struct CertificateAuthority {
    std::string uri;
    std::vector<Bytes> chain;  // DER, the issuer of the leaf first, the root last
    ValidFor valid_for;
};

struct TrustedRoot {
    std::vector<CertificateAuthority> certificate_authorities;
    std::vector<LogKey> tlogs;
    std::vector<LogKey> ctlogs;
    // RFC 3161 timestamp authorities (verify/timestamp.hpp): the TSA's leaf first, root last.
    std::vector<CertificateAuthority> timestamp_authorities;
};

// Largest trusted_root.json accepted.
inline constexpr size_t kMaxTrustedRootBytes = 4 * 1024 * 1024;

[[nodiscard]] Result<TrustedRoot> parse_trusted_root(std::string_view json);
// Reads and parses `path`; errors name the path.
[[nodiscard]] Result<TrustedRoot> load_trusted_root(const std::string& path);

// The newest validity start among the root's CAs and logs, Unix seconds: how old the newest trust
// material is (`myriarch-updater status`, and a root nobody refreshed grows old). nullopt when no
// entry has a start.
std::optional<int64_t> newest_validity_start(const TrustedRoot& root);

// Reads a whole small file, refusing one larger than `max_bytes`.
[[nodiscard]] Result<std::string> read_small_file(const std::string& path, size_t max_bytes);

}  // namespace myr::verify
