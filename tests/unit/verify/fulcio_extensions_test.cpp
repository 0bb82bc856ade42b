// Fulcio's certificate extensions and the identity fields checked against them: the real leaf of
// the upstream collector release (tests/data/upstream-release), byte flips of it, and each
// encoding rule on hand-made values.
#include "verify/fulcio_extensions.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "harness.hpp"
#include "verify/bundle.hpp"
#include "verify/certificate.hpp"
#include "verify/identity_policy.hpp"

using namespace myr::verify;

namespace {

constexpr uint8_t kArcPrefix[] = {0x2B, 0x06, 0x01, 0x04, 0x01, 0x83, 0xBF, 0x30, 0x01};

Bytes oid(uint8_t arc) {
    Bytes o(std::begin(kArcPrefix), std::end(kArcPrefix));
    o.push_back(arc);
    return o;
}

// A short DER UTF8String (tag 0x0C, one length byte).
Bytes utf8(const std::string& s) {
    std::string der = std::string(1, '\x0C') + static_cast<char>(s.size()) + s;
    return Bytes(der.begin(), der.end());
}

Bytes raw(const std::string& s) {
    return Bytes(s.begin(), s.end());
}

Bytes upstream_leaf() {
    std::string text =
        myr::test::read_file(myr::test::data_dir() +
                             "/upstream-release/"
                             "otelcol-contrib_0.158.0_linux_amd64.tar.gz.sigstore.json");
    auto b = parse_bundle(text);
    REQUIRE_MESSAGE(b.ok(), b.error().message());
    REQUIRE_FALSE(b->certificates.empty());
    return b->certificates.front();
}

// The offset of the extension OID 1.3.6.1.4.1.57264.1.<arc> (as a DER OID TLV) in `der`.
size_t oid_offset(const Bytes& der, uint8_t arc) {
    Bytes tlv{0x06, static_cast<uint8_t>(sizeof kArcPrefix + 1)};
    Bytes o = oid(arc);
    tlv.insert(tlv.end(), o.begin(), o.end());
    auto it = std::search(der.begin(), der.end(), tlv.begin(), tlv.end());
    REQUIRE(it != der.end());
    return static_cast<size_t>(it - der.begin());
}

}  // namespace

TEST_CASE("fulcio extensions: the upstream release leaf yields every GitHub and CI fact") {
    auto cert = Certificate::parse(upstream_leaf());
    REQUIRE_MESSAGE(cert.ok(), cert.error().message());
    const FulcioExtensions& e = (*cert)->fulcio();
    const std::string repo = "https://github.com/open-telemetry/opentelemetry-collector-releases";
    CHECK(e.get(FulcioOid::issuer_v1) == "https://token.actions.githubusercontent.com");
    CHECK(e.get(FulcioOid::github_workflow_trigger) == "push");
    CHECK(e.get(FulcioOid::github_workflow_sha) == "1400269f8ace841f8d0492f4f9c6c7f305f95268");
    CHECK(e.get(FulcioOid::github_workflow_name) == "Release Contrib");
    CHECK(e.get(FulcioOid::github_workflow_repository) ==
          "open-telemetry/opentelemetry-collector-releases");
    CHECK(e.get(FulcioOid::github_workflow_ref) == "refs/tags/v0.158.0");
    CHECK(e.get(FulcioOid::issuer) == "https://token.actions.githubusercontent.com");
    CHECK(e.get(FulcioOid::build_signer_uri) ==
          repo + "/.github/workflows/base-release.yaml@refs/tags/v0.158.0");
    CHECK(e.get(FulcioOid::build_signer_digest) == "1400269f8ace841f8d0492f4f9c6c7f305f95268");
    CHECK(e.get(FulcioOid::runner_environment) == "github-hosted");
    CHECK(e.get(FulcioOid::source_repository_uri) == repo);
    CHECK(e.get(FulcioOid::source_repository_digest) == "1400269f8ace841f8d0492f4f9c6c7f305f95268");
    CHECK(e.get(FulcioOid::source_repository_ref) == "refs/tags/v0.158.0");
    CHECK(e.get(FulcioOid::source_repository_identifier) == "400253676");
    CHECK(e.get(FulcioOid::source_repository_owner_uri) == "https://github.com/open-telemetry");
    CHECK(e.get(FulcioOid::source_repository_owner_identifier) == "49998002");
    CHECK(e.get(FulcioOid::build_config_uri) ==
          repo + "/.github/workflows/release-contrib.yaml@refs/tags/v0.158.0");
    CHECK(e.get(FulcioOid::build_config_digest) == "1400269f8ace841f8d0492f4f9c6c7f305f95268");
    CHECK(e.get(FulcioOid::build_trigger) == "push");
    CHECK(e.get(FulcioOid::run_invocation_uri) == repo + "/actions/runs/30940015151/attempts/2");
    CHECK(e.get(FulcioOid::source_repository_visibility) == "public");
}

