#include "verify/ed25519.hpp"

#include <sodium.h>

#include <cstring>

#include "verify/public_key.hpp"

namespace myr::verify {

namespace {

constexpr uint8_t kEd25519SpkiPrefix[] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
                                          0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};
constexpr size_t kPrefix = sizeof kEd25519SpkiPrefix;

}  // namespace

bool is_ed25519_spki(const Bytes& spki) {
    return spki.size() == kPrefix + crypto_sign_ed25519_PUBLICKEYBYTES &&
           std::memcmp(spki.data(), kEd25519SpkiPrefix, kPrefix) == 0;
}

Status ed25519_verify(const Bytes& spki, const uint8_t* data, size_t len, const Bytes& sig) {
    if (!is_ed25519_spki(spki)) return fail("not an Ed25519 public key");
    if (sig.size() != crypto_sign_ed25519_BYTES) {
        return fail("Ed25519 signature is " + std::to_string(sig.size()) + " bytes, not 64");
    }
    // No sodium_init(): it selects CPU-specific code for the primitives that dispatch at run time
    // (BLAKE2b, Argon2, ChaCha20, ...) and seeds the random source; Ed25519 verification does
    // neither. The Ed25519 function is called directly: the generic crypto_sign_verify_detached
    // would also link key generation.
    if (crypto_sign_ed25519_verify_detached(sig.data(), data, len, spki.data() + kPrefix) != 0) {
        return fail("Ed25519 signature does not verify");
    }
    return {};
}

Status verify_with_spki(const Bytes& spki, const uint8_t* data, size_t len, const Bytes& sig) {
    if (is_ed25519_spki(spki)) return ed25519_verify(spki, data, len, sig);
    auto key = PublicKey::from_spki(spki);
    if (!key) return key.fail();
    return key->verify_message(data, len, sig);
}

}  // namespace myr::verify
