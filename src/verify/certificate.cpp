#include "verify/certificate.hpp"

#include <mbedtls/asn1.h>
#include <mbedtls/oid.h>
#include <mbedtls/sha256.h>

#include <cstring>

#include "verify/public_key.hpp"

namespace myr::verify {

namespace {

// 1.3.6.1.4.1.11129.2.4.2 (DER contents).
constexpr uint8_t kOidSctList[] = {0x2B, 0x06, 0x01, 0x04, 0x01, 0xD6, 0x79, 0x02, 0x04, 0x02};

template <size_t N>
bool oid_is(const unsigned char* p, size_t len, const uint8_t (&oid)[N]) {
    return len == N && std::memcmp(p, oid, N) == 0;
}

}  // namespace

int64_t x509_time_seconds(const mbedtls_x509_time& t) {
    return epoch_seconds(t.year, t.mon, t.day, t.hour, t.min, t.sec);
}

Certificate::Certificate() {
    mbedtls_x509_crt_init(&crt_);
}
Certificate::~Certificate() {
    mbedtls_x509_crt_free(&crt_);
}

int Certificate::on_extension(void* ctx, const mbedtls_x509_crt*, const mbedtls_x509_buf* oid,
                              int critical, const unsigned char* p, const unsigned char* end) {
    auto* self = static_cast<Certificate*>(ctx);
    if (auto arc = FulcioExtensions::recognise(oid->p, oid->len)) {
        auto ok = self->fulcio_.add(*arc, p, static_cast<size_t>(end - p));
        if (!ok && self->extension_problem_.empty()) {
            self->extension_problem_ = ok.error().message();
        }
        if (!ok) return MBEDTLS_ERR_X509_INVALID_EXTENSIONS;
    } else if (oid_is(oid->p, oid->len, kOidSctList)) {
        self->sct_list_ = Bytes(p, end);
    } else if (critical) {
        return MBEDTLS_ERR_X509_INVALID_EXTENSIONS;
    }
    return 0;
}

Result<std::unique_ptr<Certificate>> Certificate::parse(const Bytes& der) {
    std::unique_ptr<Certificate> c(new Certificate());
    if (der.empty()) return fail("empty certificate");
    int r = mbedtls_x509_crt_parse_der_with_ext_cb(&c->crt_, der.data(), der.size(), 1,
                                                   &Certificate::on_extension, c.get());
    // mbedTLS ignores a callback's refusal of a non-critical extension: the Fulcio ones are
    // refused here instead.
    if (!c->extension_problem_.empty()) {
        return fail("certificate does not parse: " + c->extension_problem_);
    }
    if (r != 0) return fail("certificate does not parse: " + mbedtls_error_text(r));
    return c;
}

bool Certificate::self_signed() const {
    return crt_.issuer_raw.len == crt_.subject_raw.len &&
           std::memcmp(crt_.issuer_raw.p, crt_.subject_raw.p, crt_.issuer_raw.len) == 0;
}

int64_t Certificate::not_before() const {
    return x509_time_seconds(crt_.valid_from);
}
int64_t Certificate::not_after() const {
    return x509_time_seconds(crt_.valid_to);
}

std::vector<std::string> Certificate::identities() const {
    std::vector<std::string> out;
    for (const mbedtls_x509_sequence* s = &crt_.subject_alt_names; s && s->buf.p; s = s->next) {
        int tag = s->buf.tag & MBEDTLS_ASN1_TAG_VALUE_MASK;
        if (tag == 6 || tag == 1) {  // uniformResourceIdentifier, rfc822Name
            out.emplace_back(reinterpret_cast<const char*>(s->buf.p), s->buf.len);
        }
    }
    return out;
}

Result<std::string> Certificate::oidc_issuer() const {
    if (const auto& v2 = fulcio_.get(FulcioOid::issuer)) return *v2;
    if (const auto& v1 = fulcio_.get(FulcioOid::issuer_v1)) return *v1;
    return fail("certificate has no OIDC issuer extension");
}

Status Certificate::check_code_signing() const {
    if (!(crt_.ext_types & MBEDTLS_X509_EXT_KEY_USAGE)) return fail("leaf has no KeyUsage");
    if (mbedtls_x509_crt_check_key_usage(&crt_, MBEDTLS_X509_KU_DIGITAL_SIGNATURE) != 0) {
        return fail("leaf KeyUsage lacks digitalSignature");
    }
    if (!(crt_.ext_types & MBEDTLS_X509_EXT_EXTENDED_KEY_USAGE)) {
        return fail("leaf has no ExtendedKeyUsage");
    }
    if (mbedtls_x509_crt_check_extended_key_usage(
            &crt_, MBEDTLS_OID_CODE_SIGNING, MBEDTLS_OID_SIZE(MBEDTLS_OID_CODE_SIGNING)) != 0) {
        return fail("leaf ExtendedKeyUsage lacks codeSigning");
    }
    return {};
}

namespace {

struct ChainTime {
    int64_t at;
    std::string problem;
};

// mbedTLS judges validity against the wall clock; drop those flags and judge at the verified time.
int check_time(void* ctx, mbedtls_x509_crt* crt, int depth, uint32_t* flags) {
    auto* c = static_cast<ChainTime*>(ctx);
    *flags &= ~static_cast<uint32_t>(MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE);
    int64_t from = x509_time_seconds(crt->valid_from);
    int64_t to = x509_time_seconds(crt->valid_to);
    if ((c->at < from || c->at > to) && c->problem.empty()) {
        c->problem = "certificate at depth " + std::to_string(depth) + " is not valid at " +
                     std::to_string(c->at) + " (valid " + std::to_string(from) + ".." +
                     std::to_string(to) + ")";
    }
    return 0;
}

struct CrtList {
    mbedtls_x509_crt crt;
    CrtList() { mbedtls_x509_crt_init(&crt); }
    ~CrtList() { mbedtls_x509_crt_free(&crt); }
};

}  // namespace

Status verify_chain_at(const Bytes& leaf_der, const CertificateAuthority& ca, int64_t t) {
    if (ca.chain.empty()) return fail("certificate authority has no certificates");
    CrtList chain, trust;
    int r = mbedtls_x509_crt_parse_der(&chain.crt, leaf_der.data(), leaf_der.size());
    if (r != 0) return fail("leaf does not parse: " + mbedtls_error_text(r));
    for (size_t i = 0; i + 1 < ca.chain.size(); ++i) {
        r = mbedtls_x509_crt_parse_der(&chain.crt, ca.chain[i].data(), ca.chain[i].size());
        if (r != 0) return fail("trusted intermediate does not parse: " + mbedtls_error_text(r));
    }
    const Bytes& root = ca.chain.back();
    r = mbedtls_x509_crt_parse_der(&trust.crt, root.data(), root.size());
    if (r != 0) return fail("trusted root certificate does not parse: " + mbedtls_error_text(r));
    ChainTime ct{t, {}};
    uint32_t flags = 0;
    r = mbedtls_x509_crt_verify_with_profile(&chain.crt, &trust.crt, nullptr,
                                             &mbedtls_x509_crt_profile_default, nullptr, &flags,
                                             check_time, &ct);
    if (r != 0 || flags != 0) {
        char info[512] = "";
        mbedtls_x509_crt_verify_info(info, sizeof info, "", flags);
        std::string why(info);
        while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
        for (char& ch : why) {
            if (ch == '\n') ch = ';';
        }
        return fail("does not chain to the trusted CA: " +
                    (why.empty() ? mbedtls_error_text(r) : why));
    }
    if (!ct.problem.empty()) return fail(ct.problem);
    return {};
}

namespace {

// Bounds-checked big-endian reader over TLS-encoded structures.
class Reader {
  public:
    Reader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
    bool take(size_t n, const uint8_t** out) {
        if (static_cast<size_t>(end_ - p_) < n) return false;
        *out = p_;
        p_ += n;
        return true;
    }
    bool uint(size_t bytes, uint64_t* out) {
        const uint8_t* b;
        if (!take(bytes, &b)) return false;
        *out = 0;
        for (size_t i = 0; i < bytes; ++i) *out = *out << 8 | b[i];
        return true;
    }
    bool done() const { return p_ == end_; }

