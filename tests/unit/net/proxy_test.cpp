// net/proxy.hpp without I/O: the NO_PROXY table, precedence of configuration and environment, proxy
// URLs and their redaction, credentials read at use, and the CONNECT reply parser against hostile
// answers.
#include "net/proxy.hpp"

#include <doctest/doctest.h>
#include <stdlib.h>

#include <fstream>

#include "harness.hpp"

using namespace myr;
using namespace myr::net;

namespace {

Url url(const char* text) {
    auto u = parse_url(text);
    REQUIRE(u);
    return *u;
}

std::optional<ProxyHop> route(const ProxySettings& s, const ProxyEnv& e, const char* target) {
    auto p = ProxyPolicy::make(s, e);
    REQUIRE_MESSAGE(p, p.error().message());
    auto hop = (*p)->route(url(target));
    REQUIRE_MESSAGE(hop, hop.error().message());
    return *hop;
}

}  // namespace

TEST_CASE("proxy: NO_PROXY entries as curl reads them") {
    struct Row {
        const char* list;
        const char* host;
        uint16_t port;
        bool bypass;
    };
    // clang-format off
    const Row rows[] = {
        {"*",                       "anything.example", 443, true},
        {"example.com",             "example.com",      443, true},
        {"example.com",             "a.b.example.com",  443, true},   // bare suffix
        {".example.com",            "example.com",      443, true},
        {".example.com",            "x.example.com",    443, true},
        {"example.com",             "badexample.com",   443, false},  // not a label boundary
        {"EXAMPLE.com",             "Api.Example.COM.", 443, true},   // case, trailing dot
        {"example.com:8443",        "example.com",      8443, true},
        {"example.com:8443",        "example.com",      443, false},
        {"10.1.2.3",                "10.1.2.3",         80,  true},
        {"10.1.2.3",                "10.1.2.4",         80,  false},
        {"10.0.0.0/8",              "10.200.1.1",       80,  true},
        {"10.0.0.0/8",              "11.0.0.1",         80,  false},
        {"10.0.0.0/8",              "ten.example",      80,  false},  // names are not resolved
        {"192.168.1.0/24",          "192.168.1.255",    80,  true},
        {"0.0.0.0/0",               "8.8.8.8",          80,  true},
        {"fd00::/8",                "fd12::1",          443, true},
        {"fd00::/8",                "fe80::1",          443, false},
        {"::1",                     "::1",              443, true},
        {"::1",                     "0:0:0:0:0:0:0:1",  443, true},   // any spelling
        {"[::1]:8080",              "::1",              8080, true},
        {"[::1]:8080",              "::1",              443, false},
        {"127.0.0.1:9000, a.test",  "127.0.0.1",        9000, true},
        {"127.0.0.1:9000  a.test",  "x.a.test",         1,   true},   // spaces separate too
        {"10.0.0.0/8",              "fd00::1",          1,   false},  // other family
        {"",                        "example.com",      443, false},
        {".",                       "example.com",      443, false},
    };
    // clang-format on
    for (const Row& r : rows) {
        CAPTURE(r.list);
        CAPTURE(r.host);
        CHECK(no_proxy_matches(split_no_proxy(r.list), r.host, r.port) == r.bypass);
    }
}

TEST_CASE("proxy: configuration over environment, lower case over upper case, scheme by scheme") {
    ProxyEnv env;
    env.http_proxy = "http://plain:3128";
    env.https_proxy = "http://secure:3128";
    env.no_proxy = "internal.example";
    ProxySettings none;
    CHECK(route(none, env, "https://a.example/x")->host == "secure");
    CHECK(route(none, env, "wss://a.example/v1/opamp")->host == "secure");
    CHECK(route(none, env, "http://a.example/x")->host == "plain");
    CHECK(route(none, env, "ws://a.example/x")->host == "plain");
    CHECK_FALSE(route(none, env, "https://api.internal.example/x"));
    // network.proxy.url: every scheme, and the environment is not read (not even NO_PROXY).
    ProxySettings cfg;
    cfg.url = "http://cfg:8080";
    CHECK(route(cfg, env, "http://a.example/x")->host == "cfg");
    CHECK(route(cfg, env, "https://api.internal.example/x")->host == "cfg");
    cfg.no_proxy = {"a.example"};
    CHECK_FALSE(route(cfg, env, "https://a.example/x"));
    // A configured noProxy replaces the environment's list for an environment proxy too.
    ProxySettings list_only;
    list_only.no_proxy = {"b.example"};
    CHECK(route(list_only, env, "https://api.internal.example/x"));
    CHECK_FALSE(route(list_only, env, "https://b.example/x"));
    // No https proxy: https goes direct even with an http one.
    ProxyEnv only_http;
    only_http.http_proxy = "plain:3128";
    CHECK_FALSE(route(none, only_http, "https://a.example/x"));

    // Lower case wins, as in curl.
    setenv("https_proxy", "http://lower:1", 1);
    setenv("HTTPS_PROXY", "http://upper:1", 1);
    setenv("NO_PROXY", "upper.example", 1);
    unsetenv("no_proxy");
    ProxyEnv proc = ProxyEnv::from_process();
    CHECK(proc.https_proxy == "http://lower:1");
    CHECK(proc.no_proxy == "upper.example");
    unsetenv("https_proxy");
    CHECK(ProxyEnv::from_process().https_proxy == "http://upper:1");
    unsetenv("HTTPS_PROXY");
    unsetenv("NO_PROXY");
}

