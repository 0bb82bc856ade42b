#include "verify/bundle.hpp"

namespace myr::verify {

namespace {

constexpr int kMaxDepth = 16;
constexpr size_t kMaxCertificates = 16;
constexpr size_t kMaxTlogEntries = 16;
constexpr size_t kMaxTimestamps = 16;

Result<BundleVersion> parse_media_type(const std::string& mt) {
    if (mt == "application/vnd.dev.sigstore.bundle+json;version=0.1") return BundleVersion::v0_1;
    if (mt == "application/vnd.dev.sigstore.bundle+json;version=0.2") return BundleVersion::v0_2;
    if (mt == "application/vnd.dev.sigstore.bundle+json;version=0.3" ||
        mt == "application/vnd.dev.sigstore.bundle.v0.3+json") {
        return BundleVersion::v0_3;
    }
    return fail("unsupported mediaType \"" + mt.substr(0, 100) + "\"");
}

Result<InclusionProof> parse_proof(json_object* p, const std::string& path) {
    InclusionProof ip;
    auto idx = count_member(p, "logIndex", path + ".logIndex");
    if (!idx) return idx.fail();
    ip.log_index = *idx;
    auto size = count_member(p, "treeSize", path + ".treeSize");
    if (!size) return size.fail();
    ip.tree_size = *size;
    auto root = bytes_member(p, "rootHash", path + ".rootHash", true);
    if (!root) return root.fail();
    ip.root_hash = std::move(*root);
    auto hashes = array_member(p, "hashes", path + ".hashes", kMaxProofHashes);
    if (!hashes) return hashes.fail();
    for (size_t i = 0; i < hashes->size(); ++i) {
        json_object* h = (*hashes)[i];
        std::string hp = path + ".hashes[" + std::to_string(i) + "]";
        if (!json_object_is_type(h, json_type_string)) return fail(hp + ": not a string");
        auto b = base64_decode(
            std::string_view(json_object_get_string(h), json_object_get_string_len(h)));
        if (!b) return b.fail(hp);
        ip.hashes.push_back(std::move(*b));
    }
    if (json_object* cp = member(p, "checkpoint")) {
        auto env = string_member(cp, "envelope", path + ".checkpoint.envelope", false);
        if (!env) return env.fail();
        ip.checkpoint = *env;
    }
    return ip;
}

Result<TlogEntry> parse_tlog_entry(json_object* e, const std::string& path) {
    if (!json_object_is_type(e, json_type_object)) return fail(path + ": not an object");
    TlogEntry t;
    auto idx = count_member(e, "logIndex", path + ".logIndex");
    if (!idx) return idx.fail();
    t.log_index = *idx;
    auto id = object_member(e, "logId", path + ".logId");
    if (!id) return id.fail();
    auto kid = bytes_member(*id, "keyId", path + ".logId.keyId", true);
    if (!kid) return kid.fail();
    t.log_id = std::move(*kid);
    auto kv = object_member(e, "kindVersion", path + ".kindVersion");
    if (!kv) return kv.fail();
    auto kind = string_member(*kv, "kind", path + ".kindVersion.kind", true);
    if (!kind) return kind.fail();
    t.kind = *kind;
    auto version = string_member(*kv, "version", path + ".kindVersion.version", true);
    if (!version) return version.fail();
    t.version = *version;
    auto it = count_member(e, "integratedTime", path + ".integratedTime");
    if (!it) return it.fail();
    t.integrated_time = *it;
    if (json_object* promise = member(e, "inclusionPromise")) {
        auto set = bytes_member(promise, "signedEntryTimestamp",
                                path + ".inclusionPromise.signedEntryTimestamp", true);
        if (!set) return set.fail();
        t.signed_entry_timestamp = std::move(*set);
    }
    if (json_object* proof = member(e, "inclusionProof")) {
        if (!json_object_is_type(proof, json_type_object)) {
            return fail(path + ".inclusionProof: not an object");
        }
        auto ip = parse_proof(proof, path + ".inclusionProof");
        if (!ip) return ip.fail();
        t.inclusion_proof = std::move(*ip);
    }
    auto body = bytes_member(e, "canonicalizedBody", path + ".canonicalizedBody", true);
    if (!body) return body.fail();
    t.canonicalized_body = std::move(*body);
    return t;
}

// A signedTimestamp is often the output of `base64 response.tsr`, wrapped at 76 columns; Go's
// decoder (sigstore-go, cosign) skips line breaks, so they are dropped here too, for this field
// only.
Result<Bytes> timestamp_bytes(json_object* ts, size_t i) {
    const std::string path = "verificationMaterial.timestampVerificationData.rfc3161Timestamps[" +
                             std::to_string(i) + "].signedTimestamp";
    auto text = string_member(ts, "signedTimestamp", path, true);
    if (!text) return text.fail();
    std::erase_if(*text, [](char c) { return c == '\n' || c == '\r'; });
    auto der = base64_decode(*text);
    if (!der) return der.fail(path);
    return der;
}

Status parse_material(json_object* vm, Bundle& b) {
    if (json_object* cert = member(vm, "certificate")) {
        auto der =
            bytes_member(cert, "rawBytes", "verificationMaterial.certificate.rawBytes", true);
        if (!der) return der.fail();
        b.certificates.push_back(std::move(*der));
    } else if (json_object* chain = member(vm, "x509CertificateChain")) {
        const std::string path = "verificationMaterial.x509CertificateChain.certificates";
        auto certs = array_member(chain, "certificates", path, kMaxCertificates);
        if (!certs) return certs.fail();
        if (certs->empty()) return fail(path + ": empty");
        for (size_t i = 0; i < certs->size(); ++i) {
            auto der = bytes_member((*certs)[i], "rawBytes",
                                    path + "[" + std::to_string(i) + "].rawBytes", true);
            if (!der) return der.fail();
            b.certificates.push_back(std::move(*der));
        }
    } else if (member(vm, "publicKey")) {
        b.material = Material::public_key;
    } else {
        return fail("verificationMaterial: no certificate, certificate chain or public key");
    }
    if (b.version == BundleVersion::v0_3 && member(vm, "x509CertificateChain")) {
        return fail(
            "verificationMaterial: a v0.3 bundle carries a single certificate, not a chain");
    }

    auto entries =
        array_member(vm, "tlogEntries", "verificationMaterial.tlogEntries", kMaxTlogEntries);
    if (!entries) return entries.fail();
    for (size_t i = 0; i < entries->size(); ++i) {
        auto t = parse_tlog_entry((*entries)[i],
                                  "verificationMaterial.tlogEntries[" + std::to_string(i) + "]");
        if (!t) return t.fail();
        b.tlog_entries.push_back(std::move(*t));
    }
    if (json_object* tvd = member(vm, "timestampVerificationData")) {
        auto ts = array_member(tvd, "rfc3161Timestamps",
                               "verificationMaterial.timestampVerificationData.rfc3161Timestamps",
                               kMaxTimestamps);
        if (!ts) return ts.fail();
        for (size_t i = 0; i < ts->size(); ++i) {
            auto der = timestamp_bytes((*ts)[i], i);
            if (!der) return der.fail();
            b.rfc3161_timestamps.push_back(std::move(*der));
        }
    }
    return {};
}

Status parse_message_signature(json_object* ms, Bundle& b) {
    if (!json_object_is_type(ms, json_type_object)) return fail("messageSignature: not an object");
    auto md = object_member(ms, "messageDigest", "messageSignature.messageDigest");
    if (!md) return md.fail();
    auto alg = string_member(*md, "algorithm", "messageSignature.messageDigest.algorithm", false);
    if (!alg) return alg.fail();
    b.digest_algorithm = *alg;
    auto dig = bytes_member(*md, "digest", "messageSignature.messageDigest.digest", true);
    if (!dig) return dig.fail();
    b.message_digest = std::move(*dig);
    auto sig = bytes_member(ms, "signature", "messageSignature.signature", true);
    if (!sig) return sig.fail();
    b.signature = std::move(*sig);
    return {};
}

Result<Bundle> parse(std::string_view json) {
    auto doc = parse_json(json, kMaxBundleBytes, kMaxDepth);
    if (!doc) return doc.fail();
    json_object* root = doc->get();
    Bundle b;
    auto mt = string_member(root, "mediaType", "mediaType", true);
    if (!mt) return mt.fail();
    auto version = parse_media_type(*mt);
    if (!version) return version.fail();
    b.version = *version;
    auto vm = object_member(root, "verificationMaterial", "verificationMaterial");
    if (!vm) return vm.fail();
    if (auto s = parse_material(*vm, b); !s) return s.fail();
    json_object* ms = member(root, "messageSignature");
    json_object* dsse = member(root, "dsseEnvelope");
    if (ms && dsse) return fail("both messageSignature and dsseEnvelope present");
    if (ms) {
        if (auto s = parse_message_signature(ms, b); !s) return s.fail();
    } else if (dsse) {
        b.content = Content::dsse_envelope;
        auto env = parse_envelope(dsse);
        if (!env) return env.fail();
        b.envelope = std::move(*env);
    } else {
        return fail("no messageSignature or dsseEnvelope");
    }
    return b;
}

}  // namespace

Result<Bundle> parse_bundle(std::string_view json) {
    auto b = parse(json);
    if (!b) return b.fail("bundle");
    return b;
}

}  // namespace myr::verify
