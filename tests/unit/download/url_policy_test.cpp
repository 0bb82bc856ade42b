// The URL policy: every rule refuses with its name, prefixes are compared by whole segments, and
// redirect targets resolve against the URL they answered.
#include "download/url_policy.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace myr;
using namespace myr::download;

namespace {

UrlPolicy policy(std::initializer_list<const char*> prefixes, bool plain = false) {
    UrlPolicy p;
    for (const char* t : prefixes) {
        auto u = parse_url(t);
        REQUIRE(u.ok());
        p.prefixes.push_back(*u);
    }
    p.allow_plain_http = plain;
    return p;
}

// The rule named in a refusal, "" when admitted.
std::string rule_of(const std::string& url, const UrlPolicy& p) {
    auto r = check_download_url(url, p);
    if (r) return "";
    CHECK(r.error().code() == Errc::refused);
    const std::string& m = r.error().message();
    const size_t at = m.find("(rule ");
    REQUIRE(at != std::string::npos);
    return m.substr(at + 6, m.find(')', at) - at - 6);
}

}  // namespace

TEST_CASE("url policy: scheme and host are lower-cased and the default port made explicit") {
    auto u = normalize_download_url("HTTPS://Example.COM/Artifacts/A.tar.gz");
    REQUIRE(u.ok());
    CHECK(u->scheme == "https");
    CHECK(u->host == "example.com");
    CHECK(u->port == 443);
    CHECK(u->path == "/Artifacts/A.tar.gz");  // the path is case-sensitive
    const UrlPolicy p = policy({"https://example.com:443/Artifacts/"});
    CHECK(rule_of("HTTPS://EXAMPLE.com/Artifacts/A.tar.gz", p) == "");
    CHECK(rule_of("https://example.com:443/Artifacts/A.tar.gz", p) == "");
    CHECK(rule_of("https://example.com:8443/Artifacts/A.tar.gz", p) == "prefix");
    CHECK(rule_of("https://example.com/artifacts/A.tar.gz", p) == "prefix");
}

TEST_CASE("url policy: prefixes match whole path segments only") {
    const UrlPolicy dir = policy({"https://h/artifacts/"});
    CHECK(rule_of("https://h/artifacts/x.tar.gz", dir) == "");
    CHECK(rule_of("https://h/artifacts/sub/x.tar.gz", dir) == "");
    CHECK(rule_of("https://h/artifacts-evil/x.tar.gz", dir) == "prefix");
    CHECK(rule_of("https://h/artifactsx", dir) == "prefix");
    CHECK(rule_of("https://h/artifacts", dir) == "prefix");  // the directory itself is no file
    CHECK(rule_of("https://h/", dir) == "prefix");
    const UrlPolicy bare = policy({"https://h/artifacts"});
    CHECK(rule_of("https://h/artifacts/x", bare) == "");
    CHECK(rule_of("https://h/artifacts2/x", bare) == "prefix");
    CHECK(rule_of("https://other/artifacts/x", bare) == "prefix");
    CHECK(rule_of("http://h/artifacts/x", policy({"https://h/artifacts/"}, true)) == "prefix");
    // The query is not part of the comparison, and is kept.
    auto q = check_download_url("https://h/artifacts/x?sig=a/../b", dir);
    REQUIRE(q.ok());
    CHECK(q->path == "/artifacts/x?sig=a/../b");
    CHECK(rule_of("https://h/artifacts/x", policy({})) == "prefix");
    CHECK(rule_of("https://b/artifacts/x",
                  policy({"https://a/artifacts/", "https://b/artifacts/"})) == "");
}

