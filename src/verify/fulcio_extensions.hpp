// The extensions Fulcio puts under 1.3.6.1.4.1.57264.1 (the Fulcio project's OID directory): who
// the OIDC issuer was and which CI run asked for the certificate. Arcs 1-6 (the issuer and the
// GitHub workflow trigger, sha, name, repository and ref, deprecated) are raw strings; arcs 8-22
// are DER UTF8Strings. Arc 7 (an OtherName SAN) and arcs Fulcio adds later are not read here.
//
// Values are bounded and must not repeat (RFC 5280 section 4.2: one instance per extension); a
// certificate that breaks either rule is refused when it is parsed.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/result.hpp"

namespace myr::verify {

// The last arc of 1.3.6.1.4.1.57264.1.<arc>.
enum class FulcioOid : uint8_t {
    issuer_v1 = 1,
    github_workflow_trigger = 2,
    github_workflow_sha = 3,
    github_workflow_name = 4,
    github_workflow_repository = 5,
    github_workflow_ref = 6,
    issuer = 8,
    build_signer_uri = 9,
    build_signer_digest = 10,
    runner_environment = 11,
    source_repository_uri = 12,
    source_repository_digest = 13,
    source_repository_ref = 14,
    source_repository_identifier = 15,
    source_repository_owner_uri = 16,
    source_repository_owner_identifier = 17,
    build_config_uri = 18,
    build_config_digest = 19,
    build_trigger = 20,
    run_invocation_uri = 21,
    source_repository_visibility = 22,
};

// The largest extension value accepted; Fulcio's are URIs and names well under this.
inline constexpr size_t kMaxFulcioValueBytes = 4096;

// "1.3.6.1.4.1.57264.1.14 (Source Repository Ref)", for messages.
std::string describe(FulcioOid oid);

class FulcioExtensions {
  public:
    // For an extension OID (DER contents): its arc when it is one this class reads, else nothing.
    static std::optional<FulcioOid> recognise(const uint8_t* oid, size_t len);
    // Records the extension value (the contents of its OCTET STRING): refused when it repeats, is
    // longer than kMaxFulcioValueBytes, is not a UTF8String where one is due, or holds control
    // characters.
    [[nodiscard]] Status add(FulcioOid oid, const uint8_t* value, size_t len);
    // The decoded value, nothing when the certificate does not carry the extension.
    const std::optional<std::string>& get(FulcioOid oid) const;

  private:
    std::array<std::optional<std::string>, 23> values_;
};

}  // namespace myr::verify