TEST_CASE("fulcio extensions: a repeated or mis-encoded extension refuses the certificate") {
    const Bytes good = upstream_leaf();
    SUBCASE("the legacy trigger (.2) renamed to the legacy sha (.3): a duplicate") {
        Bytes der = good;
        der[oid_offset(der, 2) + 2 + sizeof kArcPrefix] = 3;
        auto cert = Certificate::parse(der);
        REQUIRE_FALSE(cert.ok());
        CHECK(cert.error().message() ==
              "certificate does not parse: extension 1.3.6.1.4.1.57264.1.3 (GitHub Workflow SHA) "
              "appears more than once");
    }
    SUBCASE("Source Repository Ref (.14) as a PrintableString instead of a UTF8String") {
        Bytes der = good;
        size_t at = oid_offset(der, 14) + 2 + sizeof kArcPrefix + 1;
        REQUIRE(der[at] == 0x04);  // the extnValue OCTET STRING, then the UTF8String tag
        REQUIRE(der[at + 2] == 0x0C);
        der[at + 2] = 0x13;
        auto cert = Certificate::parse(der);
        REQUIRE_FALSE(cert.ok());
        CHECK(cert.error().message() ==
              "certificate does not parse: extension 1.3.6.1.4.1.57264.1.14 (Source Repository "
              "Ref) is not one DER UTF8String");
    }
}

TEST_CASE("fulcio extensions: OIDs read are arcs 1-6 and 8-22 of 1.3.6.1.4.1.57264.1") {
    for (int arc = 0; arc <= 30; ++arc) {
        CAPTURE(arc);
        Bytes o = oid(static_cast<uint8_t>(arc));
        auto got = FulcioExtensions::recognise(o.data(), o.size());
        bool expected = arc >= 1 && arc <= 22 && arc != 7;
        CHECK(got.has_value() == expected);
        if (expected) CHECK(static_cast<int>(*got) == arc);
    }
    Bytes two_byte_arc = oid(0x81);
    two_byte_arc.push_back(0x00);  // arc 128
    CHECK_FALSE(FulcioExtensions::recognise(two_byte_arc.data(), two_byte_arc.size()));
    Bytes other = oid(14);
    other[7] = 0x31;  // 57265
    CHECK_FALSE(FulcioExtensions::recognise(other.data(), other.size()));
}

TEST_CASE("fulcio extensions: encodings, repeats and bounds of single values") {
    FulcioExtensions e;
    Bytes v = raw("Release Contrib");
    CHECK(e.add(FulcioOid::github_workflow_name, v.data(), v.size()).ok());
    CHECK(e.get(FulcioOid::github_workflow_name) == "Release Contrib");
    auto again = e.add(FulcioOid::github_workflow_name, v.data(), v.size());
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().message().find("appears more than once") != std::string::npos);

    Bytes ref = utf8("refs/tags/v1.2.3");
    CHECK(e.add(FulcioOid::source_repository_ref, ref.data(), ref.size()).ok());
    CHECK(e.get(FulcioOid::source_repository_ref) == "refs/tags/v1.2.3");
    CHECK_FALSE(e.get(FulcioOid::build_config_uri).has_value());

    auto refused = [](FulcioOid oid, Bytes value) {
        FulcioExtensions fresh;
        auto st = fresh.add(oid, value.data(), value.size());
        return st.ok() ? std::string() : st.error().message();
    };
    CHECK(refused(FulcioOid::build_config_uri, raw("https://x")).find("not one DER UTF8String") !=
          std::string::npos);
    Bytes trailing = utf8("push");
    trailing.push_back(0);
    CHECK(refused(FulcioOid::build_trigger, trailing).find("not one DER UTF8String") !=
          std::string::npos);
    Bytes truncated = utf8("push");
    truncated.pop_back();
    CHECK(refused(FulcioOid::build_trigger, truncated).find("not one DER UTF8String") !=
          std::string::npos);
    CHECK(refused(FulcioOid::github_workflow_ref, raw("refs/tags/v1\n")) ==
          "extension 1.3.6.1.4.1.57264.1.6 (GitHub Workflow Ref) holds a control character");
    CHECK(refused(FulcioOid::github_workflow_ref, raw(std::string(kMaxFulcioValueBytes, 'a')))
              .empty());
    CHECK(refused(FulcioOid::github_workflow_ref, raw(std::string(kMaxFulcioValueBytes + 1, 'a')))
              .find("longer than 4096 bytes") != std::string::npos);
    CHECK(refused(FulcioOid::source_repository_visibility, utf8("")).empty());  // MAY be empty
}

