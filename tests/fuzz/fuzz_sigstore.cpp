// libFuzzer target over Sigstore bundle and trusted-root parsing and verification.
//
// Input: a bundle, optionally followed by the separator line "\n--trusted-root--\n" and a trusted
// root. Without a root part the bundle is verified against the public-good trusted root below, with
// the artifact digest and identity of the sigstore-conformance cases, so mutated copies of those
// cases reach the deep steps (SET, proof, checkpoint, chain, SCT, signature, identity).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "../support/conformance_identity.hpp"
#include "public_good_root.hpp"
#include "verify/bundle.hpp"
#include "verify/rekor.hpp"
#include "verify/sigstore.hpp"
#include "verify/trusted_root.hpp"

namespace {

using namespace myr::verify;
using namespace myr::hash;

constexpr std::string_view kSeparator = "\n--trusted-root--\n";

const TrustedRoot& default_root() {
    static const TrustedRoot root = *parse_trusted_root(myr::fuzz::kPublicGoodRoot);
    return root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    // sha256 of the conformance suite's a.txt.
    static const Digest artifact =
        *digest_from_hex("a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf");
    static const Identity identity = myr::test::conformance_identity();

    size_t sep = input.find(kSeparator);
    std::string_view bundle_json = input.substr(0, sep);
    const TrustedRoot* root = &default_root();
    myr::Result<TrustedRoot> own_root = myr::fail("unused");
    if (sep != std::string_view::npos) {
        own_root = parse_trusted_root(input.substr(sep + kSeparator.size()));
        if (!own_root) return 0;
        root = &*own_root;
    }
    auto bundle = parse_bundle(bundle_json);
    if (!bundle) return 0;
    auto verified = verify_bundle(*root, *bundle, artifact, identity);
    (void)verified;
    // The proof arithmetic on its own, with the entry's numbers.
    for (const TlogEntry& e : bundle->tlog_entries) {
        if (e.inclusion_proof) {
            auto r = inclusion_root(
                e.canonicalized_body, static_cast<uint64_t>(e.inclusion_proof->log_index),
                static_cast<uint64_t>(e.inclusion_proof->tree_size), e.inclusion_proof->hashes);
            (void)r;
        }
    }
    return 0;
}
