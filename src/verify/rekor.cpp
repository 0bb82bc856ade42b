#include "verify/rekor.hpp"

#include <cstring>
#include <string_view>

#include "core/hex.hpp"
#include "verify/ed25519.hpp"
#include "verify/public_key.hpp"
#include "verify/rekor_v2.hpp"

namespace myr::verify {

using hash::Digest;
using hash::digest_from_hex;
using hash::Sha256;

Result<const LogKey*> find_log(const std::vector<LogKey>& logs, const Bytes& log_id, int64_t t) {
    bool known = false, unbounded = false;
    for (const LogKey& k : logs) {
        if (k.log_id != log_id) continue;
        known = true;
        if (!k.valid_for.start) {
            unbounded = true;  // a key without validFor.start is malformed, never trusted
            continue;
        }
        if (k.valid_for.contains(t)) return &k;
    }
    if (!known) return fail("log ID " + base64_encode(log_id) + " is not in the trusted root");
    if (unbounded) return fail("trusted log key for this log ID has no validFor.start");
    return fail("trusted log key is not valid at " + std::to_string(t));
}

Status verify_signed_entry_timestamp(const TlogEntry& e, const LogKey& log) {
    if (e.signed_entry_timestamp.empty()) return fail("missing (no inclusionPromise)");
    std::string payload = "{\"body\":\"" + base64_encode(e.canonicalized_body) +
                          "\",\"integratedTime\":" + std::to_string(e.integrated_time) +
                          ",\"logID\":\"" + hex::encode(e.log_id.data(), e.log_id.size()) +
                          "\",\"logIndex\":" + std::to_string(e.log_index) + "}";
    auto key = PublicKey::from_spki(log.spki);
    if (!key) return key.fail("Rekor key");
    auto ok = key->verify_message(reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
                                  e.signed_entry_timestamp);
    if (!ok) return ok.fail();
    return {};
}

namespace {

Digest hash_children(const Digest& l, const Digest& r) {
    Sha256 h;
    uint8_t prefix = 1;
    h.update(&prefix, 1);
    h.update(l.data(), l.size());
    h.update(r.data(), r.size());
    return h.finish();
}

int bit_length(uint64_t x) {
    int n = 0;
    for (; x; x >>= 1) ++n;
    return n;
}

int pop_count(uint64_t x) {
    int n = 0;
    for (; x; x >>= 1) n += static_cast<int>(x & 1);
    return n;
}

}  // namespace

Result<Digest> inclusion_root(const Bytes& leaf, uint64_t index, uint64_t tree_size,
                              const std::vector<Bytes>& hashes) {
    if (tree_size == 0 || index >= tree_size) {
        return fail("logIndex " + std::to_string(index) + " is outside a tree of size " +
                    std::to_string(tree_size));
    }
    size_t inner = static_cast<size_t>(bit_length(index ^ (tree_size - 1)));
    // inner reaches 64 for the largest trees; shifting a uint64_t by 64 is undefined.
    size_t border = inner >= 64 ? 0 : static_cast<size_t>(pop_count(index >> inner));
    if (hashes.size() != inner + border) {
        return fail(std::to_string(hashes.size()) + " hashes where the tree shape needs " +
                    std::to_string(inner + border));
    }
    std::vector<Digest> hs;
    for (const Bytes& b : hashes) {
        if (b.size() != 32) return fail("a proof hash is not 32 bytes");
        Digest d;
        std::memcpy(d.data(), b.data(), 32);
        hs.push_back(d);
    }
    Sha256 lh;
    uint8_t prefix = 0;
    lh.update(&prefix, 1);
    lh.update(leaf.data(), leaf.size());
    Digest h = lh.finish();
    for (size_t i = 0; i < inner; ++i) {
        h = ((index >> i) & 1) ? hash_children(hs[i], h) : hash_children(h, hs[i]);
    }
    for (size_t i = inner; i < hs.size(); ++i) h = hash_children(hs[i], h);
    return h;
}

Status verify_inclusion_proof(const TlogEntry& e) {
    if (!e.inclusion_proof) return fail("missing");
    const InclusionProof& p = *e.inclusion_proof;
    if (p.root_hash.size() != 32) return fail("rootHash is not 32 bytes");
    auto root = inclusion_root(e.canonicalized_body, static_cast<uint64_t>(p.log_index),
                               static_cast<uint64_t>(p.tree_size), p.hashes);
    if (!root) return root.fail();
    if (std::memcmp(root->data(), p.root_hash.data(), 32) != 0) {
        return fail("computed root != rootHash");
    }
    return {};
}

Status verify_checkpoint(const InclusionProof& proof, const LogKey& log) {
    std::string_view env = proof.checkpoint;
    if (env.empty()) return fail("missing");
    size_t blank = env.find("\n\n");
    if (blank == std::string_view::npos) return fail("no blank line between note and signatures");
    std::string_view note = env.substr(0, blank + 1);  // signed text, through its last newline
    // Note lines: origin, tree size, base64 root hash, then optional extension lines.
    size_t l1 = note.find('\n');
    size_t l2 = l1 == std::string_view::npos ? l1 : note.find('\n', l1 + 1);
    size_t l3 = l2 == std::string_view::npos ? l2 : note.find('\n', l2 + 1);
    if (l3 == std::string_view::npos) return fail("note has fewer than three lines");
    if (l1 == 0) return fail("empty origin line");
    auto root = base64_decode(note.substr(l2 + 1, l3 - l2 - 1));
    if (!root) return root.fail("root hash line");
    if (*root != proof.root_hash) return fail("root hash != inclusion proof rootHash");
    auto size = parse_decimal_count(note.substr(l1 + 1, l2 - l1 - 1));
    if (!size) return size.fail("tree size line");
    if (*size != proof.tree_size) {
        return fail("tree size " + std::to_string(*size) + " != inclusion proof treeSize " +
                    std::to_string(proof.tree_size));
    }

    // Signature lines: "\u2014 <name> <base64(4-byte key hint || signature)>".
    constexpr std::string_view kDash = "\xE2\x80\x94 ";
    std::string_view rest = env.substr(blank + 2);
    bool hint_matched = false;
    std::string problem;
    int lines = 0;
    while (!rest.empty()) {
        size_t nl = rest.find('\n');
        if (nl == std::string_view::npos) return fail("signature line without newline");
        std::string_view line = rest.substr(0, nl);
        rest.remove_prefix(nl + 1);
        if (++lines > 64) return fail("too many signature lines");
        if (line.substr(0, kDash.size()) != kDash) return fail("malformed signature line");
        line.remove_prefix(kDash.size());
        size_t sp = line.rfind(' ');
        if (sp == std::string_view::npos || sp == 0) return fail("malformed signature line");
        auto blob = base64_decode(line.substr(sp + 1));
        if (!blob) return blob.fail("signature line");
        if (blob->size() <= 4 || log.log_id.size() < 4) continue;
        if (std::memcmp(blob->data(), log.log_id.data(), 4) != 0) continue;
        hint_matched = true;
        Bytes sig(blob->begin() + 4, blob->end());
        // ECDSA for Rekor v1, Ed25519 for Rekor v2.
        auto ok = verify_with_spki(log.spki, reinterpret_cast<const uint8_t*>(note.data()),
                                   note.size(), sig);
        if (ok) return {};
        problem = ok.error().message();
    }
    if (!hint_matched) return fail("no signature with the log's key hint");
    return fail("log signature: " + problem);
}

namespace {

Result<std::string> body_string(json_object* obj, const char* key, const std::string& path) {
    return string_member(obj, key, path, true);
}

}  // namespace

Status check_hashedrekord_body(const TlogEntry& e, const Bundle& b, const Digest& artifact,
                               const Signer& signer) {
    std::string_view text(reinterpret_cast<const char*>(e.canonicalized_body.data()),
                          e.canonicalized_body.size());
    auto doc = parse_json(text, kMaxBundleBytes, 16);
    if (!doc) return doc.fail("canonicalizedBody");
    json_object* root = doc->get();
    auto kind = body_string(root, "kind", "kind");
    if (!kind) return kind.fail();
    auto api = body_string(root, "apiVersion", "apiVersion");
    if (!api) return api.fail();
    if (*kind != e.kind || *api != e.version) {
        return fail("body is " + *kind + "/" + *api + " but the entry says " + e.kind + "/" +
                    e.version);
    }
    if (*kind == "hashedrekord" && *api == "0.0.2") {
        // Rekor v2 records a managed key by its key ID only; this build logs keys through v1.
        if (signer.kind != Signer::Kind::certificate) {
            return fail("a Rekor v2 entry for a managed key is not supported");
        }
        return check_hashedrekord_v002(root, b, artifact, signer.der);
    }
    if (*kind != "hashedrekord" || *api != "0.0.1") {
        return fail("unsupported entry " + *kind + "/" + *api);
    }
    auto spec = object_member(root, "spec", "spec");
    if (!spec) return spec.fail();
    auto data = object_member(*spec, "data", "spec.data");
    if (!data) return data.fail();
    auto hash = object_member(*data, "hash", "spec.data.hash");
    if (!hash) return hash.fail();
    auto alg = body_string(*hash, "algorithm", "spec.data.hash.algorithm");
    if (!alg) return alg.fail();
    if (*alg != "sha256") return fail("body hash algorithm " + *alg + " is not sha256");
    auto value = body_string(*hash, "value", "spec.data.hash.value");
    if (!value) return value.fail();
    auto digest = digest_from_hex(*value);
    if (!digest) return digest.fail("spec.data.hash.value");
    if (*digest != artifact) return fail("body digest != artifact sha256");

    auto sig = object_member(*spec, "signature", "spec.signature");
    if (!sig) return sig.fail();
    auto content = bytes_member(*sig, "content", "spec.signature.content", true);
    if (!content) return content.fail();
    if (*content != b.signature) return fail("body signature != bundle signature");
    auto pk = object_member(*sig, "publicKey", "spec.signature.publicKey");
    if (!pk) return pk.fail();
    auto pem = bytes_member(*pk, "content", "spec.signature.publicKey.content", true);
    if (!pem) return pem.fail();
    return check_body_verifier(*pem, signer);
}

}  // namespace myr::verify