TEST_CASE("proxy: URLs, credentials in them, and how they are shown") {
    auto p = parse_proxy_url("http://us%40er:p%3Ass@proxy.corp:3128/");
    REQUIRE(p);
    CHECK(p->host == "proxy.corp");
    CHECK(p->port == 3128);
    CHECK(p->user == "us@er");
    CHECK(p->password == "p:ss");
    CHECK(p->shown() == "http://***@proxy.corp:3128");
    CHECK(parse_proxy_url("proxy:8080")->shown() == "http://proxy:8080");
    CHECK(parse_proxy_url("http://proxy")->port == 1080);  // curl's default
    CHECK(parse_proxy_url("http://[fd00::1]:3128")->shown() == "http://[fd00::1]:3128");
    auto https = parse_proxy_url("https://proxy:443");
    REQUIRE_FALSE(https);
    CHECK(https.error().message().find("https:// proxies are not supported") != std::string::npos);
    CHECK_FALSE(parse_proxy_url("socks5://proxy:1080"));
    CHECK_FALSE(parse_proxy_url("http://proxy:3128/path"));
    CHECK_FALSE(parse_proxy_url("http://proxy:0"));
    CHECK_FALSE(parse_proxy_url("http://proxy:99999"));
    CHECK_FALSE(parse_proxy_url("http://:3128"));
    CHECK_FALSE(parse_proxy_url("http://u:%zz@proxy:1"));
    // A malformed environment proxy is named at start, without its credentials.
    ProxyEnv env;
    env.https_proxy = "https://user:secret@proxy:443";
    auto policy = ProxyPolicy::make({}, env);
    REQUIRE_FALSE(policy);
    CHECK(policy.error().message().find("https_proxy/HTTPS_PROXY") != std::string::npos);
    CHECK(policy.error().message().find("secret") == std::string::npos);

    ProxySettings s;
    s.url = "http://user:secret@proxy:3128";
    s.no_proxy = {"a.example"};
    auto shown = ProxyPolicy::make(s, {});
    REQUIRE(shown);
    CHECK((*shown)->describe() == "http://***@proxy:3128 (network.proxy.url), noProxy: a.example");
    CHECK(ProxyPolicy::make({}, {}).value()->describe() == "direct");
}

TEST_CASE("proxy: Basic credentials from the URL, a file read at use, or a variable") {
    myr::test::TempDir dir;
    ProxySettings s;
    s.url = "http://user:pw@proxy:3128";
    CHECK(route(s, {}, "https://a.example/")->authorization == "Basic dXNlcjpwdw==");
    CHECK(route(s, {}, "https://a.example/")->label == "http://***@proxy:3128");

    const std::string file = dir / "creds";
    s.credentials_file = file;
    std::ofstream(file) << "alice:one\n";
    CHECK(route(s, {}, "https://a.example/")->authorization == "Basic YWxpY2U6b25l");
    std::ofstream(file) << "alice:two";  // rotated: the next connection reads it
    CHECK(route(s, {}, "https://a.example/")->authorization == "Basic YWxpY2U6dHdv");
    std::ofstream(file) << "no colon here\n";
    auto policy = ProxyPolicy::make(s, {});
    auto bad = (*policy)->route(url("https://a.example/"));
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message().find("expected user:password") != std::string::npos);
    std::ofstream(file) << std::string(5000, 'x') + ":y";
    CHECK_FALSE((*policy)->route(url("https://a.example/")));
    s.credentials_file = dir / "missing";
    CHECK_FALSE((*ProxyPolicy::make(s, {}))->route(url("https://a.example/")));

    s.credentials_file.clear();
    s.credentials_env = "MYR_TEST_PROXY_CREDS";
    setenv("MYR_TEST_PROXY_CREDS", "bob:pw", 1);
    CHECK(route(s, {}, "https://a.example/")->authorization == "Basic Ym9iOnB3");
    unsetenv("MYR_TEST_PROXY_CREDS");
    auto unset = (*ProxyPolicy::make(s, {}))->route(url("https://a.example/"));
    REQUIRE_FALSE(unset);
    CHECK(unset.error().message() == "network.proxy.credentialsEnv MYR_TEST_PROXY_CREDS: not set");
}