TEST_CASE("identity fields: exact match, the field named with both values, legacy as fallback") {
    FulcioExtensions e;
    auto put = [&e](FulcioOid oid, const Bytes& v) {
        REQUIRE(e.add(oid, v.data(), v.size()).ok());
    };
    put(FulcioOid::github_workflow_ref, raw("refs/tags/v0.158.0"));
    put(FulcioOid::github_workflow_name, raw("Release Contrib"));
    put(FulcioOid::build_config_uri,
        utf8("https://g/r/.github/workflows/c.yaml@refs/tags/v0.158.0"));

    SUBCASE("a match reports the value checked") {
        auto ok = check_fields(e, {{IdentityField::github_workflow_name, "Release Contrib"}});
        REQUIRE(ok.ok());
        REQUIRE(ok->size() == 1);
        CHECK(ok->front().value == "Release Contrib");
    }
    SUBCASE("another value names the field, the expected and the found value") {
        auto bad = check_fields(e, {{IdentityField::github_workflow_name, "Release Contrib"},
                                    {IdentityField::source_repository_ref, "refs/tags/v0.157.0"}});
        REQUIRE_FALSE(bad.ok());
        CHECK(bad.error().message() ==
              "sourceRepositoryRef: expected \"refs/tags/v0.157.0\", "
              "certificate has \"refs/tags/v0.158.0\"");
    }
    SUBCASE("the legacy ref stands in for the absent Source Repository Ref") {
        CHECK(check_fields(e, {{IdentityField::source_repository_ref, "refs/tags/v0.158.0"}}).ok());
    }
    SUBCASE("the newer extension wins over the legacy one") {
        put(FulcioOid::source_repository_ref, utf8("refs/tags/v9.9.9"));
        auto r = check_fields(e, {{IdentityField::github_workflow_ref, "refs/tags/v0.158.0"}});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message().find("certificate has \"refs/tags/v9.9.9\"") !=
              std::string::npos);
    }
    SUBCASE("a field the certificate lacks fails, naming the extensions looked for") {
        auto r = check_fields(e, {{IdentityField::source_repository_uri, "https://g/r"}});
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message() ==
              "sourceRepositoryUri: expected \"https://g/r\", certificate "
              "has no 1.3.6.1.4.1.57264.1.12 (Source Repository URI)");
        auto t = check_fields(e, {{IdentityField::github_workflow_trigger, "push"}});
        REQUIRE_FALSE(t.ok());
        CHECK(t.error().message().find("has neither 1.3.6.1.4.1.57264.1.20 (Build Trigger) nor "
                                       "1.3.6.1.4.1.57264.1.2 (GitHub Workflow Trigger)") !=
              std::string::npos);
    }
}

TEST_CASE("identity fields: bind_version fills {version} and names the field of a bad template") {
    auto bound = bind_version({{IdentityField::source_repository_ref, "refs/tags/v{version}"},
                               {IdentityField::github_workflow_name, "Release Contrib"}},
                              "0.158.0");
    REQUIRE(bound.ok());
    CHECK((*bound)[0].expected == "refs/tags/v0.158.0");
    CHECK((*bound)[1].expected == "Release Contrib");
    auto bad = bind_version({{IdentityField::build_config_uri, "x@refs/tags/v{Version}"}}, "1.0.0");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message().rfind("buildConfigUri: unknown placeholder {Version}", 0) == 0);
}
