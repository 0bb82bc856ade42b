#include "verify/sigstore.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "core/hex.hpp"
#include "core/regex.hpp"
#include "verify/certificate.hpp"
#include "verify/dsse.hpp"
#include "verify/intoto.hpp"
#include "verify/public_key.hpp"
#include "verify/rekor.hpp"
#include "verify/signer.hpp"
#include "verify/timestamp.hpp"
#include "version/template.hpp"

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

// The identity check, compiled once (core/regex.hpp: bounded states, linear-time match).
struct Policy {
    std::optional<Regex> re;
    static Result<Policy> make(const Identity& id) {
        Policy p;
        if (!id.public_key.empty()) {
            if (!id.subject.empty() || !id.subject_regexp.empty() || !id.issuer.empty()) {
                return fail("give either a managed key or a certificate identity, not both");
            }
            if (auto key = PublicKey::from_spki(id.public_key); !key) return key.fail("key");
            return p;
        }
        if (id.subject.empty() == id.subject_regexp.empty()) {
            return fail("exactly one of subject and subjectRegexp must be given");
        }
        if (id.issuer.empty()) return fail("issuer must be given");
        if (!id.subject_regexp.empty()) {
            auto re = Regex::compile(id.subject_regexp);
            if (!re) return re.fail("subjectRegexp does not compile");
            p.re.emplace(std::move(*re));
        }
        return p;
    }
    bool matches(const Identity& id, const std::string& san) const {
        return re ? re->full_match(san) : san == id.subject;
    }
};

// Rekor v2 entries are version 0.0.2 of hashedrekord and dsse; intoto's 0.0.2 is a Rekor v1 kind.
bool rekor_v2(const TlogEntry& entry) {
    return entry.version == "0.0.2" && entry.kind != "intoto";
}

// The tlog entry kinds that can log each content: a message signature in Rekor v1 or v2, a DSSE
// envelope in Rekor v1 only.
Status check_entry_kind(const Bundle& b, const TlogEntry& entry) {
    const std::string kv = entry.kind + "/" + entry.version;
    const bool message = b.content == Content::message_signature;
    if (message ? (kv == "hashedrekord/0.0.1" || kv == "hashedrekord/0.0.2")
                : (kv == "dsse/0.0.1" || kv == "intoto/0.0.2")) {
        return {};
    }
    if (kv == "dsse/0.0.2") {
        return step("tlog entry", "Rekor v2 dsse entries are not supported by this build");
    }
    return step("tlog entry", "entry kind " + kv + " cannot log a " +
                                  (message ? "messageSignature" : "DSSE envelope"));
}

