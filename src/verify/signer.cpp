#include "verify/signer.hpp"

#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>

#include <cstring>
#include <memory>

namespace myr::verify {

namespace {

// The DER SubjectPublicKeyInfo of a parsed key; mbedTLS writes it at the end of the buffer.
Result<Bytes> write_spki(mbedtls_pk_context* pk) {
    unsigned char buf[1024];
    int n = mbedtls_pk_write_pubkey_der(pk, buf, sizeof buf);
    if (n <= 0) return fail("cannot encode the public key: " + mbedtls_error_text(n));
    return Bytes(buf + sizeof buf - n, buf + sizeof buf);
}

struct PkFree {
    void operator()(mbedtls_pk_context* pk) const {
        mbedtls_pk_free(pk);
        delete pk;
    }
};

Result<Bytes> spki_of_pem_key(Bytes pem) {
    pem.push_back(0);  // mbedTLS recognises PEM by its terminating NUL
    std::unique_ptr<mbedtls_pk_context, PkFree> pk(new mbedtls_pk_context);
    mbedtls_pk_init(pk.get());
    int r = mbedtls_pk_parse_public_key(pk.get(), pem.data(), pem.size());
    if (r != 0) return fail("not a PEM public key: " + mbedtls_error_text(r));
    return write_spki(pk.get());
}

}  // namespace

Result<PublicKey> signer_key(const Signer& signer) {
    if (signer.kind == Signer::Kind::key) return PublicKey::from_spki(signer.der);
    mbedtls_x509_crt crt;
    mbedtls_x509_crt_init(&crt);
    int r = mbedtls_x509_crt_parse_der(&crt, signer.der.data(), signer.der.size());
    auto spki = r == 0 ? write_spki(&crt.pk) : Result<Bytes>(fail(mbedtls_error_text(r)));
    mbedtls_x509_crt_free(&crt);
    if (!spki) return spki.fail("leaf certificate key");
    return PublicKey::from_spki(*spki);
}

Status check_body_verifier(const Bytes& pem, const Signer& signer) {
    if (signer.kind == Signer::Kind::key) {
        auto spki = spki_of_pem_key(pem);
        if (!spki) return spki.fail("body public key");
        if (*spki != signer.der) return fail("body public key != the given key");
        return {};
    }
    Bytes text = pem;
    text.push_back(0);
    mbedtls_x509_crt crt;
    mbedtls_x509_crt_init(&crt);
    int r = mbedtls_x509_crt_parse(&crt, text.data(), text.size());
    bool same = r == 0 && crt.next == nullptr && crt.raw.len == signer.der.size() &&
                std::memcmp(crt.raw.p, signer.der.data(), signer.der.size()) == 0;
    mbedtls_x509_crt_free(&crt);
    if (r != 0) return fail("body certificate does not parse: " + mbedtls_error_text(r));
    if (!same) return fail("body certificate != bundle leaf certificate");
    return {};
}

Result<Bytes> public_key_der_from_pem(std::string_view pem) {
    return spki_of_pem_key(Bytes(pem.begin(), pem.end()));
}

}  // namespace myr::verify
