#include "verify/sigstore.hpp"

#include <cstring>
#include <memory>
#include <optional>
#include <regex>

#include "verify/certificate.hpp"
#include "verify/public_key.hpp"
#include "verify/rekor.hpp"

namespace myr::verify {

using hash::Digest;
using hash::to_hex;

namespace {

// A verification step that did not pass: the artifact is not proven (Errc::integrity).
Failure step(const char* name, const Error& e) {
    return fail(Errc::integrity, std::string(name) + ": " + e.message());
}
Failure step(const char* name, const std::string& why) {
    return fail(Errc::integrity, std::string(name) + ": " + why);
}

// The identity check, compiled once. std::regex reports bad patterns by throwing; keep that here.
struct Policy {
    std::optional<std::regex> re;
    static Result<Policy> make(const Identity& id) {
        Policy p;
        if (id.subject.empty() == id.subject_regexp.empty()) {
            return fail("exactly one of subject and subjectRegexp must be given");
        }
        if (id.issuer.empty()) return fail("issuer must be given");
        if (!id.subject_regexp.empty()) {
            try {
                p.re.emplace(id.subject_regexp, std::regex::ECMAScript);
            } catch (const std::regex_error& e) {
                return fail("subjectRegexp does not compile: " + std::string(e.what()));
            }
        }
        return p;
    }
    bool matches(const Identity& id, const std::string& san) const {
        if (!re) return san == id.subject;
        try {
            return std::regex_match(san, *re);
        } catch (const std::regex_error&) {
            return false;  // e.g. complexity limits: no match
        }
    }
};

// 0. Shape: what this build can verify.
Status check_shape(const Bundle& b) {
    if (b.content != Content::message_signature) {
        return step("bundle", "DSSE envelopes are not supported by this build");
    }
    if (b.material != Material::certificate) {
        return step("bundle", "managed-key (publicKey) bundles are not supported by this build");
    }
    if (b.certificates.empty()) return step("bundle", "no certificate");
    if (b.tlog_entries.size() != 1) {
        return step("bundle", "expected exactly one tlog entry, found " +
                                  std::to_string(b.tlog_entries.size()));
    }
    const TlogEntry& entry = b.tlog_entries.front();
    if (entry.version != "0.0.1") {
        return step("tlog entry", "Rekor v2 (" + entry.kind + "/" + entry.version +
                                      ") entries are not supported by this build");
    }
    if (entry.kind != "hashedrekord") {
        return step("tlog entry", "entry kind " + entry.kind + " is not supported");
    }
    if (b.version == BundleVersion::v0_1 && entry.signed_entry_timestamp.empty()) {
        return step("bundle", "a v0.1 bundle needs an inclusionPromise");
    }
    if (b.version != BundleVersion::v0_1 && !entry.inclusion_proof) {
        return step("bundle", "a v0.2+ bundle needs an inclusionProof");
    }
    return {};
}

// The leaf certificate; the rest of the chain must parse and must not carry a root.
Result<std::unique_ptr<Certificate>> parse_chain(const Bundle& b) {
    auto leaf = Certificate::parse(b.certificates.front());
    if (!leaf) return step("certificate", leaf.error());
    for (size_t i = 1; i < b.certificates.size(); ++i) {
        auto c = Certificate::parse(b.certificates[i]);
        if (!c)
            return step("certificate", c.error().context("chain certificate " + std::to_string(i)));
        if ((*c)->self_signed())
            return step("bundle", "the certificate chain carries a root certificate");
    }
    return leaf;
}

// 1. Verified time: integratedTime counts only once the SET verifies. 4b. Inclusion proof and
// checkpoint (v0.1 bundles may lack them), against the same log.
Result<int64_t> verified_time(const TrustedRoot& root, const Bundle& b, const TlogEntry& entry) {
    auto log = find_log(root.tlogs, entry.log_id, entry.integrated_time);
    if (!log) return step("tlog entry", log.error());
    if (auto ok = verify_signed_entry_timestamp(entry, **log); !ok) return step("SET", ok.error());
    if (entry.inclusion_proof) {
        if (auto ok = verify_inclusion_proof(entry); !ok)
            return step("inclusion proof", ok.error());
        // Proofs in v0.1 bundles predate checkpoints; from v0.2 on the checkpoint is required.
        const bool skip =
            b.version == BundleVersion::v0_1 && entry.inclusion_proof->checkpoint.empty();
        if (auto ok = skip ? Status() : verify_checkpoint(*entry.inclusion_proof, **log); !ok) {
            return step("checkpoint", ok.error());
        }
    }
    return entry.integrated_time;
}

// 2. Certificate chain at the verified time, to a CA whose validFor contains it.
Result<const CertificateAuthority*> issuing_authority(const TrustedRoot& root, const Bundle& b,
                                                      int64_t t) {
    std::string chain_problem =
        "no certificate authority in the trusted root is valid at " + std::to_string(t);
    for (const CertificateAuthority& candidate : root.certificate_authorities) {
        if (!candidate.valid_for.contains(t)) continue;
        auto ok = verify_chain_at(b.certificates.front(), candidate, t);
        if (ok) return &candidate;
        chain_problem = ok.error().message();
    }
    return step("certificate chain", chain_problem);
}

// 5. The artifact and the log entry agree with the bundle.
Status check_artifact(const Bundle& b, const TlogEntry& entry, const Digest& artifact_sha256) {
    if (b.digest_algorithm != "SHA2_256") {
        return step("artifact",
                    "messageDigest algorithm " + b.digest_algorithm + " is not SHA2_256");
    }
    if (b.message_digest.size() != 32 ||
        std::memcmp(b.message_digest.data(), artifact_sha256.data(), 32) != 0) {
        return step("artifact", "sha256 " + to_hex(artifact_sha256) + " != bundle messageDigest");
    }
    if (auto ok = check_hashedrekord_body(entry, b, artifact_sha256, b.certificates.front()); !ok) {
        return step("tlog body", ok.error());
    }
    return {};
}

// 6. The signature over the artifact digest, by the leaf key.
Status check_signature(const Certificate& leaf, const Bundle& b, const Digest& artifact_sha256) {
    mbedtls_pk_context* pk = const_cast<mbedtls_pk_context*>(&leaf.crt().pk);
    int r = mbedtls_pk_verify(pk, MBEDTLS_MD_SHA256, artifact_sha256.data(), 32, b.signature.data(),
                              b.signature.size());
    if (r != 0)
        return step("signature", "artifact signature does not verify: " + mbedtls_error_text(r));
    return {};
}

// 7. Identity: one of the leaf's subjects matches the policy, and its OIDC issuer is the one given.
Status check_identity(const Certificate& leaf, const Policy& policy, const Identity& identity,
                      Verified& v) {
    for (const std::string& san : leaf.identities()) {
        if (policy.matches(identity, san)) {
            v.subject = san;
            break;
        }
    }
    if (v.subject.empty()) {
        auto sans = leaf.identities();
        std::string list;
        for (const auto& s : sans) list += (list.empty() ? "" : ", ") + s;
        return step("identity",
                    "certificate subject (" + (list.empty() ? "none" : list) + ") does not match " +
                        (identity.subject.empty() ? "subjectRegexp " + identity.subject_regexp
                                                  : identity.subject));
    }
    auto issuer = leaf.oidc_issuer();
    if (!issuer) return step("identity", issuer.error());
    if (*issuer != identity.issuer) {
        return step("identity", "certificate issuer " + *issuer + " != " + identity.issuer);
    }
    v.issuer = *issuer;
    auto fields = check_fields(leaf.fulcio(), identity.fields);
    if (!fields) return step("identity", fields.error());
    v.fields = std::move(*fields);
    return {};
}

// For the report of what was checked: the log the verified entry belongs to.
void describe_log(const TrustedRoot& root, const TlogEntry& entry, Verified& v) {
    auto log = find_log(root.tlogs, entry.log_id, entry.integrated_time);
    std::string url = log ? (*log)->base_url : std::string("?");
    v.time_source = "SET of " + url;
    v.log = url + " index " + std::to_string(entry.log_index);
}

}  // namespace

Result<Verified> verify_bundle(const TrustedRoot& root, std::string_view bundle_json,
                               const Digest& artifact_sha256, const Identity& identity) {
    auto bundle = parse_bundle(bundle_json);
    if (!bundle) return bundle.fail();
    return verify_bundle(root, *bundle, artifact_sha256, identity);
}

// The steps, in this order, each refusing with its name (docs/sigstore.md).
Result<Verified> verify_bundle(const TrustedRoot& root, const Bundle& b,
                               const Digest& artifact_sha256, const Identity& identity) {
    auto policy = Policy::make(identity);
    if (!policy) return step("identity policy", policy.error());
    if (auto ok = check_shape(b); !ok) return ok.fail();
    const TlogEntry& entry = b.tlog_entries.front();
    auto leaf = parse_chain(b);
    if (!leaf) return leaf.fail();
    auto t = verified_time(root, b, entry);
    if (!t) return t.fail();
    auto ca = issuing_authority(root, b, *t);
    if (!ca) return ca.fail();
    if (auto ok = (*leaf)->check_code_signing(); !ok) return step("certificate", ok.error());
    // 3. SCT, against the certificate that issued the leaf.
    if (auto ok = verify_embedded_scts(**leaf, (*ca)->chain.front(), root.ctlogs); !ok) {
        return step("SCT", ok.error());
    }
    if (auto ok = check_artifact(b, entry, artifact_sha256); !ok) return ok.fail();
    if (auto ok = check_signature(**leaf, b, artifact_sha256); !ok) return ok.fail();
    Verified v;
    v.integrated_time = *t;
    describe_log(root, entry, v);
    if (auto ok = check_identity(**leaf, *policy, identity, v); !ok) return ok.fail();
    return v;
}

}  // namespace myr::verify
