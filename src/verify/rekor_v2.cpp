#include "verify/rekor_v2.hpp"

#include <cstring>

namespace myr::verify {

Status check_hashedrekord_v002(json_object* body, const Bundle& b, const hash::Digest& artifact,
                               const Bytes& leaf_der) {
    auto spec = object_member(body, "spec", "spec");
    if (!spec) return spec.fail();
    const std::string at = "spec.hashedRekordV002";
    auto v2 = object_member(*spec, "hashedRekordV002", at);
    if (!v2) return v2.fail();
    auto data = object_member(*v2, "data", at + ".data");
    if (!data) return data.fail();
    auto alg = string_member(*data, "algorithm", at + ".data.algorithm", true);
    if (!alg) return alg.fail();
    if (*alg != "SHA2_256") return fail("body hash algorithm " + *alg + " is not SHA2_256");
    auto digest = bytes_member(*data, "digest", at + ".data.digest", true);
    if (!digest) return digest.fail();
    if (digest->size() != artifact.size() ||
        std::memcmp(digest->data(), artifact.data(), artifact.size()) != 0) {
        return fail("body digest != artifact sha256");
    }
    auto sig = object_member(*v2, "signature", at + ".signature");
    if (!sig) return sig.fail();
    auto content = bytes_member(*sig, "content", at + ".signature.content", true);
    if (!content) return content.fail();
    if (*content != b.signature) return fail("body signature != bundle signature");
    auto verifier = object_member(*sig, "verifier", at + ".signature.verifier");
    if (!verifier) return verifier.fail();
    auto cert =
        object_member(*verifier, "x509Certificate", at + ".signature.verifier.x509Certificate");
    if (!cert) return cert.fail();
    auto raw =
        bytes_member(*cert, "rawBytes", at + ".signature.verifier.x509Certificate.rawBytes", true);
    if (!raw) return raw.fail();
    if (*raw != leaf_der) return fail("body certificate != bundle leaf certificate");
    return {};
}

}  // namespace myr::verify
