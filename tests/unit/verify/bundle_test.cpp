#include "verify/bundle.hpp"

#include <doctest/doctest.h>

#include <string>

#include "verify/trusted_root.hpp"

using namespace myr::verify;

namespace {

std::string bundle_json(const std::string& media, const std::string& material,
                        const std::string& entry_extra = "", const std::string& content = "") {
    return R"({"mediaType":")" + media + R"(","verificationMaterial":{)" + material +
           R"(,"tlogEntries":[{"logId":{"keyId":"AQI="},)"
           R"("kindVersion":{"kind":"hashedrekord","version":"0.0.1"},)"
           R"("canonicalizedBody":"e30=")" +
           entry_extra + "}]}," +
           (content.empty() ? R"("messageSignature":{"messageDigest":{"algorithm":"SHA2_256",)"
                              R"("digest":"AAAA"},"signature":"AQID"})"
                            : content) +
           "}";
}

const std::string kCert = R"("certificate":{"rawBytes":"MAA="})";
const std::string kChain = R"("x509CertificateChain":{"certificates":[{"rawBytes":"MAA="},)"
                           R"({"rawBytes":"MAE="}]})";

}  // namespace

TEST_CASE("bundle: the four supported media types parse, anything else is refused") {
    CHECK(parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle+json;version=0.1", kChain))
              ->version == BundleVersion::v0_1);
    CHECK(parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle+json;version=0.2", kChain))
              ->version == BundleVersion::v0_2);
    CHECK(parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle+json;version=0.3", kCert))
              ->version == BundleVersion::v0_3);
    CHECK(parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle.v0.3+json", kCert))
              ->version == BundleVersion::v0_3);
    for (const char* mt : {"application/vnd.dev.sigstore.bundle+json;version=0.4",
                           "application/vnd.dev.sigstore.bundle.v0.4+json", "",
                           "application/vnd.dev.sigstore.bundle+json"}) {
        CAPTURE(mt);
        auto b = parse_bundle(bundle_json(mt, kCert));
        REQUIRE_FALSE(b.ok());
        CHECK(b.error().message().rfind("bundle: unsupported mediaType", 0) == 0);
    }
}

TEST_CASE("bundle: protobuf-JSON zero values are omitted and 64-bit integers are strings") {
    auto b = parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle.v0.3+json", kCert,
                                      R"(,"integratedTime":"1700000000",)"
                                      R"("inclusionProof":{"rootHash":"AAAA","treeSize":"3"})"));
    REQUIRE(b.ok());
    const TlogEntry& e = b->tlog_entries.at(0);
    CHECK(e.log_index == 0);
    CHECK(e.integrated_time == 1700000000);
    REQUIRE(e.inclusion_proof.has_value());
    CHECK(e.inclusion_proof->log_index == 0);
    CHECK(e.inclusion_proof->tree_size == 3);
    CHECK(e.inclusion_proof->hashes.empty());
    CHECK(b->certificates.size() == 1);
    CHECK(b->signature == Bytes{1, 2, 3});
}

TEST_CASE("bundle: v0.1/v0.2 keep the chain leaf first, v0.3 refuses a chain") {
    auto b =
        parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle+json;version=0.2", kChain));
    REQUIRE(b.ok());
    REQUIRE(b->certificates.size() == 2);
    CHECK(b->certificates[0] == Bytes{0x30, 0x00});
    CHECK_FALSE(
        parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle.v0.3+json", kChain)).ok());
    auto empty = parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle+json;version=0.2",
                                          R"("x509CertificateChain":{"certificates":[]})"));
    CHECK_FALSE(empty.ok());
}

TEST_CASE("bundle: DSSE envelopes and managed-key bundles parse; a bad envelope names its field") {
    const std::string v3 = "application/vnd.dev.sigstore.bundle.v0.3+json";
    auto dsse = parse_bundle(bundle_json(v3, kCert, "",
                                         R"("dsseEnvelope":{"payload":"e30=","payloadType":"t",)"
                                         R"("signatures":[{"sig":"AQID","keyid":""}]})"));
    REQUIRE(dsse.ok());
    CHECK(dsse->content == Content::dsse_envelope);
    CHECK(dsse->envelope.payload == Bytes{'{', '}'});
    CHECK(dsse->envelope.payload_type == "t");
    CHECK(dsse->envelope.signatures == std::vector<Bytes>{{1, 2, 3}});
    auto refused = [&](const std::string& envelope, const std::string& why) {
        auto b = parse_bundle(bundle_json(v3, kCert, "", R"("dsseEnvelope":)" + envelope));
        REQUIRE_FALSE(b.ok());
        CHECK_MESSAGE(b.error().message().find(why) != std::string::npos, b.error().message());
    };
    refused(R"({"payloadType":"t","signatures":[{"sig":"AQID"}]})",
            "dsseEnvelope.payload: missing");
    refused(R"({"payload":"e30=","signatures":[{"sig":"AQID"}]})", "payloadType: missing");
    refused(R"({"payload":"e30=","payloadType":"t"})", "signatures: missing or empty");
    refused(R"({"payload":"e30=","payloadType":"t","signatures":[1]})", "[0]: not an object");
    refused(R"({"payload":"e3@=","payloadType":"t","signatures":[{"sig":"AQID"}]})",
            "payload: invalid base64");
    std::string nine;
    for (int i = 0; i < 9; ++i) nine += std::string(i ? "," : "") + R"({"sig":"AQID"})";
    refused(R"({"payload":"e30=","payloadType":"t","signatures":[)" + nine + "]}",
            "more than the limit of 8");
    refused("[]", "dsseEnvelope: not an object");
    auto key = parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle.v0.3+json",
                                        R"("publicKey":{"hint":"x"})"));
    REQUIRE(key.ok());
    CHECK(key->material == Material::public_key);
    CHECK_FALSE(parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle.v0.3+json", kCert, "",
                                         R"("other":{})"))
                    .ok());
}

