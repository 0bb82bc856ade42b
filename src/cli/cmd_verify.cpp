// `verify`: checks an artifact, or only its digest, against a Sigstore bundle with the trusted
// root only (no network), through the same verify_bundle() the installer uses. Flag names follow
// cosign's `verify-blob` where it has one, so a command copied from a release's instructions
// works. `--key FILE` verifies a bundle signed with a managed key instead of a certificate
// identity. Exit 0 verified, 1 not verified or an unreadable input, 2 usage error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/time.hpp"
#include "hash/sha256.hpp"
#include "hash/sha512.hpp"
#include "verify/signer.hpp"
#include "verify/sigstore.hpp"
#include "verify/trusted_root.hpp"
#include "version/template.hpp"
#include "version/version.hpp"

namespace myr::cli {

namespace {

const char* kCmd = "verify";

// Our flag, and cosign's name for the same thing.
struct Alias {
    const char* ours;
    const char* cosign;
};
constexpr Alias kAliases[] = {
    {"subject", "certificate-identity"},
    {"subject-regexp", "certificate-identity-regexp"},
    {"issuer", "certificate-oidc-issuer"},
};

struct FieldFlag {
    const char* flag;
    verify::IdentityField field;
};
constexpr FieldFlag kFieldFlags[] = {
    {"source-repository-ref", verify::IdentityField::source_repository_ref},
    {"build-config-uri", verify::IdentityField::build_config_uri},
    {"source-repository-uri", verify::IdentityField::source_repository_uri},
    {"certificate-github-workflow-name", verify::IdentityField::github_workflow_name},
    {"certificate-github-workflow-ref", verify::IdentityField::github_workflow_ref},
    {"certificate-github-workflow-repository", verify::IdentityField::github_workflow_repository},
    {"certificate-github-workflow-trigger", verify::IdentityField::github_workflow_trigger},
    {"certificate-github-workflow-sha", verify::IdentityField::github_workflow_sha},
};

ArgSpec spec() {
    ArgSpec s{{"artifact", "digest", "bundle", "trusted-root", "version", "key", "min-timestamps"},
              {},
              {}};
    for (const Alias& a : kAliases) s.options.insert({a.ours, a.cosign});
    for (const FieldFlag& f : kFieldFlags) s.options.insert(f.flag);
    return s;
}

// The value of `name` or of its cosign alias; an error when both are given.
Result<std::string> either(const Args& args, const char* ours, const char* cosign) {
    auto a = args.get(ours), b = args.get(cosign);
    if (a && b) return fail(std::string("give --") + ours + " or --" + cosign + ", not both");
    return a ? *a : b.value_or("");
}

// The identity the flags describe, its certificate fields bound to --version.
Result<verify::Identity> identity_from(const Args& args) {
    verify::Identity id;
    std::string* slots[] = {&id.subject, &id.subject_regexp, &id.issuer};
    for (size_t i = 0; i < std::size(kAliases); ++i) {
        auto v = either(args, kAliases[i].ours, kAliases[i].cosign);
        if (!v) return v.fail();
        *slots[i] = std::move(*v);
    }
    if (args.get("key")) {
        if (!id.subject.empty() || !id.subject_regexp.empty() || !id.issuer.empty() ||
            std::any_of(std::begin(kFieldFlags), std::end(kFieldFlags),
                        [&](const FieldFlag& f) { return args.get(f.flag).has_value(); })) {
            return fail("--key replaces the identity flags (--subject, --issuer, ...)");
        }
        return id;
    }
    if (id.subject.empty() == id.subject_regexp.empty()) {
        return fail(
            "give exactly one of --subject (--certificate-identity) and --subject-regexp "
            "(--certificate-identity-regexp)");
    }
    if (id.issuer.empty()) return fail("--issuer (--certificate-oidc-issuer) is required");
    if (auto ok = version::check_template(id.subject); !ok) return ok.fail("--subject");
    for (const FieldFlag& f : kFieldFlags) {
        auto v = args.get(f.flag);
        if (!v) continue;
        if (v->empty()) return fail(std::string("--") + f.flag + " must not be empty");
        if (auto ok = version::check_template(*v); !ok) return ok.fail(std::string("--") + f.flag);
        id.fields.push_back({f.field, *v});
    }
    std::string version;
    if (auto v = args.get("version")) {
        auto parsed = version::parse(*v);
        if (!parsed) return fail("--version " + *v + " is not a semantic version");
        version = version::to_string(*parsed);
    }
    if (version.empty() && id.subject.find("{version}") != std::string::npos) {
        return fail("--subject uses {version}: give --version");
    }
    for (const verify::FieldRule& r : id.fields) {
        if (version.empty() && r.expected.find("{version}") != std::string::npos) {
            return fail(std::string(verify::field_name(r.field)) +
                        " uses {version}: give --version");
        }
    }
    return verify::bind_identity(id, version);
}

// --digest sha256:HEX, the published checksum, in place of hashing the artifact.
Result<hash::Digest> given_digest(const std::string& text) {
    constexpr std::string_view kPrefix = "sha256:";
    if (text.compare(0, kPrefix.size(), kPrefix) != 0) {
        return fail("--digest must read sha256:<64 hex digits>");
    }
    auto d = hash::digest_from_hex(std::string_view(text).substr(kPrefix.size()));
    if (!d) return d.fail("--digest");
    return d;
}

// A managed key from --key: a file that holds no usable key is a refusal like a wrong key (exit
// 1, "not verified"), not an I/O error.
Result<verify::Bytes> managed_key(const std::string& path, bool& refused) {
    auto pem = verify::read_small_file(path, 64 * 1024);
    if (!pem) return pem.fail("verify: key");
    auto der = verify::public_key_der_from_pem(*pem);
    if (!der) {
        refused = true;
        return fail("identity policy: --key " + path + ": " + der.error().message());
    }
    return der;
}

// One line per check that passed, so an operator sees what "verified" covered.
void print_checks(const verify::Verified& v, const verify::Identity& id, bool envelope) {
    // The signing time, from the source that gave it (a SET's over a timestamp's), then every
    // verified source: "SET <log> <time>", "RFC 3161 <authority> <time>".
    WallTime at{std::chrono::seconds(v.integrated_time)};
    std::string from, all;
    for (const verify::TimeSource& t : v.time_sources) {
        if (t.time == v.integrated_time &&
            (from.empty() || t.kind == verify::TimeSource::Kind::set)) {
            from = t.kind_name() + " of " + t.authority;
        }
        all += (all.empty() ? "" : ", ") + t.kind_name() + " " + t.authority + " " +
               std::to_string(t.time);
    }
    std::printf("  time: %s (%lld) from the %s\n", format_rfc3339(at).c_str(),
                static_cast<long long>(v.integrated_time), from.c_str());
    std::printf("  time sources: %s\n", all.c_str());
    std::printf("  log: %s, inclusion proof and checkpoint\n", v.log.c_str());
    if (!id.public_key.empty()) {
        std::printf("  signature: the managed key %s\n", v.subject.c_str());
        return;
    }
    std::printf("  certificate chain: a trusted Fulcio CA at that time, with an embedded SCT\n");
    std::printf("  signature: the leaf key over %s\n",
                envelope ? "the DSSE envelope (PAE), its in-toto subject naming the artifact"
                         : "the artifact digest");
    std::printf("  identity: subject %s (%s)\n", v.subject.c_str(),
                id.subject.empty() ? ("matches " + id.subject_regexp).c_str() : "exact");
    std::printf("  identity: issuer %s\n", v.issuer.c_str());
    for (const verify::FieldCheck& f : v.fields) {
        std::printf("  identity: %s \"%s\"\n", verify::field_name(f.field), f.value.c_str());
    }
}

}  // namespace

int cmd_verify(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, spec());
    if (!args) return usage_error(kCmd, args.error().message());
    if (args->flag("help")) return print_help(kCmd);
    if (!args->positional().empty()) return usage_error(kCmd, "takes no positional arguments");
    for (const char* required : {"bundle", "trusted-root"}) {
        if (!args->get(required) || args->get(required)->empty()) {
            return usage_error(kCmd, std::string("--") + required + " is required");
        }
    }
    if (args->get("artifact").has_value() == args->get("digest").has_value()) {
        return usage_error(kCmd, "give exactly one of --artifact FILE and --digest sha256:HEX");
    }
    auto identity = identity_from(*args);
    if (!identity) return usage_error(kCmd, identity.error().message());
    if (auto key_path = args->get("key")) {
        bool refused = false;
        auto key = managed_key(*key_path, refused);
        if (!key && refused) {
            std::printf("not verified: %s\n", key.error().message().c_str());
            return 1;
        }
        if (!key) return runtime_error(key.error());
        identity->public_key = std::move(*key);
    }
    std::optional<hash::Digest> digest;
    if (auto text = args->get("digest")) {
        auto d = given_digest(*text);
        if (!d) return usage_error(kCmd, d.error().message());
        digest = *d;
    }

