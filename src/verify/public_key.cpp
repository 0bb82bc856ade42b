#include "verify/public_key.hpp"

#include <mbedtls/ecp.h>
#include <mbedtls/error.h>
#include <mbedtls/sha256.h>
#include <mbedtls/sha512.h>

#include <cstdio>

namespace myr::verify {

void PublicKey::Free::operator()(mbedtls_pk_context* pk) const {
    mbedtls_pk_free(pk);
    delete pk;
}

std::string mbedtls_error_text(int code) {
    char text[160];
    mbedtls_strerror(code, text, sizeof text);
    char out[200];
    std::snprintf(out, sizeof out, "-0x%04x (%s)", static_cast<unsigned>(-code), text);
    return out;
}

Result<PublicKey> PublicKey::from_spki(const Bytes& der) {
    PublicKey k;
    k.pk_.reset(new mbedtls_pk_context);
    mbedtls_pk_init(k.pk_.get());
    if (der.empty()) return fail("empty public key");
    int r = mbedtls_pk_parse_public_key(k.pk_.get(), der.data(), der.size());
    if (r != 0) return fail("unusable public key: " + mbedtls_error_text(r));
    return k;
}

Status PublicKey::verify_message(const uint8_t* data, size_t len, const Bytes& sig) const {
    unsigned char digest[64];
    mbedtls_md_type_t md = MBEDTLS_MD_SHA256;
    size_t dlen = 32;
    if (mbedtls_pk_can_do(pk_.get(), MBEDTLS_PK_ECKEY) &&
        mbedtls_pk_ec(*pk_)->grp.id == MBEDTLS_ECP_DP_SECP384R1) {
        md = MBEDTLS_MD_SHA384;
        dlen = 48;
        mbedtls_sha512_ret(data, len, digest, 1);
    } else {
        mbedtls_sha256_ret(data, len, digest, 0);
    }
    int r = mbedtls_pk_verify(pk_.get(), md, digest, dlen, sig.data(), sig.size());
    if (r != 0) return fail("signature does not verify: " + mbedtls_error_text(r));
    return {};
}

Status PublicKey::verify_sha256_digest(const uint8_t* digest, const Bytes& sig) const {
    int r = mbedtls_pk_verify(pk_.get(), MBEDTLS_MD_SHA256, digest, 32, sig.data(), sig.size());
    if (r != 0) return fail("signature does not verify: " + mbedtls_error_text(r));
    return {};
}

}  // namespace myr::verify
