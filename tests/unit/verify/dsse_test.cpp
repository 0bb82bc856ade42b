// DSSE envelopes and in-toto statements: PAE, the statement parser on hostile shapes, the Rekor
// body checks (dsse 0.0.1, intoto 0.0.2) and verify_bundle() on the public conformance material,
// each tampering refused at the step it names.
#include "verify/dsse.hpp"

#include <doctest/doctest.h>

#include <string>

#include "conformance_identity.hpp"
#include "harness.hpp"
#include "verify/intoto.hpp"
#include "verify/sigstore.hpp"

using namespace myr::verify;
using namespace myr::hash;

namespace {

using myr::test::kActions;

std::string conformance() {
    return myr::test::data_dir() + "/sigstore-conformance";
}

struct Case {
    TrustedRoot root;
    Bundle bundle;
    Digest artifact{};
};

Case load(const std::string& name) {
    const std::string dir = conformance() + "/bundle-verify/" + name;
    Case c;
    const std::string root_file = myr::test::exists(dir + "/trusted_root.json")
                                      ? dir + "/trusted_root.json"
                                      : conformance() + "/public-good-trusted-root.json";
    auto root = load_trusted_root(root_file);
    REQUIRE_MESSAGE(root.ok(), root.error().message());
    c.root = std::move(*root);
    auto b = parse_bundle(myr::test::read_file(dir + "/bundle.sigstore.json"));
    REQUIRE_MESSAGE(b.ok(), b.error().message());
    c.bundle = std::move(*b);
    const std::string artifact =
        myr::test::exists(dir + "/artifact") ? dir + "/artifact" : conformance() + "/a.txt";
    auto d = sha256_file(artifact);
    REQUIRE(d.ok());
    c.artifact = *d;
    return c;
}

Identity beacon() {
    return myr::test::conformance_identity();
}

std::string refusal(const Case& c, const Identity& id = beacon()) {
    auto v = verify_bundle(c.root, c.bundle, c.artifact, id);
    return v ? "verified" : v.error().message();
}

bool starts_with(const std::string& s, const std::string& prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

TEST_CASE("dsse: PAE is the DSSEv1 encoding with decimal lengths") {
    // The example of the DSSE protocol document.
    const std::string payload = "hello world";
    Bytes out = pae("http://example.com/HelloWorld", Bytes(payload.begin(), payload.end()));
    CHECK(std::string(out.begin(), out.end()) ==
          "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
    Bytes empty = pae("", {});
    CHECK(std::string(empty.begin(), empty.end()) == "DSSEv1 0  0 ");
    // Bytes that are not text pass through unchanged.
    Bytes bin = pae("t", Bytes{0, 0xff, ' '});
    CHECK(bin ==
          Bytes{'D', 'S', 'S', 'E', 'v', '1', ' ', '1', ' ', 't', ' ', '3', ' ', 0, 0xff, ' '});
}

TEST_CASE("intoto: statements v0.1 and v1 parse; subjects are matched by algorithm and hex") {
    auto v1 = parse_statement(
        R"({"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"a",)"
        R"("digest":{"sha256":"ab01","sha512":"cd"}},{"digest":{"sha256":"ef"}}],)"
        R"("predicateType":"https://slsa.dev/provenance/v1","predicate":{"x":[[[1]]]}})");
    REQUIRE_MESSAGE(v1.ok(), v1.error().message());
    CHECK(v1->subjects.size() == 2);
    CHECK(v1->predicate_type == "https://slsa.dev/provenance/v1");
    CHECK(statement_names_digest(*v1, "sha256", "ab01"));
    CHECK(statement_names_digest(*v1, "sha256", "ef"));
    CHECK(statement_names_digest(*v1, "sha512", "cd"));
    CHECK_FALSE(statement_names_digest(*v1, "sha512", "ab01"));
    CHECK_FALSE(statement_names_digest(*v1, "sha256", "AB01"));
    auto v01 = parse_statement(
        R"({"_type":"https://in-toto.io/Statement/v0.1","subject":[{"digest":{"sha256":"00"}}]})");
    CHECK(v01.ok());
}

TEST_CASE("intoto: hostile statements are refused naming the field") {
    auto refused = [](const std::string& text, const std::string& why) {
        auto st = parse_statement(text);
        REQUIRE_FALSE(st.ok());
        CHECK_MESSAGE(st.error().message().find(why) != std::string::npos, st.error().message());
        CHECK(starts_with(st.error().message(), "in-toto statement: "));
    };
    const std::string v1 = R"("_type":"https://in-toto.io/Statement/v1")";
    refused("", "malformed JSON");
    refused("[]", "malformed JSON");
    refused(R"({"subject":[{"digest":{"sha256":"00"}}]})", "_type: missing");
    refused(R"({"_type":"https://in-toto.io/Statement/v2","subject":[]})", "is not an in-toto");
    refused(R"({"_type":7})", "_type: not a string");
    refused("{" + v1 + "}", "subject: missing or empty");
    refused("{" + v1 + R"(,"subject":[]})", "subject: missing or empty");
    refused("{" + v1 + R"(,"subject":{}})", "subject: not an array");
    refused("{" + v1 + R"(,"subject":["x"]})", "subject[0]: not an object");
    refused("{" + v1 + R"(,"subject":[{"name":"x"}]})", "subject[0].digest: missing");
    refused("{" + v1 + R"(,"subject":[{"digest":{}}]})", "subject[0].digest: empty");
    refused("{" + v1 + R"(,"subject":[{"digest":{"sha256":1}}]})", "digest.sha256: not a string");
    refused("{" + v1 + R"(,"subject":[{"digest":{"sha256":"AB"}}]})", "not lower-case hex");
    refused("{" + v1 + R"(,"subject":[{"digest":{"sha256":""}}]})", "not lower-case hex");
    refused("{" + v1 + R"(,"subject":[{"name":5,"digest":{"sha256":"00"}}]})",
            "name: not a string");
    std::string many;
    for (size_t i = 0; i <= kMaxStatementSubjects; ++i) {
        many += std::string(i ? "," : "") + R"({"digest":{"sha256":"00"}})";
    }
    refused("{" + v1 + R"(,"subject":[)" + many + "]}", "more than the limit of 256");
    std::string algs;
    for (size_t i = 0; i <= kMaxSubjectDigests; ++i) {
        algs += std::string(i ? "," : "") + "\"a" + std::to_string(i) + "\":\"00\"";
    }
    refused("{" + v1 + R"(,"subject":[{"digest":{)" + algs + "}}]}", "more than 16 algorithms");
    std::string deep = "{" + v1 + R"(,"subject":[{"digest":{"sha256":"00"}}],"predicate":)" +
                       std::string(40, '[') + std::string(40, ']') + "}";
    refused(deep, "malformed JSON");
    refused("{" + v1 + R"(,"subject":[{"digest":{"sha256":"00"}}]} x)", "malformed JSON");
    refused(std::string(kMaxStatementBytes + 1, ' '), "more than the limit");
}

TEST_CASE("dsse: the conformance DSSE bundles verify through the library") {
    for (const char* name : {"happy-path-intoto-in-dsse-v3", "intoto-with-custom-trust-root"}) {
        CAPTURE(name);
        Case c = load(name);
        CHECK(refusal(c) == "verified");
    }
}

TEST_CASE("dsse: each tampering of an envelope is refused at the step it names") {
    Case good = load("happy-path-intoto-in-dsse-v3");
    SUBCASE("another artifact: no subject names it") {
        Case c = good;
        c.artifact[0] ^= 1;
        CHECK(starts_with(refusal(c), "artifact: no subject of the in-toto statement has sha256"));
    }
    SUBCASE("another payload type") {
        Case c = good;
        c.bundle.envelope.payload_type = "application/json";
        CHECK(starts_with(refusal(c), "artifact: DSSE payloadType \"application/json\""));
    }
    SUBCASE("a payload that is not a statement") {
        Case c = good;
        c.bundle.envelope.payload = Bytes{'{', '}'};
        CHECK(starts_with(refusal(c), "artifact: in-toto statement: _type: missing"));
    }
    SUBCASE("a payload changed after logging: the body's payloadHash catches it") {
        Case c = good;
        c.bundle.envelope.payload.push_back(' ');
        CHECK(starts_with(refusal(c), "tlog body: spec.payloadHash != the SHA-256"));
    }
    SUBCASE("another signature than the logged one") {
        Case c = good;
        c.bundle.envelope.signatures.front().back() ^= 1;
        CHECK(starts_with(refusal(c), "tlog body: body signature != envelope signature"));
    }
    SUBCASE("two signatures") {
        Case c = good;
        c.bundle.envelope.signatures.push_back(c.bundle.envelope.signatures.front());
        CHECK(starts_with(refusal(c), "bundle: a DSSE envelope must carry exactly one signature"));
    }
    SUBCASE("the entry kind must be one that logs DSSE") {
        Case c = good;
        c.bundle.tlog_entries.front().kind = "hashedrekord";
        CHECK(starts_with(refusal(c), "tlog entry: entry kind hashedrekord/0.0.1 cannot log a"));
    }
    SUBCASE("another identity") {
        Identity id = beacon();
        id.subject += "x";
        CHECK(starts_with(refusal(good, id), "identity: "));
    }
}

TEST_CASE("dsse: a signature over the payload instead of its PAE does not verify") {
    // The logged body and the envelope agree, so only the signature step can tell: rebuild the
    // check the way a verifier that skipped PAE would, and see it fail.
    Case c = load("happy-path-intoto-in-dsse-v3");
    Signer signer{Signer::Kind::certificate, c.bundle.certificates.front()};
    auto key = signer_key(signer);
    REQUIRE(key.ok());
    const Envelope& env = c.bundle.envelope;
    CHECK_FALSE(key->verify_message(env.payload.data(), env.payload.size(), env.signatures[0]));
    Bytes m = pae(env.payload_type, env.payload);
    CHECK(key->verify_message(m.data(), m.size(), env.signatures[0]));
}

TEST_CASE("dsse: body checks of both kinds refuse a body that disagrees") {
    Case dsse = load("happy-path-intoto-in-dsse-v3");
    Signer signer{Signer::Kind::certificate, dsse.bundle.certificates.front()};
    CHECK(check_dsse_body(dsse.bundle.tlog_entries.front(), dsse.bundle.envelope, signer));
    Signer other = signer;
    other.der.back() ^= 1;
    auto wrong = check_dsse_body(dsse.bundle.tlog_entries.front(), dsse.bundle.envelope, other);
    REQUIRE_FALSE(wrong.ok());
    CHECK(wrong.error().message() == "body certificate != bundle leaf certificate");

    Case intoto = load("intoto-with-custom-trust-root");
    Signer isigner{Signer::Kind::certificate, intoto.bundle.certificates.front()};
    const TlogEntry& entry = intoto.bundle.tlog_entries.front();
    CHECK(check_dsse_body(entry, intoto.bundle.envelope, isigner));
    Envelope env = intoto.bundle.envelope;
    env.payload_type = "x";
    CHECK(check_dsse_body(entry, env, isigner).error().message() ==
          "body payloadType != envelope payloadType");
    TlogEntry v = entry;
    v.version = "0.0.3";
    CHECK(check_dsse_body(v, intoto.bundle.envelope, isigner).error().message() ==
          "body is intoto/0.0.2 but the entry says intoto/0.0.3");
}

TEST_CASE("managed key: the given key verifies; no key, another key or a certificate refuse") {
    const std::string dir = conformance() + "/bundle-verify/managed-key-happy-path";
    Case c = load("managed-key-happy-path");
    auto der = public_key_der_from_pem(myr::test::read_file(dir + "/key.pub"));
    REQUIRE_MESSAGE(der.ok(), der.error().message());
    Identity key;
    key.public_key = *der;
    auto v = verify_bundle(c.root, c.bundle, c.artifact, key);
    REQUIRE_MESSAGE(v.ok(), v.error().message());
    // The key's hash is the bundle's publicKey hint (TLMsSD… in base64).
    CHECK(v->subject ==
          "key sha256:4cb32c4837c6dda8cfb1681efb3fef5f94ffce5b979e6bdb9139302c857af139");
    CHECK(v->issuer.empty());
    CHECK(v->integrated_time > 0);

    CHECK(starts_with(refusal(c), "bundle: signed with a managed key"));
    Identity both = key;
    both.issuer = kActions;
    CHECK(starts_with(refusal(c, both), "identity policy: give either a managed key"));
    Identity garbage;
    garbage.public_key = {1, 2, 3};
    CHECK(starts_with(refusal(c, garbage), "identity policy: key: unusable public key"));

    // Another valid P-256 key (the log's own): the body names the real one.
    Identity other;
    other.public_key = c.root.tlogs.front().spki;
    CHECK(starts_with(refusal(c, other), "tlog body: body public key != the given key"));
    Case cert = load("happy-path-intoto-in-dsse-v3");
    CHECK(starts_with(refusal(cert, key), "bundle: carries a certificate, but a managed key"));
    c.artifact[0] ^= 1;
    CHECK(starts_with(refusal(c, key), "artifact: sha256 "));
}