    // Like update.signature.minTimestamps: verified time sources required (SETs and RFC 3161).
    verify::Options options;
    if (auto n = args->get("min-timestamps")) {
        auto count = verify::parse_decimal_count(*n);
        if (!count || *count < 1 || *count > 32) {
            return usage_error(kCmd, "--min-timestamps must be an integer from 1 to 32");
        }
        options.min_timestamps = *count;
    }

    auto root_text =
        verify::read_small_file(*args->get("trusted-root"), verify::kMaxTrustedRootBytes);
    if (!root_text) return runtime_error(root_text.error().context("verify: trusted root"));
    auto bundle_text = verify::read_small_file(*args->get("bundle"), verify::kMaxBundleBytes);
    if (!bundle_text) return runtime_error(bundle_text.error().context("verify: bundle"));
    if (!digest) {
        auto d = hash::sha256_file(*args->get("artifact"));
        if (!d) return runtime_error(d.error().context("verify: artifact"));
        digest = *d;
    }

    auto root = verify::parse_trusted_root(*root_text);
    auto bundle = root ? verify::parse_bundle(*bundle_text) : Result<verify::Bundle>(root.fail());
    verify::ArtifactDigests digests;
    digests.sha256 = *digest;
    // An in-toto subject may name the artifact by SHA-512 only (npm provenance): a second pass
    // over the file, for DSSE bundles alone (with --digest only the SHA-256 is known).
    auto artifact = args->get("artifact");
    if (artifact && bundle && bundle->content == verify::Content::dsse_envelope) {
        auto sha512 = hash::sha512_file(*artifact);
        if (!sha512) return runtime_error(sha512.error().context("verify: artifact"));
        digests.sha512.assign(sha512->begin(), sha512->end());
    }
    Result<verify::Verified> result =
        bundle ? verify::verify_bundle(*root, *bundle, digests, *identity, options)
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
    print_checks(*result, *identity, bundle->content == verify::Content::dsse_envelope);
    return 0;
}

}  // namespace myr::cli
