// Who signed a bundle: the Fulcio leaf certificate, or a managed key (verificationMaterial
// .publicKey, checked against a key the operator gives). The transparency-log body records the
// same signer as PEM; both the body checks and the signature checks go through this one type.
#pragma once

#include <string_view>

#include "core/result.hpp"
#include "verify/pbjson.hpp"
#include "verify/public_key.hpp"

namespace myr::verify {

struct Signer {
    enum class Kind { certificate, key };
    Kind kind = Kind::certificate;
    Bytes der;  // the leaf certificate, or the key's SubjectPublicKeyInfo
};

// The signer's public key, ready to verify signatures.
[[nodiscard]] Result<PublicKey> signer_key(const Signer& signer);

// A Rekor body's verifier (PEM bytes: a CERTIFICATE for certificates, a PUBLIC KEY for keys)
// must be exactly this signer.
[[nodiscard]] Status check_body_verifier(const Bytes& pem, const Signer& signer);

// A PEM "PUBLIC KEY" (SubjectPublicKeyInfo) to DER, as `verify --key FILE` reads it.
[[nodiscard]] Result<Bytes> public_key_der_from_pem(std::string_view pem);

}  // namespace myr::verify
