#include "verify/dsse.hpp"

#include "hash/sha256.hpp"
#include "verify/bundle.hpp"

namespace myr::verify {

Result<Envelope> parse_envelope(json_object* dsse) {
    if (!json_object_is_type(dsse, json_type_object)) return fail("dsseEnvelope: not an object");
    Envelope env;
    auto payload = bytes_member(dsse, "payload", "dsseEnvelope.payload", true);
    if (!payload) return payload.fail();
    env.payload = std::move(*payload);
    auto type = string_member(dsse, "payloadType", "dsseEnvelope.payloadType", true);
    if (!type) return type.fail();
    env.payload_type = *type;
    const std::string path = "dsseEnvelope.signatures";
    auto sigs = array_member(dsse, "signatures", path, kMaxEnvelopeSignatures);
    if (!sigs) return sigs.fail();
    for (size_t i = 0; i < sigs->size(); ++i) {
        const std::string sp = path + "[" + std::to_string(i) + "]";
        if (!json_object_is_type((*sigs)[i], json_type_object)) return fail(sp + ": not an object");
        auto sig = bytes_member((*sigs)[i], "sig", sp + ".sig", true);
        if (!sig) return sig.fail();
        env.signatures.push_back(std::move(*sig));
    }
    if (env.signatures.empty()) return fail(path + ": missing or empty");
    return env;
}

Bytes pae(std::string_view payload_type, const Bytes& payload) {
    std::string head = "DSSEv1 " + std::to_string(payload_type.size()) + " " +
                       std::string(payload_type) + " " + std::to_string(payload.size()) + " ";
    Bytes out(head.begin(), head.end());
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

namespace {

// A {"algorithm":"sha256","value":"<hex>"} member must name the SHA-256 of `data`.
Status check_hash_member(json_object* obj, const char* key, const std::string& path,
                         const Bytes& data) {
    auto h = object_member(obj, key, path);
    if (!h) return h.fail();
    auto alg = string_member(*h, "algorithm", path + ".algorithm", true);
    if (!alg) return alg.fail();
    if (*alg != "sha256") return fail(path + ": algorithm " + *alg + " is not sha256");
    auto value = string_member(*h, "value", path + ".value", true);
    if (!value) return value.fail();
    auto digest = hash::digest_from_hex(*value);
    if (!digest) return digest.fail(path + ".value");
    auto actual =
        hash::sha256(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
    if (*digest != actual) return fail(path + " != the SHA-256 of the envelope payload");
    return {};
}

// The body's single signature entry.
Result<json_object*> only_signature(json_object* obj, const std::string& path) {
    auto sigs = array_member(obj, "signatures", path, kMaxEnvelopeSignatures);
    if (!sigs) return sigs.fail();
    if (sigs->size() != 1) {
        return fail(path + ": " + std::to_string(sigs->size()) + " signatures, expected 1");
    }
    if (!json_object_is_type(sigs->front(), json_type_object)) {
        return fail(path + "[0]: not an object");
    }
    return sigs->front();
}

Status check_signer(const Bytes& body_sig, const Bytes& body_verifier, const Envelope& env,
                    const Signer& signer) {
    if (body_sig != env.signatures.front()) return fail("body signature != envelope signature");
    return check_body_verifier(body_verifier, signer);
}

Status check_dsse_001(json_object* spec, const Envelope& env, const Signer& signer) {
    auto sig = only_signature(spec, "spec.signatures");
    if (!sig) return sig.fail();
    auto content = bytes_member(*sig, "signature", "spec.signatures[0].signature", true);
    if (!content) return content.fail();
    auto verifier = bytes_member(*sig, "verifier", "spec.signatures[0].verifier", true);
    if (!verifier) return verifier.fail();
    if (auto ok = check_signer(*content, *verifier, env, signer); !ok) return ok.fail();
    return check_hash_member(spec, "payloadHash", "spec.payloadHash", env.payload);
}

// intoto 0.0.2 stores the envelope's base64 fields base64-encoded a second time.
Status check_intoto_002(json_object* spec, const Envelope& env, const Signer& signer) {
    auto content = object_member(spec, "content", "spec.content");
    if (!content) return content.fail();
    auto envelope = object_member(*content, "envelope", "spec.content.envelope");
    if (!envelope) return envelope.fail();
    auto type = string_member(*envelope, "payloadType", "spec.content.envelope.payloadType", true);
    if (!type) return type.fail();
    if (*type != env.payload_type) return fail("body payloadType != envelope payloadType");
    const std::string sp = "spec.content.envelope.signatures";
    auto sig = only_signature(*envelope, sp);
    if (!sig) return sig.fail();
    auto sig_text = bytes_member(*sig, "sig", sp + "[0].sig", true);
    if (!sig_text) return sig_text.fail();
    auto body_sig = base64_decode(
        std::string_view(reinterpret_cast<const char*>(sig_text->data()), sig_text->size()));
    if (!body_sig) return body_sig.fail(sp + "[0].sig");
    auto verifier = bytes_member(*sig, "publicKey", sp + "[0].publicKey", true);
    if (!verifier) return verifier.fail();
    if (auto ok = check_signer(*body_sig, *verifier, env, signer); !ok) return ok.fail();
    return check_hash_member(*content, "payloadHash", "spec.content.payloadHash", env.payload);
}

}  // namespace

Status check_dsse_body(const TlogEntry& e, const Envelope& env, const Signer& signer) {
    std::string_view text(reinterpret_cast<const char*>(e.canonicalized_body.data()),
                          e.canonicalized_body.size());
    auto doc = parse_json(text, kMaxBundleBytes, 16);
    if (!doc) return doc.fail("canonicalizedBody");
    json_object* root = doc->get();
    auto kind = string_member(root, "kind", "kind", true);
    if (!kind) return kind.fail();
    auto api = string_member(root, "apiVersion", "apiVersion", true);
    if (!api) return api.fail();
    if (*kind != e.kind || *api != e.version) {
        return fail("body is " + *kind + "/" + *api + " but the entry says " + e.kind + "/" +
                    e.version);
    }
    auto spec = object_member(root, "spec", "spec");
    if (!spec) return spec.fail();
    if (env.signatures.size() != 1) return fail("the envelope must carry exactly one signature");
    if (*kind == "dsse" && *api == "0.0.1") return check_dsse_001(*spec, env, signer);
    if (*kind == "intoto" && *api == "0.0.2") return check_intoto_002(*spec, env, signer);
    return fail("entry " + *kind + "/" + *api + " cannot log a DSSE envelope");
}

}  // namespace myr::verify