TEST_CASE("bundle: hostile values are refused naming the field") {
    auto neg = parse_bundle(
        bundle_json("application/vnd.dev.sigstore.bundle.v0.3+json", kCert, R"(,"logIndex":"-1")"));
    REQUIRE_FALSE(neg.ok());
    CHECK(neg.error().message() ==
          "bundle: verificationMaterial.tlogEntries[0].logIndex: negative value -1");
    std::string hashes;
    for (int i = 0; i < 65; ++i) hashes += std::string(i ? "," : "") + "\"AAAA\"";
    auto many = parse_bundle(
        bundle_json("application/vnd.dev.sigstore.bundle.v0.3+json", kCert,
                    R"(,"inclusionProof":{"rootHash":"AAAA","hashes":[)" + hashes + "]}"));
    REQUIRE_FALSE(many.ok());
    CHECK(many.error().message().find("more than the limit of 64") != std::string::npos);
    auto b64 = parse_bundle(bundle_json("application/vnd.dev.sigstore.bundle.v0.3+json",
                                        R"("certificate":{"rawBytes":"M@A="})"));
    REQUIRE_FALSE(b64.ok());
    CHECK(b64.error().message().find("certificate.rawBytes: invalid base64") != std::string::npos);
    CHECK_FALSE(parse_bundle(std::string(kMaxBundleBytes + 1, ' ')).ok());
}

TEST_CASE("trusted root: loads logs and CAs, keeps unusable keys, and closes validity intervals") {
    const std::string json =
        R"({"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1",
      "tlogs":[{"baseUrl":"https://rekor.test","logId":{"keyId":"AQI="},
                "publicKey":{"rawBytes":"AAAA","keyDetails":"PKIX_ED25519",
                             "validFor":{"start":"2021-01-12T11:53:27Z","end":"2023-07-12T15:56:36Z"}}}],
      "ctlogs":[{"baseUrl":"https://ct.test","logId":{"keyId":"AwQ="},
                 "publicKey":{"rawBytes":"AAAA"}}],
      "certificateAuthorities":[{"uri":"https://fulcio.test",
        "certChain":{"certificates":[{"rawBytes":"MAA="},{"rawBytes":"MAE="}]},
        "validFor":{"start":"2022-04-13T20:06:15Z"}}]})";
    auto r = parse_trusted_root(json);
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    REQUIRE(r->tlogs.size() == 1);
    CHECK(r->tlogs[0].key_details == "PKIX_ED25519");
    CHECK(r->tlogs[0].valid_for.contains(1689177396));
    CHECK_FALSE(r->tlogs[0].valid_for.contains(1689177397));
    CHECK_FALSE(r->ctlogs[0].valid_for.contains(1));  // no start: never valid
    REQUIRE(r->certificate_authorities.size() == 1);
    CHECK(r->certificate_authorities[0].chain.size() == 2);
    CHECK(r->certificate_authorities[0].valid_for.contains(4000000000));
    // The age `status` shows counts from the newest start: the CA's, not the older log key's.
    CHECK(newest_validity_start(*r) == 1649880375);  // 2022-04-13T20:06:15Z
    CHECK_FALSE(newest_validity_start(TrustedRoot{}));

    auto bad_media = parse_trusted_root(R"({"mediaType":"application/json"})");
    REQUIRE_FALSE(bad_media.ok());
    CHECK(bad_media.error().message().rfind("trusted root: unsupported mediaType", 0) == 0);
    auto bad_time = parse_trusted_root(
        R"({"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1",)"
        R"("tlogs":[{"logId":{"keyId":"AQI="},"publicKey":{"validFor":{"start":"yesterday"}}}]})");
    REQUIRE_FALSE(bad_time.ok());
    CHECK(bad_time.error().message().find("tlogs[0].publicKey.validFor.start") !=
          std::string::npos);
}
