// The bounded DER reader, the RFC 3161 parser and verifier, Ed25519, and the time policy on the
// upstream release bundle (a Rekor v1 entry and a timestamp), on public data from tests/data.
#include "verify/timestamp.hpp"

#include <doctest/doctest.h>
#include <sodium.h>

#include <algorithm>
#include <string>

#include "harness.hpp"
#include "verify/der.hpp"
#include "verify/ed25519.hpp"
#include "verify/sigstore.hpp"

using namespace myr::verify;

namespace {

std::string conformance(const std::string& name) {
    return myr::test::data_dir() + "/sigstore-conformance/bundle-verify/" + name;
}

// The first timestamp and the signature of a case's bundle, and its trusted root.
struct Stamped {
    Bytes token;
    Bytes signature;
    TrustedRoot root;
};

Stamped stamped(const std::string& dir, const std::string& bundle_file, const std::string& root) {
    auto b = parse_bundle(myr::test::read_file(dir + "/" + bundle_file));
    REQUIRE_MESSAGE(b.ok(), b.error().message());
    REQUIRE_FALSE(b->rfc3161_timestamps.empty());
    auto r = load_trusted_root(root);
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    return {b->rfc3161_timestamps.front(), b->signature, std::move(*r)};
}

Stamped happy() {
    std::string dir = conformance("rekor2-happy-path");
    return stamped(dir, "bundle.sigstore.json", dir + "/trusted_root.json");
}

std::string error_of(const myr::Result<VerifiedTimestamp>& r) {
    return r.ok() ? "" : r.error().message();
}

}  // namespace

TEST_CASE("der: lengths must be definite, minimal and within the container") {
    const uint8_t ok[] = {0x30, 0x03, 0x02, 0x01, 0x05};
    DerReader r(ok, sizeof ok);
    auto seq = r.expect(der::kSequence, "seq");
    REQUIRE(seq.ok());
    CHECK(seq->length == 3);
    CHECK(r.done());
    auto bad = [](std::initializer_list<uint8_t> bytes) {
        Bytes b(bytes);
        DerReader d(b.data(), b.size());
        auto e = d.next("x");
        return e.ok() ? std::string() : e.error().message();
    };
    CHECK(bad({0x30, 0x05, 0x02, 0x01}).find("runs past its container") != std::string::npos);
    CHECK(bad({0x30, 0x80, 0x00, 0x00}).find("unsupported length form") != std::string::npos);
    CHECK(bad({0x30, 0x81, 0x05, 0, 0, 0, 0, 0}).find("not minimally encoded") !=
          std::string::npos);
    CHECK(bad({0x30, 0x82, 0x00, 0x90}).find("not minimally encoded") != std::string::npos);
    CHECK(bad({0x30, 0x85, 1, 0, 0, 0, 0}).find("unsupported length form") != std::string::npos);
    CHECK(bad({0x1F, 0x01, 0x00}).find("multi-byte tag") != std::string::npos);
    CHECK(bad({0x30}).find("truncated length") != std::string::npos);
    CHECK(bad({}).find("missing") != std::string::npos);
}

TEST_CASE("der: nesting is bounded") {
    // 40 nested SEQUENCEs: entering more than kMaxDerDepth levels is refused, not recursed into.
    Bytes b;
    for (int i = 0; i < 40; ++i) {
        b.insert(b.begin(), {0x30, static_cast<uint8_t>(b.size())});
    }
    DerReader r(b.data(), b.size());
    std::string problem;
    for (int depth = 0; depth < 40; ++depth) {
        auto e = r.expect(der::kSequence, "seq");
        REQUIRE(e.ok());
        auto inner = r.enter(*e, "seq");
        if (!inner) {
            problem = inner.error().message();
            break;
        }
        r = *inner;
    }
    CHECK(problem.find("nested deeper than 16") != std::string::npos);
}

TEST_CASE("der: GeneralizedTime in UTC, with or without a fraction") {
    auto when = [](const std::string& s) {
        Bytes b{der::kGeneralizedTime, static_cast<uint8_t>(s.size())};
        b.insert(b.end(), s.begin(), s.end());
        DerReader r(b.data(), b.size());
        auto e = r.next("t");
        REQUIRE(e.ok());
        return parse_generalized_time(*e);
    };
    CHECK(*when("20250612120220Z") == 1749729740);
    CHECK(*when("20250612120220.123Z") == 1749729740);
    CHECK_FALSE(when("20250612120220").ok());
    CHECK_FALSE(when("20251312120220Z").ok());
    CHECK_FALSE(when("2025061212022Z").ok());
    CHECK_FALSE(when("20250612120220.Z").ok());
}