TEST_CASE("url policy: each refusal names its rule") {
    const UrlPolicy p = policy({"https://h/artifacts/", "http://127.0.0.1:8080/a/"});
    CHECK(rule_of("https://user@h/artifacts/x", p) == "userinfo");
    CHECK(rule_of("https://user:pw@h/artifacts/x", p) == "userinfo");
    CHECK(rule_of("https://h/artifacts/../secret", p) == "dot-segment");
    CHECK(rule_of("https://h/artifacts/./x", p) == "dot-segment");
    CHECK(rule_of("https://h/artifacts/x/..", p) == "dot-segment");
    CHECK(rule_of("https://h/artifacts/%2e%2e/secret", p) == "encoded-separator");
    CHECK(rule_of("https://h/artifacts/%2E%2E/secret", p) == "encoded-separator");
    CHECK(rule_of("https://h/artifacts/a%2fb", p) == "encoded-separator");
    CHECK(rule_of("https://h/artifacts/a%5Cb", p) == "encoded-separator");
    CHECK(rule_of("https://h/artifacts/a\\b", p) == "encoded-separator");
    CHECK(rule_of("https://h/artifacts/a%2", p) == "encoded-separator");
    CHECK(rule_of("https://h/artifacts/a%zz", p) == "encoded-separator");
    CHECK(rule_of("https://h/artifacts/a%00b", p) == "control-character");
    CHECK(rule_of("https://h/artifacts/a\r\nX: y", p) == "control-character");
    CHECK(rule_of("https://h/artifacts/a b", p) == "control-character");
    CHECK(rule_of("https://h/artifacts/\x7f", p) == "control-character");
    CHECK(rule_of("https://h/artifacts/\xc3\xa9", p) == "control-character");
    CHECK(rule_of("ftp://h/artifacts/x", p) == "syntax");
    CHECK(rule_of("wss://h/artifacts/x", p) == "syntax");
    CHECK(rule_of("/artifacts/x", p) == "syntax");
    CHECK(rule_of("https://h/artifacts/x#frag", p) == "syntax");
    CHECK(rule_of("https://h:0/artifacts/x", p) == "syntax");
    CHECK(rule_of("http://127.0.0.1:8080/a/x", p) == "plain-http");
    CHECK(rule_of("https://h/other/x", p) == "prefix");
    // Allowed characters that merely look odd.
    CHECK(rule_of("https://h/artifacts/a%20b%41", p) == "");
    CHECK(rule_of("https://h/artifacts/...", p) == "");
    CHECK(rule_of("https://h/artifacts/.hidden", p) == "");
}

TEST_CASE("url policy: messages say which URL and why") {
    auto r = check_download_url("https://h/x", policy({"https://h/artifacts/"}));
    REQUIRE(!r.ok());
    CHECK(r.error().message() ==
          "https://h/x: refused (rule prefix): not below any allowed download prefix "
          "(https://h/artifacts/)");
    auto n = check_download_url("https://h/x", policy({}));
    REQUIRE(!n.ok());
    CHECK(n.error().message().find("none configured") != std::string::npos);
}

TEST_CASE("url policy: plain http only where the endpoint may be plain") {
    const Url loop_ep{"ws", "127.0.0.1", 4320, "/v1/opamp"};
    const Url far_ep{"wss", "opamp.example", 443, "/v1/opamp"};
    CHECK(plain_http_allowed(&loop_ep, false));
    CHECK(!plain_http_allowed(&far_ep, false));
    CHECK(plain_http_allowed(&far_ep, true));
    CHECK(!plain_http_allowed(nullptr, false));
    CHECK(rule_of("http://h/a/x", policy({"http://h/a/"}, false)) == "plain-http");
    CHECK(rule_of("http://h/a/x", policy({"http://h/a/"}, true)) == "");
}

TEST_CASE("url policy: redirect targets resolve against the URL they answered") {
    const Url base{"https", "h", 8443, "/artifacts/v1/x.tar.gz?t=1"};
    CHECK(resolve_location(base, "https://o/y") == "https://o/y");
    CHECK(resolve_location(base, "//o:9/y") == "https://o:9/y");
    CHECK(resolve_location(base, "/other/y") == "https://h:8443/other/y");
    CHECK(resolve_location(base, "y.tar.gz") == "https://h:8443/artifacts/v1/y.tar.gz");
    CHECK(resolve_location(base, "?t=2") == "https://h:8443/artifacts/v1/x.tar.gz?t=2");
    CHECK(resolve_location(base, "../y") == "https://h:8443/artifacts/v1/../y");  // then refused
    CHECK(rule_of(resolve_location(base, "../y"), policy({"https://h:8443/artifacts/"})) ==
          "dot-segment");
    CHECK(same_origin(base, Url{"https", "h", 8443, "/"}));
    CHECK(!same_origin(base, Url{"https", "h", 443, "/artifacts/"}));
    CHECK(!same_origin(base, Url{"http", "h", 8443, "/artifacts/"}));
}
