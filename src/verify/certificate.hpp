// X.509 certificates as Fulcio issues them: parsing with the Sigstore extensions captured,
// path validation at a given time (not now: Fulcio leaves live ten minutes), the code-signing
// usage checks, the identity (SAN and OIDC issuer) and the embedded SCTs.
#pragma once

#include <mbedtls/x509_crt.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "verify/fulcio_extensions.hpp"
#include "verify/pbjson.hpp"
#include "verify/trusted_root.hpp"

namespace myr::verify {

class Certificate {
  public:
    // Unknown critical extensions are refused, as RFC 5280 requires.
    [[nodiscard]] static Result<std::unique_ptr<Certificate>> parse(const Bytes& der);
    ~Certificate();
    Certificate(const Certificate&) = delete;
    Certificate& operator=(const Certificate&) = delete;

    const mbedtls_x509_crt& crt() const { return crt_; }
    bool self_signed() const;
    int64_t not_before() const;
    int64_t not_after() const;

    // SAN values a Fulcio identity can be: URIs and email addresses.
    std::vector<std::string> identities() const;
    // The OIDC issuer: extension 1.3.6.1.4.1.57264.1.8 (a DER UTF8String), else the legacy
    // 1.3.6.1.4.1.57264.1.1 (raw bytes).
    [[nodiscard]] Result<std::string> oidc_issuer() const;
    // KeyUsage digitalSignature and ExtendedKeyUsage codeSigning, both required to be present.
    [[nodiscard]] Status check_code_signing() const;
    // The Fulcio extensions (OIDC issuer, CI workflow and source repository facts).
    const FulcioExtensions& fulcio() const { return fulcio_; }
    // The SCT list extension value (TLS-encoded SignedCertificateTimestampList), empty if absent.
    const Bytes& sct_list() const { return sct_list_; }

  private:
    Certificate();
    static int on_extension(void* ctx, const mbedtls_x509_crt* crt, const mbedtls_x509_buf* oid,
                            int critical, const unsigned char* p, const unsigned char* end);

    mbedtls_x509_crt crt_;
    FulcioExtensions fulcio_;
    std::string extension_problem_;  // why on_extension refused, for parse()'s message
    Bytes sct_list_;
};

// Validates leaf -> ca.chain at time `t` (Unix seconds): signatures and CA constraints as mbedTLS
// checks them, and each certificate's validity period against `t` instead of the wall clock.
[[nodiscard]] Status verify_chain_at(const Bytes& leaf_der, const CertificateAuthority& ca,
                                     int64_t t);

// RFC 6962 section 3.2: at least one embedded SCT must be signed by a trusted CT log valid at the
// SCT's time. `issuer_der` is the certificate that issued the leaf.
[[nodiscard]] Status verify_embedded_scts(const Certificate& leaf, const Bytes& issuer_der,
                                          const std::vector<LogKey>& ctlogs);

int64_t x509_time_seconds(const mbedtls_x509_time& t);

}  // namespace myr::verify