TEST_CASE("timestamp: the conformance token parses and verifies against the staging TSA") {
    Stamped s = happy();
    auto t = parse_rfc3161(s.token);
    REQUIRE_MESSAGE(t.ok(), t.error().message());
    CHECK(t->gen_time == 1749729740);
    CHECK(t->imprint_md == MBEDTLS_MD_SHA256);
    CHECK(t->certificates.size() == 1);
    auto v = verify_rfc3161(s.token, s.signature, s.root.timestamp_authorities);
    REQUIRE_MESSAGE(v.ok(), v.error().message());
    CHECK(v->time == 1749729740);
    CHECK(v->authority == "https://timestamp.sigstage.dev/api/v1/timestamp");
}

TEST_CASE("timestamp: every truncation of a good token is refused, never read past") {
    Stamped s = happy();
    for (size_t n = 0; n < s.token.size(); ++n) {
        Bytes cut(s.token.begin(), s.token.begin() + static_cast<long>(n));
        CAPTURE(n);
        CHECK_FALSE(parse_rfc3161(cut).ok());
    }
}

TEST_CASE("timestamp: a flipped byte in what the TSA signed is refused") {
    // The TSTInfo (covered by messageDigest), the signed attributes and the signature: every byte
    // of them matters. (Bytes outside, such as the embedded certificate, may be unused: the root's
    // own copy of the TSA certificate is used when the embedded one does not match.)
    Stamped s = happy();
    auto t = parse_rfc3161(s.token);
    REQUIRE(t.ok());
    Bytes attrs = t->signed_attributes;
    attrs[0] = der::kContext0;  // as it appears in the token
    int flipped = 0, refused = 0;
    for (const Bytes* part : {&t->tst_info, &attrs, &t->signature}) {
        auto at = std::search(s.token.begin(), s.token.end(), part->begin(), part->end());
        REQUIRE(at != s.token.end());
        size_t from = static_cast<size_t>(at - s.token.begin());
        for (size_t i = from; i < from + part->size(); ++i) {
            Bytes bad = s.token;
            bad[i] ^= 0x01;
            ++flipped;
            if (!verify_rfc3161(bad, s.signature, s.root.timestamp_authorities).ok()) ++refused;
        }
    }
    CHECK(flipped > 300);
    CHECK(refused == flipped);
    Bytes other = s.signature;
    other[0] ^= 0x01;
    CHECK(error_of(verify_rfc3161(s.token, other, s.root.timestamp_authorities)) ==
          "message imprint != hash of the bundle signature");
}

TEST_CASE("timestamp: oversized tokens, wrong content types and wrong authorities are named") {
    Stamped s = happy();
    Bytes big(kMaxTimestampBytes + 1, 0x30);
    CHECK(error_of(verify_rfc3161(big, s.signature, s.root.timestamp_authorities))
              .find("larger than the limit of 65536 bytes") != std::string::npos);
    // The signedData OID (1.2.840.113549.1.7.2) turned into data (…7.1).
    Bytes wrong_type = s.token;
    const uint8_t signed_data[] = {0x06, 0x09, 0x2A, 0x86, 0x48, 0x86,
                                   0xF7, 0x0D, 0x01, 0x07, 0x02};
    auto at = std::search(wrong_type.begin(), wrong_type.end(), std::begin(signed_data),
                          std::end(signed_data));
    REQUIRE(at != wrong_type.end());
    at[10] = 0x01;
    CHECK(error_of(verify_rfc3161(wrong_type, s.signature, s.root.timestamp_authorities)) ==
          "ContentInfo: not a CMS SignedData");
    // The TSTInfo content type (…9.16.1.4) turned into another (…9.16.1.5).
    Bytes wrong_content = s.token;
    const uint8_t tst[] = {0x06, 0x0B, 0x2A, 0x86, 0x48, 0x86, 0xF7,
                           0x0D, 0x01, 0x09, 0x10, 0x01, 0x04};
    auto tat =
        std::search(wrong_content.begin(), wrong_content.end(), std::begin(tst), std::end(tst));
    REQUIRE(tat != wrong_content.end());
    tat[12] = 0x05;
    CHECK(error_of(verify_rfc3161(wrong_content, s.signature, s.root.timestamp_authorities)) ==
          "encapContentInfo: content is not a TSTInfo");
    CHECK(error_of(verify_rfc3161(s.token, s.signature, {})) ==
          "no timestamp authority in the trusted root is valid at genTime 1749729740");
    // An authority whose validFor ends before genTime does not count.
    auto expired = s.root.timestamp_authorities;
    expired.front().valid_for.end = 1749729739;
    CHECK(error_of(verify_rfc3161(s.token, s.signature, expired)).find("no timestamp authority") ==
          0);
}

