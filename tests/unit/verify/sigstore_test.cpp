// verify_bundle() through the API the installer calls, on the public conformance material in
// tests/data (the generated private-root cases run through the binary in tests/integration/verify).
#include "verify/sigstore.hpp"

#include <doctest/doctest.h>

#include <string>

#include "conformance_identity.hpp"
#include "harness.hpp"

using namespace myr::verify;
using namespace myr::hash;

namespace {

using myr::test::kActions;
using myr::test::kBeacon;

struct Conformance {
    TrustedRoot root;
    std::string bundle;
    Digest artifact{};
};

bool load(const std::string& case_name, Conformance& m) {
    std::string base = myr::test::data_dir() + "/sigstore-conformance";
    auto root = load_trusted_root(base + "/public-good-trusted-root.json");
    REQUIRE_MESSAGE(root.ok(), root.error().message());
    m.root = std::move(*root);
    m.bundle = myr::test::read_file(base + "/bundle-verify/" + case_name + "/bundle.sigstore.json");
    REQUIRE_FALSE(m.bundle.empty());
    auto d = sha256_file(base + "/a.txt");
    REQUIRE(d.ok());
    m.artifact = *d;
    return true;
}

Identity exact(const std::string& subject, const std::string& issuer = kActions) {
    Identity id;
    id.subject = subject;
    id.issuer = issuer;
    return id;
}

Identity regexp(const std::string& re, const std::string& issuer = kActions) {
    Identity id;
    id.subject_regexp = re;
    id.issuer = issuer;
    return id;
}

}  // namespace

TEST_CASE("verify_bundle: a v0.3 bundle verifies and reports subject, issuer and signing time") {
    Conformance m;
    if (!load("happy-path-v0.3", m)) return;
    auto v = verify_bundle(m.root, m.bundle, m.artifact, exact(kBeacon));
    REQUIRE_MESSAGE(v.ok(), v.error().message());
    CHECK(v->subject == kBeacon);
    CHECK(v->issuer == kActions);
    CHECK(v->integrated_time > 1700000000);
}

TEST_CASE("verify_bundle: identity policy — anchored regexp, exact subject, exact issuer") {
    Conformance m;
    if (!load("happy-path-v0.3", m)) return;
    CHECK(verify_bundle(m.root, m.bundle, m.artifact,
                        regexp("https://github\\.com/sigstore-conformance/.*@refs/heads/main"))
              .ok());
    auto partial = verify_bundle(m.root, m.bundle, m.artifact, regexp("sigstore-conformance"));
    REQUIRE_FALSE(partial.ok());
    CHECK(partial.error().message().rfind("identity: ", 0) == 0);
    auto prefix =
        verify_bundle(m.root, m.bundle, m.artifact, exact(std::string(kBeacon).substr(0, 40)));
    REQUIRE_FALSE(prefix.ok());
    CHECK(prefix.error().message().rfind("identity: certificate subject", 0) == 0);
    auto issuer = verify_bundle(m.root, m.bundle, m.artifact,
                                exact(kBeacon, "https://token.actions.githubusercontent.com/"));
    REQUIRE_FALSE(issuer.ok());
    CHECK(issuer.error().message().rfind("identity: certificate issuer", 0) == 0);

    Identity both = exact(kBeacon);
    both.subject_regexp = ".*";
    auto b = verify_bundle(m.root, m.bundle, m.artifact, both);
    REQUIRE_FALSE(b.ok());
    CHECK(b.error().message().rfind("identity policy: ", 0) == 0);
    auto bad_re = verify_bundle(m.root, m.bundle, m.artifact, regexp("(["));
    REQUIRE_FALSE(bad_re.ok());
    CHECK(bad_re.error().message().rfind("identity policy: subjectRegexp", 0) == 0);
}

TEST_CASE("verify_bundle: the digest passed in is what gets checked") {
    Conformance m;
    if (!load("happy-path-v0.2", m)) return;
    Digest other = m.artifact;
    other[0] ^= 1;
    auto r = verify_bundle(m.root, m.bundle, other, exact(kBeacon));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().rfind("artifact: sha256 ", 0) == 0);
}

TEST_CASE("verify_bundle: a root without the log refuses at the tlog entry step") {
    Conformance m;
    if (!load("happy-path-v0.1", m)) return;
    TrustedRoot empty;
    auto r = verify_bundle(empty, m.bundle, m.artifact, exact(kBeacon));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().rfind("tlog entry: log ID ", 0) == 0);
    TrustedRoot no_ca = m.root;
    no_ca.certificate_authorities.clear();
    auto c = verify_bundle(no_ca, m.bundle, m.artifact, exact(kBeacon));
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().message().rfind("certificate chain: ", 0) == 0);
    TrustedRoot no_ct = m.root;
    no_ct.ctlogs.clear();
    auto s = verify_bundle(no_ct, m.bundle, m.artifact, exact(kBeacon));
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message().rfind("SCT: ", 0) == 0);
}

TEST_CASE("verify_bundle: {version} in the subject is bound to the offered version first") {
    Conformance m;
    if (!load("happy-path-v0.3", m)) return;
    // The beacon's SAN ends in "@refs/heads/main": "main" stands in for the offered version.
    std::string tmpl = kBeacon;
    tmpl.replace(tmpl.rfind("main"), 4, "{version}");
    Identity id = exact(tmpl);
    id.fields = {{IdentityField::source_repository_ref, "refs/heads/{version}"}};
    // Unbound, the template is compared literally and no release could ever pass.
    auto literal = verify_bundle(m.root, m.bundle, m.artifact, id);
    REQUIRE_FALSE(literal.ok());
    CHECK(literal.error().message().rfind("identity: certificate subject", 0) == 0);
    auto bound = bind_identity(id, "main");
    REQUIRE_MESSAGE(bound.ok(), bound.error().message());
    CHECK(bound->subject == kBeacon);
    CHECK(bound->fields.at(0).expected == "refs/heads/main");
    auto v = verify_bundle(m.root, m.bundle, m.artifact, *bound);
    REQUIRE_MESSAGE(v.ok(), v.error().message());
    CHECK(v->subject == kBeacon);
    // Another version's subject is refused.
    auto other = bind_identity(id, "0.158.0");
    REQUIRE(other.ok());
    CHECK_FALSE(verify_bundle(m.root, m.bundle, m.artifact, *other).ok());
    // A typo in the subject's template names the subject.
    auto typo = bind_identity(exact(kBeacon + std::string("{Version}")), "main");
    REQUIRE_FALSE(typo.ok());
    CHECK(typo.error().message().rfind("subject: unknown placeholder {Version}", 0) == 0);
}
