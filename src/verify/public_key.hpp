// An ECDSA (or RSA) public key from DER SubjectPublicKeyInfo, verifying signatures over messages.
#pragma once

#include <mbedtls/pk.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/result.hpp"
#include "verify/pbjson.hpp"

namespace myr::verify {

class PublicKey {
  public:
    [[nodiscard]] static Result<PublicKey> from_spki(const Bytes& der);

    // Hashes `data` with the digest that goes with the key (SHA-384 for P-384 keys, else SHA-256)
    // and checks `sig` (DER ECDSA-Sig-Value for EC keys).
    [[nodiscard]] Status verify_message(const uint8_t* data, size_t len, const Bytes& sig) const;
    // Checks `sig` over a SHA-256 digest computed by the caller (a messageSignature signs the
    // artifact's digest, not its bytes).
    [[nodiscard]] Status verify_sha256_digest(const uint8_t* digest, const Bytes& sig) const;

  private:
    struct Free {
        void operator()(mbedtls_pk_context* pk) const;
    };
    std::unique_ptr<mbedtls_pk_context, Free> pk_;
};

// "-0x4f80 (ECP - The signature is not valid)": mbedTLS codes for error messages.
std::string mbedtls_error_text(int code);

}  // namespace myr::verify
