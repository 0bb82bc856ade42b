#include "verify/ed25519.hpp"

#include <sodium.h>
#include <string.h>

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

// The three helpers of libsodium's utils.o that its Ed25519 verifier calls (open.o: sodium_memcmp;
// sign.o, for the hash set-up open.o takes from it, and the SHA-512 code: sodium_memzero;
// ed25519_ref10.o: sodium_is_zero). utils.o also holds the guarded allocator, which pulls in
// randombytes and core.o (sodium_init), and core.o every runtime-dispatched primitive (Argon2,
// BLAKE2b, ChaCha20, Salsa20, Poly1305, Curve25519): about 120 kB that nothing here calls, and
// that section GC cannot drop from Debian's archive. Defined here, the static link resolves them
// before it reaches libsodium.a, so utils.o and all that stay out (docs/dependencies.md); should a
// later libsodium need another symbol of utils.o, the link fails loudly with a duplicate
// definition. Same contracts as libsodium's: comparisons in constant time, zeroing that the
// compiler may not remove. Against the shared library (the test builds) they take its place.
void sodium_memzero(void* const pnt, const size_t len) {
    explicit_bzero(pnt, len);
}

int sodium_memcmp(const void* const b1_, const void* const b2_, size_t len) {
    const auto* b1 = static_cast<const volatile unsigned char*>(b1_);
    const auto* b2 = static_cast<const volatile unsigned char*>(b2_);
    unsigned d = 0;
    for (size_t i = 0; i < len; ++i) d |= static_cast<unsigned>(b1[i] ^ b2[i]);
    return d == 0 ? 0 : -1;
}

int sodium_is_zero(const unsigned char* n, const size_t nlen) {
    const volatile unsigned char* p = n;
    unsigned d = 0;
    for (size_t i = 0; i < nlen; ++i) d |= p[i];
    return d == 0 ? 1 : 0;
}
