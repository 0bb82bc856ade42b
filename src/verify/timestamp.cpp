#include "verify/timestamp.hpp"

#include <mbedtls/oid.h>
#include <mbedtls/pk.h>

#include <cstring>
#include <memory>

#include "verify/certificate.hpp"
#include "verify/der.hpp"
#include "verify/public_key.hpp"

namespace myr::verify {

namespace {

// OID contents (no tag or length).
constexpr uint8_t kOidSignedData[] = {0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02};
constexpr uint8_t kOidTstInfo[] = {0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D,
                                   0x01, 0x09, 0x10, 0x01, 0x04};
constexpr uint8_t kOidContentType[] = {0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x03};
constexpr uint8_t kOidMessageDigest[] = {0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x04};
constexpr uint8_t kOidRsaEncryption[] = {0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01};
constexpr uint8_t kOidEcPublicKey[] = {0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01};

template <size_t N>
bool is_oid(const DerElement& e, const uint8_t (&oid)[N]) {
    return e.tag == der::kOid && e.content_equals(oid, N);
}

mbedtls_asn1_buf as_buf(const DerElement& e) {
    mbedtls_asn1_buf b;
    b.tag = e.tag;
    b.len = e.length;
    b.p = const_cast<unsigned char*>(e.content);
    return b;
}

// AlgorithmIdentifier ::= SEQUENCE { algorithm OID, parameters ANY OPTIONAL }: the OID.
Result<DerElement> algorithm_oid(DerReader& in, const char* what) {
    auto seq = in.expect(der::kSequence, what);
    if (!seq) return seq.fail();
    auto r = in.enter(*seq, what);
    if (!r) return r.fail();
    return r->expect(der::kOid, what);
}

// A hash we accept for imprints and digests: SHA-256, SHA-384, SHA-512.
Result<mbedtls_md_type_t> hash_algorithm(DerReader& in, const char* what) {
    auto oid = algorithm_oid(in, what);
    if (!oid) return oid.fail();
    mbedtls_asn1_buf b = as_buf(*oid);
    mbedtls_md_type_t md = MBEDTLS_MD_NONE;
    if (mbedtls_oid_get_md_alg(&b, &md) != 0 ||
        (md != MBEDTLS_MD_SHA256 && md != MBEDTLS_MD_SHA384 && md != MBEDTLS_MD_SHA512)) {
        return fail(std::string(what) + ": hash algorithm is not SHA-256, SHA-384 or SHA-512");
    }
    return md;
}

Bytes digest_of(mbedtls_md_type_t md, const uint8_t* p, size_t n) {
    const mbedtls_md_info_t* info = mbedtls_md_info_from_type(md);
    Bytes out(mbedtls_md_get_size(info));
    mbedtls_md(info, p, n, out.data());
    return out;
}

Status parse_tst_info(Rfc3161Token& t) {
    DerReader top(t.tst_info.data(), t.tst_info.size());
    auto seq = top.expect(der::kSequence, "TSTInfo");
    if (!seq) return seq.fail();
    if (auto ok = top.finish("TSTInfo"); !ok) return ok.fail();
    auto r = top.enter(*seq, "TSTInfo");
    if (!r) return r.fail();
    auto version = r->expect(der::kInteger, "TSTInfo.version");
    if (!version) return version.fail();
    if (version->length != 1 || version->content[0] != 1) return fail("TSTInfo.version: not 1");
    if (auto policy = r->expect(der::kOid, "TSTInfo.policy"); !policy) return policy.fail();
    auto mi = r->expect(der::kSequence, "TSTInfo.messageImprint");
    if (!mi) return mi.fail();
    auto mr = r->enter(*mi, "TSTInfo.messageImprint");
    if (!mr) return mr.fail();
    auto md = hash_algorithm(*mr, "TSTInfo.messageImprint.hashAlgorithm");
    if (!md) return md.fail();
    t.imprint_md = *md;
    auto hashed = mr->expect(der::kOctetString, "TSTInfo.messageImprint.hashedMessage");
    if (!hashed) return hashed.fail();
    t.imprint = hashed->content_bytes();
    if (auto ok = mr->finish("TSTInfo.messageImprint"); !ok) return ok.fail();
    if (auto serial = r->expect(der::kInteger, "TSTInfo.serialNumber"); !serial) {
        return serial.fail();
    }
    auto gen = r->expect(der::kGeneralizedTime, "TSTInfo.genTime");
    if (!gen) return gen.fail();
    auto when = parse_generalized_time(*gen);
    if (!when) return when.fail("TSTInfo.genTime");
    t.gen_time = *when;
    // accuracy, ordering, nonce, tsa and extensions follow; the policy uses none of them.
    return {};
}

// The signed attributes: contentType must be id-ct-TSTInfo, messageDigest is kept.
Status parse_signed_attributes(DerReader& in, const DerElement& attrs, Rfc3161Token& t) {
    t.signed_attributes = attrs.raw_bytes();
    t.signed_attributes[0] = der::kSet;  // RFC 5652 5.4: the signature covers them as SET OF
    auto r = in.enter(attrs, "SignerInfo.signedAttrs");
    if (!r) return r.fail();
    bool content_type = false, digest = false;
    for (size_t n = 0; !r->done(); ++n) {
        if (n == kMaxSignedAttributes) return fail("SignerInfo.signedAttrs: too many attributes");
        auto a = r->expect(der::kSequence, "SignerInfo.signedAttrs attribute");
        if (!a) return a.fail();
        auto ar = r->enter(*a, "SignerInfo.signedAttrs attribute");
        if (!ar) return ar.fail();
        auto oid = ar->expect(der::kOid, "attribute type");
        if (!oid) return oid.fail();
        auto values = ar->expect(der::kSet, "attribute values");
        if (!values) return values.fail();
        auto vr = ar->enter(*values, "attribute values");
        if (!vr) return vr.fail();
        if (is_oid(*oid, kOidContentType)) {
            auto v = vr->expect(der::kOid, "contentType attribute");
            if (!v) return v.fail();
            if (!is_oid(*v, kOidTstInfo) || !vr->done() || content_type) {
                return fail("contentType attribute: not exactly id-ct-TSTInfo");
            }
            content_type = true;
        } else if (is_oid(*oid, kOidMessageDigest)) {
            auto v = vr->expect(der::kOctetString, "messageDigest attribute");
            if (!v) return v.fail();
            if (!vr->done() || digest) return fail("messageDigest attribute: not exactly one");
            t.message_digest = v->content_bytes();
            digest = true;
        }
    }
    if (!content_type) return fail("SignerInfo.signedAttrs: no contentType attribute");
    if (!digest) return fail("SignerInfo.signedAttrs: no messageDigest attribute");
    return {};
}

// The signature algorithm: ecdsa-with-SHA* and sha*WithRSAEncryption name their hash; a bare
// rsaEncryption or ecPublicKey means the SignerInfo's digest algorithm.
Status parse_signature_algorithm(DerReader& in, Rfc3161Token& t) {
    auto oid = algorithm_oid(in, "SignerInfo.signatureAlgorithm");
    if (!oid) return oid.fail();
    if (is_oid(*oid, kOidRsaEncryption) || is_oid(*oid, kOidEcPublicKey)) {
        t.signature_md = t.digest_md;
        return {};
    }
    mbedtls_asn1_buf b = as_buf(*oid);
    mbedtls_pk_type_t pk = MBEDTLS_PK_NONE;
    if (mbedtls_oid_get_sig_alg(&b, &t.signature_md, &pk) != 0 ||
        (pk != MBEDTLS_PK_ECDSA && pk != MBEDTLS_PK_RSA) ||
        (t.signature_md != MBEDTLS_MD_SHA256 && t.signature_md != MBEDTLS_MD_SHA384 &&
         t.signature_md != MBEDTLS_MD_SHA512)) {
        return fail("SignerInfo.signatureAlgorithm: not ECDSA or RSA PKCS#1 with SHA-2");
    }
    return {};
}

Status parse_signer_info(DerReader& in, const DerElement& si, Rfc3161Token& t) {
    auto r = in.enter(si, "SignerInfo");
    if (!r) return r.fail();
    if (auto v = r->expect(der::kInteger, "SignerInfo.version"); !v) return v.fail();
    if (r->peek_tag() != der::kSequence) {
        return fail("SignerInfo.sid: only issuerAndSerialNumber is supported");
    }
    auto sid = r->expect(der::kSequence, "SignerInfo.sid");
    if (!sid) return sid.fail();
    auto sr = r->enter(*sid, "SignerInfo.sid");
    if (!sr) return sr.fail();
    auto issuer = sr->expect(der::kSequence, "SignerInfo.sid.issuer");
    if (!issuer) return issuer.fail();
    auto serial = sr->expect(der::kInteger, "SignerInfo.sid.serialNumber");
    if (!serial) return serial.fail();
    if (auto ok = sr->finish("SignerInfo.sid"); !ok) return ok.fail();
    t.signer_issuer = issuer->raw_bytes();
    t.signer_serial = serial->content_bytes();
    auto md = hash_algorithm(*r, "SignerInfo.digestAlgorithm");
    if (!md) return md.fail();
    t.digest_md = *md;
    auto attrs = r->expect(der::kContext0, "SignerInfo.signedAttrs");
    if (!attrs) return attrs.fail();
    if (auto ok = parse_signed_attributes(*r, *attrs, t); !ok) return ok.fail();
    if (auto ok = parse_signature_algorithm(*r, t); !ok) return ok.fail();
    auto sig = r->expect(der::kOctetString, "SignerInfo.signature");
    if (!sig) return sig.fail();
    t.signature = sig->content_bytes();
    if (r->peek_tag() == der::kContext1) {
        if (auto u = r->next("SignerInfo.unsignedAttrs"); !u) return u.fail();
    }
    return r->finish("SignerInfo");
}

// SignedData ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo,
//                           certificates [0] OPTIONAL, crls [1] OPTIONAL, signerInfos SET }
Status parse_signed_data(DerReader& in, const DerElement& sd, Rfc3161Token& t) {
    auto r = in.enter(sd, "SignedData");
    if (!r) return r.fail();
    if (auto v = r->expect(der::kInteger, "SignedData.version"); !v) return v.fail();
    if (auto d = r->expect(der::kSet, "SignedData.digestAlgorithms"); !d) return d.fail();
    auto eci = r->expect(der::kSequence, "SignedData.encapContentInfo");
    if (!eci) return eci.fail();
    auto er = r->enter(*eci, "SignedData.encapContentInfo");
    if (!er) return er.fail();
    auto type = er->expect(der::kOid, "encapContentInfo.eContentType");
    if (!type) return type.fail();
    if (!is_oid(*type, kOidTstInfo)) return fail("encapContentInfo: content is not a TSTInfo");
    auto wrapped = er->expect(der::kContext0, "encapContentInfo.eContent");
    if (!wrapped) return wrapped.fail();
    auto wr = er->enter(*wrapped, "encapContentInfo.eContent");
    if (!wr) return wr.fail();
    auto content = wr->expect(der::kOctetString, "encapContentInfo.eContent");
    if (!content) return content.fail();
    if (auto ok = wr->finish("encapContentInfo.eContent"); !ok) return ok.fail();
    t.tst_info = content->content_bytes();
    if (r->peek_tag() == der::kContext0) {
        auto certs = r->next("SignedData.certificates");
        if (!certs) return certs.fail();
        auto cr = r->enter(*certs, "SignedData.certificates");
        if (!cr) return cr.fail();
        while (!cr->done()) {
            if (t.certificates.size() == kMaxTimestampCertificates) {
                return fail("SignedData.certificates: more than " +
                            std::to_string(kMaxTimestampCertificates));
            }
            auto c = cr->expect(der::kSequence, "SignedData.certificates");
            if (!c) return c.fail();
            t.certificates.push_back(c->raw_bytes());
        }
    }
    if (r->peek_tag() == der::kContext1) {
        if (auto crls = r->next("SignedData.crls"); !crls) return crls.fail();
    }
    auto infos = r->expect(der::kSet, "SignedData.signerInfos");
    if (!infos) return infos.fail();
    if (auto ok = r->finish("SignedData"); !ok) return ok.fail();
    auto ir = r->enter(*infos, "SignedData.signerInfos");
    if (!ir) return ir.fail();
    auto si = ir->expect(der::kSequence, "SignerInfo");
    if (!si) return si.fail();
    if (!ir->done()) return fail("SignedData.signerInfos: more than one SignerInfo");
    return parse_signer_info(*ir, *si, t);
}

// TimeStampResp ::= SEQUENCE { status PKIStatusInfo, timeStampToken ContentInfo } or the bare
// ContentInfo ::= SEQUENCE { contentType OID signedData, content [0] EXPLICIT SignedData }.
Result<DerReader> content_info(DerReader& top) {
    auto outer = top.expect(der::kSequence, "TimeStampResp");
    if (!outer) return outer.fail();
    if (auto ok = top.finish("TimeStampResp"); !ok) return ok.fail();
    auto r = top.enter(*outer, "TimeStampResp");
    if (!r) return r.fail();
    if (r->peek_tag() != der::kSequence) return r;  // already the ContentInfo
    auto status = r->expect(der::kSequence, "PKIStatusInfo");
    if (!status) return status.fail();
    auto sr = r->enter(*status, "PKIStatusInfo");
    if (!sr) return sr.fail();
    auto code = sr->expect(der::kInteger, "PKIStatusInfo.status");
    if (!code) return code.fail();
    // 0 granted, 1 grantedWithMods; anything else carries no token worth reading.
    if (code->length != 1 || code->content[0] > 1) return fail("PKIStatusInfo: not granted");
    auto token = r->expect(der::kSequence, "timeStampToken");
    if (!token) return token.fail();
    if (auto ok = r->finish("TimeStampResp"); !ok) return ok.fail();
    return r->enter(*token, "timeStampToken");
}

}  // namespace

Result<Rfc3161Token> parse_rfc3161(const Bytes& der) {
    if (der.size() > kMaxTimestampBytes) {
        return fail("larger than the limit of " + std::to_string(kMaxTimestampBytes) + " bytes");
    }
    DerReader top(der.data(), der.size());
    auto ci = content_info(top);
    if (!ci) return ci.fail();
    auto type = ci->expect(der::kOid, "ContentInfo.contentType");
    if (!type) return type.fail();
    if (!is_oid(*type, kOidSignedData)) return fail("ContentInfo: not a CMS SignedData");
    auto wrapped = ci->expect(der::kContext0, "ContentInfo.content");
    if (!wrapped) return wrapped.fail();
    if (auto ok = ci->finish("ContentInfo"); !ok) return ok.fail();
    auto wr = ci->enter(*wrapped, "ContentInfo.content");
    if (!wr) return wr.fail();
    auto sd = wr->expect(der::kSequence, "SignedData");
    if (!sd) return sd.fail();
    if (auto ok = wr->finish("ContentInfo.content"); !ok) return ok.fail();
    Rfc3161Token t;
    if (auto ok = parse_signed_data(*wr, *sd, t); !ok) return ok.fail();
    if (auto ok = parse_tst_info(t); !ok) return ok.fail();
    return t;
}

namespace {

// The embedded certificate the SignerInfo names (issuer and serial number), if any.
std::unique_ptr<Certificate> embedded_signer(const Rfc3161Token& t) {
    for (const Bytes& der : t.certificates) {
        auto c = Certificate::parse(der);
        if (!c) continue;
        const mbedtls_x509_crt& crt = (*c)->crt();
        if (crt.issuer_raw.len == t.signer_issuer.size() &&
            std::memcmp(crt.issuer_raw.p, t.signer_issuer.data(), t.signer_issuer.size()) == 0 &&
            crt.serial.len == t.signer_serial.size() &&
            std::memcmp(crt.serial.p, t.signer_serial.data(), t.signer_serial.size()) == 0) {
            return std::move(*c);
        }
    }
    return nullptr;
}

// The signer's certificate chains to the authority at `t`. The authority's chain usually starts
// with the TSA's own leaf; a signer equal to it is checked against the rest of the chain.
Status chain_to_authority(const Certificate& signer, const CertificateAuthority& a, int64_t t) {
    const mbedtls_x509_crt& crt = signer.crt();
    Bytes der(crt.raw.p, crt.raw.p + crt.raw.len);
    if (der == a.chain.front()) {
        if (t < signer.not_before() || t > signer.not_after()) {
            return fail("TSA certificate is not valid at genTime " + std::to_string(t) +
                        " (valid " + std::to_string(signer.not_before()) + ".." +
                        std::to_string(signer.not_after()) + ")");
        }
        if (a.chain.size() == 1) return {};  // the root pins this very certificate
        CertificateAuthority rest = a;
        rest.chain.erase(rest.chain.begin());
        return verify_chain_at(der, rest, t);
    }
    return verify_chain_at(der, a, t);
}

Status check_signer(const Certificate& signer, const Rfc3161Token& t) {
    const mbedtls_x509_crt& crt = signer.crt();
    if (!(crt.ext_types & MBEDTLS_X509_EXT_EXTENDED_KEY_USAGE) ||
        mbedtls_x509_crt_check_extended_key_usage(
            &crt, MBEDTLS_OID_TIME_STAMPING, MBEDTLS_OID_SIZE(MBEDTLS_OID_TIME_STAMPING)) != 0) {
        return fail("TSA certificate lacks the timeStamping extended key usage");
    }
    Bytes digest =
        digest_of(t.signature_md, t.signed_attributes.data(), t.signed_attributes.size());
    int r = mbedtls_pk_verify(const_cast<mbedtls_pk_context*>(&crt.pk), t.signature_md,
                              digest.data(), digest.size(), t.signature.data(), t.signature.size());
    if (r != 0) return fail("TSA signature does not verify: " + mbedtls_error_text(r));
    return {};
}

}  // namespace

Result<VerifiedTimestamp> verify_rfc3161(const Bytes& token, const Bytes& bundle_signature,
                                         const std::vector<CertificateAuthority>& authorities) {
    auto t = parse_rfc3161(token);
    if (!t) return t.fail();
    if (digest_of(t->digest_md, t->tst_info.data(), t->tst_info.size()) != t->message_digest) {
        return fail("messageDigest attribute != hash of the TSTInfo");
    }
    if (digest_of(t->imprint_md, bundle_signature.data(), bundle_signature.size()) != t->imprint) {
        return fail("message imprint != hash of the bundle signature");
    }
    auto embedded = embedded_signer(*t);
    std::string problem = "no timestamp authority in the trusted root is valid at genTime " +
                          std::to_string(t->gen_time);
    for (const CertificateAuthority& a : authorities) {
        if (!a.valid_for.contains(t->gen_time) || a.chain.empty()) continue;
        std::unique_ptr<Certificate> own;
        const Certificate* signer = embedded.get();
        if (!signer) {
            auto c = Certificate::parse(a.chain.front());
            if (!c) {
                problem = "timestamp authority " + a.uri + ": " + c.error().message();
                continue;
            }
            own = std::move(*c);
            signer = own.get();
        }
        Status ok = chain_to_authority(*signer, a, t->gen_time);
        if (ok) ok = check_signer(*signer, *t);
        if (ok) return VerifiedTimestamp{t->gen_time, a.uri};
        problem = "timestamp authority " + a.uri + ": " + ok.error().message();
    }
    return fail(problem);
}

}  // namespace myr::verify