TEST_CASE("ed25519: keys are RFC 8410 SubjectPublicKeyInfo; signatures verify or are named") {
    // The Rekor v2 checkpoint of the conformance happy path, signed by the staging log's key.
    std::string dir = conformance("rekor2-happy-path");
    auto root = load_trusted_root(dir + "/trusted_root.json");
    REQUIRE(root.ok());
    const LogKey* log = nullptr;
    for (const LogKey& k : root->tlogs) {
        if (k.key_details == "PKIX_ED25519" && k.base_url.find("alpha1") != std::string::npos) {
            log = &k;
        }
    }
    REQUIRE(log != nullptr);
    CHECK(is_ed25519_spki(log->spki));
    const std::string note =
        "log2025-alpha1.rekor.sigstage.dev\n736\nrs1YPY0ydAV0lxgfrq5pE4oRpUJwo3syeps5+eGUTDI=\n";
    auto blob = base64_decode(
        "8w1amdbj1mjNN674dHAkD92+QZoEgBC7o0mXYSTRluDjQrOPjrps3zQB9ut+"
        "ShLepyZPsWBDi5IB3yXyjgjQT6OG9A8=");
    REQUIRE(blob.ok());
    Bytes sig(blob->begin() + 4, blob->end());
    auto data = reinterpret_cast<const uint8_t*>(note.data());
    CHECK(ed25519_verify(log->spki, data, note.size(), sig).ok());
    CHECK(verify_with_spki(log->spki, data, note.size(), sig).ok());
    Bytes forged = sig;
    forged[5] ^= 0x01;
    auto f = ed25519_verify(log->spki, data, note.size(), forged);
    REQUIRE_FALSE(f.ok());
    CHECK(f.error().message() == "Ed25519 signature does not verify");
    Bytes shorter(sig.begin(), sig.end() - 1);
    CHECK(ed25519_verify(log->spki, data, note.size(), shorter).error().message() ==
          "Ed25519 signature is 63 bytes, not 64");
    Bytes not_ed = log->spki;
    not_ed[8] ^= 0x01;  // the algorithm OID
    CHECK_FALSE(is_ed25519_spki(not_ed));
    CHECK(ed25519_verify(not_ed, data, note.size(), sig).error().message() ==
          "not an Ed25519 public key");
}

// verify/ed25519.cpp defines the three helpers of libsodium's utils.o its verifier calls (so the
// static link leaves utils.o and the primitives it drags in out); they keep libsodium's results.
TEST_CASE("ed25519: the libsodium helpers defined here keep libsodium's contracts") {
    const unsigned char a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 5}, zero[3] = {0, 0, 0};
    CHECK(sodium_memcmp(a, a, sizeof a) == 0);
    CHECK(sodium_memcmp(a, b, sizeof a) == -1);
    CHECK(sodium_memcmp(a, b, 3) == 0);
    CHECK(sodium_memcmp(a, b, 0) == 0);
    CHECK(sodium_is_zero(zero, sizeof zero) == 1);
    CHECK(sodium_is_zero(a, sizeof a) == 0);
    CHECK(sodium_is_zero(a, 0) == 1);
    unsigned char buf[5] = {9, 9, 9, 9, 9};
    sodium_memzero(buf + 1, 3);
    CHECK((buf[0] == 9 && buf[1] == 0 && buf[2] == 0 && buf[3] == 0 && buf[4] == 9));
}

TEST_CASE("minTimestamps: the upstream release bundle has two time sources, a SET and a TSA") {
    std::string dir = myr::test::data_dir() + "/upstream-release";
    const std::string name = "otelcol-contrib_0.158.0_linux_amd64.tar.gz";
    auto root = load_trusted_root(dir + "/trusted_root.json");
    REQUIRE(root.ok());
    std::string sum = myr::test::read_file(dir + "/" + name + ".sha256");
    auto digest = myr::hash::digest_from_hex(sum.substr(0, 64));
    REQUIRE(digest.ok());
    std::string bundle = myr::test::read_file(dir + "/" + name + ".sigstore.json");
    Identity id;
    id.subject =
        "https://github.com/open-telemetry/opentelemetry-collector-releases/.github/workflows/"
        "base-release.yaml@refs/tags/v0.158.0";
    id.issuer = "https://token.actions.githubusercontent.com";
    auto two = verify_bundle(*root, bundle, *digest, id, Options{2});
    REQUIRE_MESSAGE(two.ok(), two.error().message());
    REQUIRE(two->time_sources.size() == 2);
    CHECK(two->time_sources[0].kind == TimeSource::Kind::rfc3161);
    CHECK(two->time_sources[0].authority == "https://timestamp.sigstore.dev/api/v1/timestamp");
    CHECK(two->time_sources[1].kind == TimeSource::Kind::set);
    CHECK(two->integrated_time == two->time_sources[1].time);
    auto three = verify_bundle(*root, bundle, *digest, id, Options{3});
    REQUIRE_FALSE(three.ok());
    CHECK(three.error().message() ==
          "timestamps: 2 verified time source(s) (RFC 3161, SET) where minTimestamps requires 3");
    // Without the TSA in the root the bundle's timestamp is refused, not skipped.
    TrustedRoot no_tsa = *root;
    no_tsa.timestamp_authorities.clear();
    auto refused = verify_bundle(no_tsa, bundle, *digest, id);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message().rfind("timestamp: rfc3161Timestamps[0]: no timestamp "
                                          "authority",
                                          0) == 0);
}