// 0. Shape: what this build can verify, and the material the caller expects.
Status check_shape(const Bundle& b, const Identity& identity) {
    if (b.material == Material::public_key && identity.public_key.empty()) {
        return step("bundle",
                    "signed with a managed key (verificationMaterial.publicKey), but no key "
                    "was given to verify it with");
    }
    if (b.material == Material::certificate && !identity.public_key.empty()) {
        return step("bundle", "carries a certificate, but a managed key was given");
    }
    if (b.material == Material::certificate && b.certificates.empty()) {
        return step("bundle", "no certificate");
    }
    if (b.content == Content::dsse_envelope && b.envelope.signatures.size() != 1) {
        return step("bundle", "a DSSE envelope must carry exactly one signature, found " +
                                  std::to_string(b.envelope.signatures.size()));
    }
    if (b.tlog_entries.size() != 1) {
        return step("bundle", "expected exactly one tlog entry, found " +
                                  std::to_string(b.tlog_entries.size()));
    }
    const TlogEntry& entry = b.tlog_entries.front();
    if (auto ok = check_entry_kind(b, entry); !ok) return ok.fail();
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

// 1a. RFC 3161 timestamps: every one the bundle carries must verify (a bad one is refused, not
// skipped), and each must lie within the leaf's validity (no leaf: a managed key, valid always).
Status verify_timestamps(const TrustedRoot& root, const Bundle& b, const Certificate* leaf,
                         std::vector<TimeSource>& out) {
    // The token's imprint is over the signature it stamps: a DSSE envelope's own (check_shape
    // made sure there is exactly one), else the message signature.
    const Bytes& signed_bytes =
        b.content == Content::dsse_envelope ? b.envelope.signatures.front() : b.signature;
    for (size_t i = 0; i < b.rfc3161_timestamps.size(); ++i) {
        const std::string which = "rfc3161Timestamps[" + std::to_string(i) + "]: ";
        auto ts = verify_rfc3161(b.rfc3161_timestamps[i], signed_bytes, root.timestamp_authorities);
        if (!ts) return step("timestamp", which + ts.error().message());
        if (leaf && (ts->time < leaf->not_before() || ts->time > leaf->not_after())) {
            return step("timestamp", which + "genTime " + std::to_string(ts->time) +
                                         " is outside the signing certificate's validity " +
                                         std::to_string(leaf->not_before()) + ".." +
                                         std::to_string(leaf->not_after()));
        }
        out.push_back({TimeSource::Kind::rfc3161, ts->authority, ts->time});
    }
    return {};
}

// 1b. The log entry: a Rekor v1 integratedTime counts as a time source once its SET verifies; a
// Rekor v2 entry has none, so its log key must be valid at the timestamps' time instead. 4b.
// Inclusion proof and checkpoint (v0.1 bundles may lack them), against the same log.
Status verify_tlog_entry(const TrustedRoot& root, const Bundle& b, const TlogEntry& entry,
                         std::vector<TimeSource>& times) {
    const bool v2 = rekor_v2(entry);
    if (v2 && times.empty()) {
        return step("timestamp",
                    "a Rekor v2 entry has no integrated time: the bundle needs an "
                    "RFC 3161 timestamp");
    }
    auto log = find_log(root.tlogs, entry.log_id, v2 ? times.front().time : entry.integrated_time);
    if (!log) return step("tlog entry", log.error());
    if (!v2) {
        if (auto ok = verify_signed_entry_timestamp(entry, **log); !ok) {
            return step("SET", ok.error());
        }
        times.push_back({TimeSource::Kind::set, (*log)->base_url, entry.integrated_time});
    }
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
    return {};
}

// 1c. The policy: how many verified time sources (sigstore-go's observer timestamps).
Status check_time_policy(const std::vector<TimeSource>& times, const Options& options) {
    // Without one verified time the certificate's validity cannot be checked at all.
    const int64_t need = std::max<int64_t>(1, options.min_timestamps);
    if (static_cast<int64_t>(times.size()) >= need) return {};
    std::string kinds;
    for (const TimeSource& t : times) kinds += (kinds.empty() ? "" : ", ") + t.kind_name();
    return step("timestamps", std::to_string(times.size()) + " verified time source(s)" +
                                  (kinds.empty() ? "" : " (" + kinds + ")") +
                                  " where minTimestamps requires " + std::to_string(need));
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

// 5a. A DSSE envelope names the artifact through its in-toto statement's subjects.
Status check_statement(const Envelope& env, const ArtifactDigests& artifact) {
    if (env.payload_type != kInTotoPayloadType) {
        return step("artifact", "DSSE payloadType \"" + env.payload_type.substr(0, 100) +
                                    "\" is not " + std::string(kInTotoPayloadType));
    }
    auto st = parse_statement(
        std::string_view(reinterpret_cast<const char*>(env.payload.data()), env.payload.size()));
    if (!st) return step("artifact", st.error());
    const std::string sha256 = to_hex(artifact.sha256);
    if (statement_names_digest(*st, "sha256", sha256)) return {};
    std::string also;
    if (!artifact.sha512.empty()) {
        const std::string sha512 = hex::encode(artifact.sha512.data(), artifact.sha512.size());
        if (statement_names_digest(*st, "sha512", sha512)) return {};
        also = " or sha512 " + sha512;
    }
    return step("artifact", "no subject of the in-toto statement has sha256 " + sha256 + also);
}

// 5. The artifact and the log entry agree with the bundle.
Status check_artifact(const Bundle& b, const TlogEntry& entry, const ArtifactDigests& artifact,
                      const Signer& signer) {
    if (b.content == Content::dsse_envelope) {
        if (auto ok = check_statement(b.envelope, artifact); !ok) return ok.fail();
        if (auto ok = check_dsse_body(entry, b.envelope, signer); !ok) {
            return step("tlog body", ok.error());
        }
        return {};
    }
    if (b.digest_algorithm != "SHA2_256") {
        return step("artifact",
                    "messageDigest algorithm " + b.digest_algorithm + " is not SHA2_256");
    }
    if (b.message_digest.size() != 32 ||
        std::memcmp(b.message_digest.data(), artifact.sha256.data(), 32) != 0) {
        return step("artifact", "sha256 " + to_hex(artifact.sha256) + " != bundle messageDigest");
    }
    if (auto ok = check_hashedrekord_body(entry, b, artifact.sha256, signer); !ok) {
        return step("tlog body", ok.error());
    }
    return {};
}

// 6. The signature by the signer's key: over the artifact digest for a messageSignature, over
// PAE(payloadType, payload) for a DSSE envelope.
Status check_signature(const Signer& signer, const Bundle& b, const Digest& artifact_sha256) {
    auto key = signer_key(signer);
    if (!key) return step("signature", key.error());
    Status ok;
    if (b.content == Content::dsse_envelope) {
        Bytes message = pae(b.envelope.payload_type, b.envelope.payload);
        ok = key->verify_message(message.data(), message.size(), b.envelope.signatures.front());
        if (!ok) return step("signature", ok.error().context("DSSE envelope"));
        return {};
    }
    ok = key->verify_sha256_digest(artifact_sha256.data(), b.signature);
    if (!ok) return step("signature", ok.error().context("artifact"));
    return {};
}

// 1. Every time source the bundle offers (timestamps, then the log entry and its proof), and the
// policy on how many verified: the same for a certificate and a managed key (no leaf).
Status verify_times(const TrustedRoot& root, const Bundle& b, const Certificate* leaf,
                    const Options& options, std::vector<TimeSource>& times) {
    if (auto ok = verify_timestamps(root, b, leaf, times); !ok) return ok;
    if (auto ok = verify_tlog_entry(root, b, b.tlog_entries.front(), times); !ok) return ok;
    return check_time_policy(times, options);
}

// The verified signing time: the SET's integratedTime when there is one, else the first
// timestamp's genTime.
int64_t signing_time(const std::vector<TimeSource>& times) {
    int64_t t = times.front().time;
    for (const TimeSource& s : times) {
        if (s.kind == TimeSource::Kind::set) t = s.time;
    }
    return t;
}

// For the report of what was checked: the log the verified entry belongs to.
void describe_log(const TrustedRoot& root, const TlogEntry& entry, Verified& v) {
    auto log = find_log(root.tlogs, entry.log_id, v.integrated_time);
    std::string url = log ? (*log)->base_url : std::string("?");
    v.log = url + " index " + std::to_string(entry.log_index);
}

// A managed key: the log entry (and any timestamps) give the time, the entry the binding; no
// chain, SCT or identity.
Result<Verified> verify_with_key(const TrustedRoot& root, const Bundle& b,
                                 const ArtifactDigests& artifact, const Identity& identity,
                                 const Options& options) {
    const TlogEntry& entry = b.tlog_entries.front();
    Verified v;
    if (auto ok = verify_times(root, b, nullptr, options, v.time_sources); !ok) return ok.fail();
    const Signer signer{Signer::Kind::key, identity.public_key};
    if (auto ok = check_artifact(b, entry, artifact, signer); !ok) return ok.fail();
    if (auto ok = check_signature(signer, b, artifact.sha256); !ok) return ok.fail();
    const std::string spki(identity.public_key.begin(), identity.public_key.end());
    v.subject = "key sha256:" + to_hex(hash::sha256(spki));
    v.integrated_time = signing_time(v.time_sources);
    describe_log(root, entry, v);
    return v;
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

}  // namespace

Result<Identity> bind_identity(const Identity& id, std::string_view version) {
    Identity bound = id;
    auto subject = version::expand_template(id.subject, version);
    if (!subject) return subject.fail("subject");
    bound.subject = std::move(*subject);
    auto fields = bind_version(id.fields, version);
    if (!fields) return fields.fail();
    bound.fields = std::move(*fields);
    return bound;
}

Result<Verified> verify_bundle(const TrustedRoot& root, std::string_view bundle_json,
                               const Digest& artifact_sha256, const Identity& identity,
                               const Options& options) {
    auto bundle = parse_bundle(bundle_json);
    if (!bundle) return bundle.fail();
    return verify_bundle(root, *bundle, artifact_sha256, identity, options);
}

Result<Verified> verify_bundle(const TrustedRoot& root, const Bundle& b,
                               const Digest& artifact_sha256, const Identity& identity,
                               const Options& options) {
    ArtifactDigests artifact;
    artifact.sha256 = artifact_sha256;
    return verify_bundle(root, b, artifact, identity, options);
}

// The steps, in this order, each refusing with its name (docs/sigstore.md).
Result<Verified> verify_bundle(const TrustedRoot& root, const Bundle& b,
                               const ArtifactDigests& artifact, const Identity& identity,
                               const Options& options) {
    auto policy = Policy::make(identity);
    if (!policy) return step("identity policy", policy.error());
    if (auto ok = check_shape(b, identity); !ok) return ok.fail();
    if (b.material == Material::public_key) {
        return verify_with_key(root, b, artifact, identity, options);
    }
    const TlogEntry& entry = b.tlog_entries.front();
    auto leaf = parse_chain(b);
    if (!leaf) return leaf.fail();
    Verified v;
    if (auto ok = verify_times(root, b, leaf->get(), options, v.time_sources); !ok) {
        return ok.fail();
    }
    // 2. The chain must hold at every verified time; the first names the issuing CA.
    const CertificateAuthority* ca = nullptr;
    for (const TimeSource& t : v.time_sources) {
        auto issuer = issuing_authority(root, b, t.time);
        if (!issuer) return issuer.fail();
        if (!ca) ca = *issuer;
    }
    if (auto ok = (*leaf)->check_code_signing(); !ok) return step("certificate", ok.error());
    // 3. SCT, against the certificate that issued the leaf.
    if (auto ok = verify_embedded_scts(**leaf, ca->chain.front(), root.ctlogs); !ok) {
        return step("SCT", ok.error());
    }
    const Signer signer{Signer::Kind::certificate, b.certificates.front()};
    if (auto ok = check_artifact(b, entry, artifact, signer); !ok) return ok.fail();
    if (auto ok = check_signature(signer, b, artifact.sha256); !ok) return ok.fail();
    v.integrated_time = signing_time(v.time_sources);
    describe_log(root, entry, v);
    if (auto ok = check_identity(**leaf, *policy, identity, v); !ok) return ok.fail();
    return v;
}

}  // namespace myr::verify
