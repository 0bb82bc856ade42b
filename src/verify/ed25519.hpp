// Ed25519 signatures (RFC 8032), as Rekor v2 signs its checkpoints. mbedTLS 2.28 has no Ed25519;
// libsodium's crypto_sign_ed25519_verify_detached does the arithmetic (docs/dependencies.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/result.hpp"
#include "verify/pbjson.hpp"

namespace myr::verify {

// True when `spki` is a DER SubjectPublicKeyInfo with the id-Ed25519 algorithm (RFC 8410).
bool is_ed25519_spki(const Bytes& spki);

// Verifies a 64-byte Ed25519 signature over `data` with the key of `spki` (RFC 8410: the 12-byte
// prefix 30 2a 30 05 06 03 2b 65 70 03 21 00, then the 32-byte key, nothing else).
[[nodiscard]] Status ed25519_verify(const Bytes& spki, const uint8_t* data, size_t len,
                                    const Bytes& sig);

// A log key of either kind (ECDSA/RSA through mbedTLS, or Ed25519) verifying a message.
[[nodiscard]] Status verify_with_spki(const Bytes& spki, const uint8_t* data, size_t len,
                                      const Bytes& sig);

}  // namespace myr::verify
