// libFuzzer target over DSSE envelopes, in-toto statements and their verification.
//
// Input: a bundle, then the separator line "\n--trusted-root--\n" and a trusted root (the seeds
// in corpus/dsse carry the conformance roots). The whole input is also parsed as an in-toto
// statement, so statement shapes are explored without the base64 wrapping. A parsed envelope
// goes through PAE, the statement parser, the Rekor body checks (both signer kinds) and the
// whole verification, with the conformance artifact's digests and identity, and with the
// conformance managed key for publicKey bundles.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../support/conformance_identity.hpp"
#include "verify/bundle.hpp"
#include "verify/dsse.hpp"
#include "verify/intoto.hpp"
#include "verify/signer.hpp"
#include "verify/sigstore.hpp"
#include "verify/trusted_root.hpp"

namespace {

using namespace myr::verify;
using namespace myr::hash;

constexpr std::string_view kSeparator = "\n--trusted-root--\n";

// The managed key of the sigstore-conformance managed-key cases (public test data).
constexpr std::string_view kManagedKey =
    "-----BEGIN PUBLIC KEY-----\n"
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAExRRST79+PsrRBnGAI4cMu6Omz2Jh\n"
    "fwlMW+gIutNKVRaMyS4rQKvgngc5p8UbLj55pVHhIoAxi/SRgURZI0J3Xw==\n"
    "-----END PUBLIC KEY-----\n";

Identity key_identity() {
    Identity id;
    id.public_key = *public_key_der_from_pem(kManagedKey);
    return id;
}

void check_envelope(const Bundle& b) {
    const Envelope& env = b.envelope;
    Bytes message = pae(env.payload_type, env.payload);
    (void)message;
    auto st = parse_statement(
        std::string_view(reinterpret_cast<const char*>(env.payload.data()), env.payload.size()));
    if (st) (void)statement_names_digest(*st, "sha256", "00");
    if (b.tlog_entries.empty()) return;
    if (!b.certificates.empty()) {
        auto ok = check_dsse_body(b.tlog_entries.front(), env,
                                  Signer{Signer::Kind::certificate, b.certificates.front()});
        (void)ok;
    }
    static const Identity key = key_identity();
    auto ok =
        check_dsse_body(b.tlog_entries.front(), env, Signer{Signer::Kind::key, key.public_key});
    (void)ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    (void)parse_statement(input);

    size_t sep = input.find(kSeparator);
    if (sep == std::string_view::npos) return 0;
    auto bundle = parse_bundle(input.substr(0, sep));
    if (!bundle) return 0;
    if (bundle->content == Content::dsse_envelope) check_envelope(*bundle);
    auto root = parse_trusted_root(input.substr(sep + kSeparator.size()));
    if (!root) return 0;
    // The conformance suite's a.txt (sha256, sha512).
    static const ArtifactDigests artifact = [] {
        ArtifactDigests a;
        a.sha256 =
            *digest_from_hex("a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf");
        a.sha512.assign(64, 0xab);
        return a;
    }();
    static const Identity cert = myr::test::conformance_identity();
    static const Identity key = key_identity();
    const Identity& id = bundle->material == Material::public_key ? key : cert;
    auto verified = verify_bundle(*root, *bundle, artifact, id);
    (void)verified;
    return 0;
}
