// `verify`: checks an artifact against a Sigstore bundle with the trusted root only (no network),
// through the same verify_bundle() the installer uses. Exit 0 verified, 1 not verified or an
// unreadable input, 2 usage error. `--key FILE` verifies a bundle signed with a managed key
// instead of a certificate identity.
#include <cstdio>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "hash/sha256.hpp"
#include "hash/sha512.hpp"
#include "verify/signer.hpp"
#include "verify/sigstore.hpp"
#include "verify/trusted_root.hpp"

namespace myr::cli {

int cmd_verify(const std::vector<std::string>& argv) {
    static const char* kCmd = "verify";
    auto args = Args::parse(
        argv, {{"artifact", "bundle", "trusted-root", "subject", "subject-regexp", "issuer", "key"},
               {},
               {}});
    if (!args) return usage_error(kCmd, args.error().message());
    if (args->flag("help")) return print_help(kCmd);
    if (!args->positional().empty()) return usage_error(kCmd, "takes no positional arguments");
    for (const char* required : {"artifact", "bundle", "trusted-root"}) {
        if (!args->get(required) || args->get(required)->empty()) {
            return usage_error(kCmd, std::string("--") + required + " is required");
        }
    }
    verify::Identity identity;
    identity.subject = args->get("subject").value_or("");
    identity.subject_regexp = args->get("subject-regexp").value_or("");
    identity.issuer = args->get("issuer").value_or("");
    const std::string key_path = args->get("key").value_or("");
    if (!key_path.empty()) {
        if (!identity.subject.empty() || !identity.subject_regexp.empty() ||
            !identity.issuer.empty()) {
            return usage_error(kCmd, "--key replaces --subject, --subject-regexp and --issuer");
        }
        auto pem = verify::read_small_file(key_path, 64 * 1024);
        if (!pem) return runtime_error(pem.error().context("verify: key"));
        // A file that holds no usable key is a refusal like a wrong key, not an I/O error.
        auto der = verify::public_key_der_from_pem(*pem);
        if (!der) {
            std::printf("not verified: identity policy: --key %s: %s\n", key_path.c_str(),
                        der.error().message().c_str());
            return 1;
        }
        identity.public_key = std::move(*der);
    } else if (identity.issuer.empty()) {
        return usage_error(kCmd, "--issuer is required (or --key for a managed key)");
    } else if (identity.subject.empty() == identity.subject_regexp.empty()) {
        return usage_error(kCmd, "give exactly one of --subject and --subject-regexp");
    }

    const std::string artifact = *args->get("artifact");
    const std::string bundle_path = *args->get("bundle");
    const std::string root_path = *args->get("trusted-root");

    auto root_text = verify::read_small_file(root_path, verify::kMaxTrustedRootBytes);
    if (!root_text) return runtime_error(root_text.error().context("verify: trusted root"));
    auto bundle_text = verify::read_small_file(bundle_path, verify::kMaxBundleBytes);
    if (!bundle_text) return runtime_error(bundle_text.error().context("verify: bundle"));
    auto digest = hash::sha256_file(artifact);
    if (!digest) return runtime_error(digest.error().context("verify: artifact"));

    auto root = verify::parse_trusted_root(*root_text);
    auto bundle = root ? verify::parse_bundle(*bundle_text) : Result<verify::Bundle>(root.fail());
    verify::ArtifactDigests digests;
    digests.sha256 = *digest;
    // An in-toto subject may name the artifact by SHA-512 only (npm provenance): a second pass
    // over the file, for DSSE bundles alone.
    if (bundle && bundle->content == verify::Content::dsse_envelope) {
        auto sha512 = hash::sha512_file(artifact);
        if (!sha512) return runtime_error(sha512.error().context("verify: artifact"));
        digests.sha512.assign(sha512->begin(), sha512->end());
    }
    Result<verify::Verified> result = bundle
                                          ? verify::verify_bundle(*root, *bundle, digests, identity)
                                          : Result<verify::Verified>(bundle.fail());
    if (!result) {
        std::printf("not verified: %s\n", result.error().message().c_str());
        return 1;
    }
    if (result->issuer.empty()) {
        std::printf("verified: %s %s\n", result->subject.c_str(), hash::to_hex(*digest).c_str());
    } else {
        std::printf("verified: %s %s %s\n", result->subject.c_str(), result->issuer.c_str(),
                    hash::to_hex(*digest).c_str());
    }
    return 0;
}

}  // namespace myr::cli
