// RFC 3161 timestamps as Sigstore bundles carry them
// (verificationMaterial.timestampVerificationData.rfc3161Timestamps[].signedTimestamp): a
// TimeStampResp, or the bare TimeStampToken, i.e. a CMS SignedData (RFC 5652) whose content is a
// TSTInfo. mbedTLS 2.28 has X.509 and signatures but no CMS, so the structure is read here with
// the bounded DER reader (verify/der.hpp).
//
// A token is a verified time source when: its TSTInfo's message imprint is the hash of the
// bundle's signature bytes; the signed attributes carry contentType id-ct-TSTInfo and a
// messageDigest equal to the hash of the TSTInfo; the signer's certificate (embedded in the token,
// or else the authority's own leaf) chains to a `timestampAuthorities[]` entry of the trusted root
// whose validFor contains genTime, every certificate of that chain valid at genTime; the signer
// has the timeStamping extended key usage; and its signature over the signed attributes verifies.
#pragma once

#include <mbedtls/md.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "verify/pbjson.hpp"
#include "verify/trusted_root.hpp"

namespace myr::verify {

// Largest token accepted: Sigstore's are about 1.5 KiB with the TSA certificate embedded; 64 KiB
// leaves room for a long chain without letting one field dominate the 1 MiB bundle.
inline constexpr size_t kMaxTimestampBytes = 64 * 1024;
// Most certificates embedded in one token, and most signed attributes.
inline constexpr size_t kMaxTimestampCertificates = 16;
inline constexpr size_t kMaxSignedAttributes = 32;

// The parts of a token that verification needs, parsed (pointers are copied out, no aliasing).
struct Rfc3161Token {
    Bytes tst_info;  // the encapsulated content: TSTInfo DER
    int64_t gen_time = 0;
    mbedtls_md_type_t imprint_md = MBEDTLS_MD_NONE;
    Bytes imprint;
    std::vector<Bytes> certificates;  // embedded, DER
    Bytes signer_issuer;              // sid: issuer Name (whole TLV) and serial (INTEGER content)
    Bytes signer_serial;
    mbedtls_md_type_t digest_md = MBEDTLS_MD_NONE;
    Bytes signed_attributes;  // re-tagged as SET OF (0x31): what the signature covers
    Bytes message_digest;     // the messageDigest attribute
    mbedtls_md_type_t signature_md = MBEDTLS_MD_NONE;
    Bytes signature;
};

// Errors name the structure that is wrong ("SignerInfo.signedAttrs: ...").
[[nodiscard]] Result<Rfc3161Token> parse_rfc3161(const Bytes& der);

struct VerifiedTimestamp {
    int64_t time = 0;       // genTime, Unix seconds
    std::string authority;  // the authority's uri
};

// Verifies one token against the bundle's signature bytes and the trusted root's authorities.
[[nodiscard]] Result<VerifiedTimestamp> verify_rfc3161(
    const Bytes& token, const Bytes& bundle_signature,
    const std::vector<CertificateAuthority>& authorities);

}  // namespace myr::verify