  private:
    const uint8_t* p_;
    const uint8_t* end_;
};

void put_len(Bytes& out, size_t len) {
    if (len < 0x80) {
        out.push_back(static_cast<uint8_t>(len));
        return;
    }
    int n = 0;
    for (size_t t = len; t; t >>= 8) ++n;
    out.push_back(static_cast<uint8_t>(0x80 | n));
    for (int i = n - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
}

// The TBSCertificate with the SCT list extension removed: what the CT log signed (the
// pre-certificate's TBS, RFC 6962 section 3.2).
Result<Bytes> precert_tbs(const mbedtls_x509_buf& tbs) {
    unsigned char* p = tbs.p;
    const unsigned char* end = tbs.p + tbs.len;
    size_t len = 0;
    if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)) {
        return fail("TBSCertificate is not a SEQUENCE");
    }
    const unsigned char* body = p;
    const unsigned char* ext3 = nullptr;
    while (p < end) {
        const unsigned char* field = p;
        unsigned char tag = *p++;
        if (mbedtls_asn1_get_len(&p, end, &len) != 0) return fail("bad TBS field length");
        if (tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_ASN1_CONSTRUCTED | 3)) {
            ext3 = field;
            break;
        }
        p += len;
    }
    if (!ext3) return fail("certificate has no extensions");
    if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)) {
        return fail("bad extensions SEQUENCE");
    }
    const unsigned char* exts = p;
    const unsigned char* exts_end = p + len;
    if (exts_end != end) return fail("extensions are not last in TBSCertificate");
    Bytes kept;
    bool found = false;
    while (p < exts_end) {
        const unsigned char* ext_start = p;
        size_t elen = 0, olen = 0;
        if (mbedtls_asn1_get_tag(&p, exts_end, &elen,
                                 MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)) {
            return fail("bad extension");
        }
        unsigned char* q = p;
        if (mbedtls_asn1_get_tag(&q, p + elen, &olen, MBEDTLS_ASN1_OID)) {
            return fail("bad extension OID");
        }
        bool is_sct = oid_is(q, olen, kOidSctList);
        p += elen;
        if (is_sct) {
            found = true;
        } else {
            kept.insert(kept.end(), ext_start, static_cast<const unsigned char*>(p));
        }
    }
    if (!found) return fail("no SCT list extension");
    (void)exts;
    Bytes seq{0x30};
    put_len(seq, kept.size());
    seq.insert(seq.end(), kept.begin(), kept.end());
    Bytes a3{0xA3};
    put_len(a3, seq.size());
    a3.insert(a3.end(), seq.begin(), seq.end());
    size_t body_len = static_cast<size_t>(ext3 - body) + a3.size();
    Bytes out{0x30};
    put_len(out, body_len);
    out.insert(out.end(), body, ext3);
    out.insert(out.end(), a3.begin(), a3.end());
    return out;
}

}  // namespace