TEST_CASE("proxy: the CONNECT request") {
    ProxyHop hop;
    hop.authorization = "Basic eDp5";
    CHECK(connect_request(hop, "fd00::1", 443) ==
          "CONNECT [fd00::1]:443 HTTP/1.1\r\nHost: [fd00::1]:443\r\n"
          "Proxy-Authorization: Basic eDp5\r\nUser-Agent: myriarch-updater\r\n\r\n");
    hop.authorization.clear();
    CHECK(connect_request(hop, "a.example", 8443).find("Proxy-Authorization") == std::string::npos);
}

TEST_CASE("proxy: the CONNECT reply parser against hostile answers") {
    auto parse = [](std::string_view s) { return parse_connect_reply(s); };
    // Complete, in one piece or in many.
    const std::string ok = "HTTP/1.1 200 Connection established\r\n\r\n";
    auto r = parse(ok);
    REQUIRE(r);
    REQUIRE(r->has_value());
    CHECK((*r)->status == 200);
    CHECK((*r)->head_bytes == ok.size());
    for (size_t n = 0; n < ok.size(); ++n) {
        auto part = parse(std::string_view(ok).substr(0, n));
        REQUIRE(part);
        CHECK_FALSE(part->has_value());
    }
    // 200 followed by bytes: the parser says where the head ends; the stream refuses the rest.
    auto body = parse(ok + "<html>");
    REQUIRE(body);
    CHECK((*body)->head_bytes == ok.size());
    // Refusals with headers and a body.
    auto refused = parse(
        "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic "
        "realm=\"x\"\r\nContent-Length: 3\r\n\r\nabc");
    REQUIRE(refused);
    CHECK((*refused)->status == 407);
    CHECK((*refused)->reason == "Proxy Authentication Required");
    // Interim answers are skipped.
    auto interim = parse(
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Hints\r\nLink: x\r\n\r\n"
        "HTTP/1.0 200 OK\r\n\r\n");
    REQUIRE(interim);
    REQUIRE(interim->has_value());
    CHECK((*interim)->status == 200);
    // A reason phrase with control bytes or no reason at all.
    CHECK((*parse("HTTP/1.1 502 Bad\x01Gate\r\n\r\n"))->reason == "Bad?Gate");
    CHECK((*parse("HTTP/1.1 403\r\n\r\n"))->reason.empty());
    // Oversize: headers without end, or a flood of 1xx.
    std::string big = "HTTP/1.1 200 OK\r\n";
    while (big.size() < kMaxConnectReplyHead + 10) big += "X-Pad: aaaaaaaaaaaaaaaaaaaa\r\n";
    auto over = parse(big);
    REQUIRE_FALSE(over);
    CHECK(over.error().message().find("over 8192 bytes") != std::string::npos);
    std::string flood;
    while (flood.size() < kMaxConnectReplyHead + 10) flood += "HTTP/1.1 100 Continue\r\n\r\n";
    CHECK_FALSE(parse(flood));
    // No CRLF at all: refused at the bound, not waited on for ever.
    CHECK_FALSE(parse("HTTP/1.1 200 OK" + std::string(kMaxConnectReplyHead, 'a')));
    // Garbage: refused at once.
    for (std::string_view g : {"SSH-2.0-OpenSSH\r\n", "\x16\x03\x01\x02\x00", "HTTP/2 200\r\n\r\n",
                               "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n",
                               "HTTP/1.1 abc OK\r\n\r\n", "HTTP/1.1 099 Low\r\n\r\n"}) {
        CAPTURE(g);
        CHECK_FALSE(parse(g));
    }
}