Status verify_embedded_scts(const Certificate& leaf, const Bytes& issuer_der,
                            const std::vector<LogKey>& ctlogs) {
    const Bytes& ext = leaf.sct_list();
    if (ext.empty()) return fail("leaf has no embedded SCT");
    // The extension value wraps the TLS-encoded list in one more OCTET STRING.
    auto* p = const_cast<unsigned char*>(ext.data());
    const unsigned char* end = p + ext.size();
    size_t olen = 0;
    if (mbedtls_asn1_get_tag(&p, end, &olen, MBEDTLS_ASN1_OCTET_STRING) != 0 || p + olen != end) {
        return fail("SCT extension is not an OCTET STRING");
    }
    Reader list(p, olen);
    uint64_t list_len = 0;
    const uint8_t* list_body = nullptr;
    if (!list.uint(2, &list_len) || !list.take(list_len, &list_body) || !list.done()) {
        return fail("SCT list length does not match its extension");
    }

    CrtList issuer;
    int r = mbedtls_x509_crt_parse_der(&issuer.crt, issuer_der.data(), issuer_der.size());
    if (r != 0) return fail("issuer certificate does not parse: " + mbedtls_error_text(r));
    uint8_t issuer_key_hash[32];
    mbedtls_sha256_ret(issuer.crt.pk_raw.p, issuer.crt.pk_raw.len, issuer_key_hash, 0);

    auto tbs = precert_tbs(leaf.crt().tbs);
    if (!tbs) return tbs.fail("cannot rebuild the pre-certificate");

    Reader scts(list_body, list_len);
    std::string last_problem = "no SCT from a trusted CT log";
    int seen = 0;
    while (!scts.done()) {
        uint64_t sct_len = 0;
        const uint8_t* sct = nullptr;
        if (!scts.uint(2, &sct_len) || !scts.take(sct_len, &sct)) return fail("truncated SCT list");
        if (++seen > 64) return fail("too many SCTs");
        Reader s(sct, sct_len);
        uint64_t version = 0, timestamp_ms = 0, ext_len = 0, hash_alg = 0, sig_alg = 0, sig_len = 0;
        const uint8_t *log_id, *ts_bytes, *sct_ext, *sig;
        if (!s.uint(1, &version)) return fail("truncated SCT");
        if (version != 0) continue;  // only v1 SCTs are defined
        if (!s.take(32, &log_id) || !s.take(8, &ts_bytes) || !s.uint(2, &ext_len) ||
            !s.take(ext_len, &sct_ext) || !s.uint(1, &hash_alg) || !s.uint(1, &sig_alg) ||
            !s.uint(2, &sig_len) || !s.take(sig_len, &sig) || !s.done()) {
            return fail("malformed SCT");
        }
        for (int i = 0; i < 8; ++i) timestamp_ms = timestamp_ms << 8 | ts_bytes[i];
        int64_t when = static_cast<int64_t>(timestamp_ms / 1000);
        const LogKey* log = nullptr;
        for (const LogKey& k : ctlogs) {
            if (k.log_id.size() == 32 && std::memcmp(k.log_id.data(), log_id, 32) == 0 &&
                k.valid_for.contains(when)) {
                log = &k;
                break;
            }
        }
        if (!log) {
            last_problem = "SCT log ID is not a trusted CT log valid at the SCT time";
            continue;
        }
        Bytes signed_data;
        signed_data.reserve(12 + 32 + 3 + tbs->size() + 2 + ext_len);
        signed_data.push_back(0);  // sct_version v1
        signed_data.push_back(0);  // signature_type certificate_timestamp
        signed_data.insert(signed_data.end(), ts_bytes, ts_bytes + 8);
        signed_data.push_back(0);  // entry_type precert_entry (1)
        signed_data.push_back(1);
        signed_data.insert(signed_data.end(), issuer_key_hash, issuer_key_hash + 32);
        if (tbs->size() >= (1u << 24)) return fail("pre-certificate too large");
        signed_data.push_back(static_cast<uint8_t>(tbs->size() >> 16));
        signed_data.push_back(static_cast<uint8_t>(tbs->size() >> 8));
        signed_data.push_back(static_cast<uint8_t>(tbs->size()));
        signed_data.insert(signed_data.end(), tbs->begin(), tbs->end());
        signed_data.push_back(static_cast<uint8_t>(ext_len >> 8));
        signed_data.push_back(static_cast<uint8_t>(ext_len));
        signed_data.insert(signed_data.end(), sct_ext, sct_ext + ext_len);
        auto key = PublicKey::from_spki(log->spki);
        if (!key) {
            last_problem = "CT log key: " + key.error().message();
            continue;
        }
        auto ok =
            key->verify_message(signed_data.data(), signed_data.size(), Bytes(sig, sig + sig_len));
        if (ok) return {};
        last_problem = "SCT signature from " + log->base_url + ": " + ok.error().message();
    }
    return fail(last_problem);
}

}  // namespace myr::verify
