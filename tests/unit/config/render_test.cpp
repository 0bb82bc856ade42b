// The effective configuration, the grace period, and the value parsers other modules share.
#include <doctest/doctest.h>

#include "harness.hpp"
#include "helpers.hpp"

using namespace myr;
using namespace myr::config;
using namespace myr::config::test;
using namespace std::chrono_literals;

namespace {

// Renders, loads the rendering again, and checks both configs are equal.
void check_round_trip(const Config& c, Mode mode) {
    std::string text = render_effective(c);
    INFO(text);
    LoadResult again = load_string(text, c.path, mode);
    INFO(dump(again));
    REQUIRE(again.config.has_value());
    CHECK(*again.config == c);
}

}  // namespace

TEST_CASE("config: the effective configuration loads again to an equal config") {
    LoadResult ex =
        load_file(myr::test::source_dir() + "/packaging/examples/updater.yaml", Mode::container);
    REQUIRE(ex.config.has_value());
    check_round_trip(*ex.config, Mode::container);

    check_round_trip(expect_ok(kIdentity), Mode::any);
    check_round_trip(
        expect_ok(kIdentity + "host:\n  serviceName: otel.service\n  pollInterval: 500ms\n"),
        Mode::any);

    Config odd = expect_ok(
        "server:\n"
        "  endpoint: \"ws://[::1]:80/x?y=1\"\n"
        "  hostName: \"quote\\\" back\\\\ tab\\t nl\\n bell\\a \\u00e9 \\u2028 \\x85 "
        "\\U0001F600\"\n"
        "  heartbeatInterval: 1.5s\n"
        "update:\n"
        "  requireSignature: false\n"
        "  signerIdentity: {subjectRegexp: '^a\\.b$', issuer: \"\",\n"
        "                   sourceRepositoryRef: 'refs/tags/v{version}', githubWorkflowName: 'R: "
        "x'}\n"
        "  allowedDownloadPrefixes: [HTTPS://DL.example:443/a?b, http://127.0.0.1:81]\n"
        "  minimumVersion: v1.2.3-rc.1+b\n"
        "  maxArtifactSize: 12345\n"
        "  validateArgs: [\"#\", \": x\", \"- y\", \"{config}\"]\n"
        "collector:\n"
        "  activation: copy\n"
        "  healthUrl: \"\"\n"
        "  keepVersions: 0\n"
        "supervisor:\n"
        "  healthUrl: \"\"\n"
        "container:\n"
        "  supervisorCommand: [\"/bin/s p\"]\n"
        "  seedBinary: /s\n"
        "  seedPolicy: image\n"
        "  healthListen: \"\"\n"
        "  stopSignal: INT\n"
        "  stopTimeout: 1ms\n"
        "log: {level: error, format: json}\n");
    check_round_trip(odd, Mode::any);
}

TEST_CASE("config: the effective configuration fills in every default") {
    std::string text = render_effective(expect_ok(kIdentity));
    for (const char* line :
         {"  heartbeatInterval: 30s\n", "  maxArtifactSize: 1GiB\n",
          "  downloadTimeout: \"\"  # in effect: 16684s\n", "  retryFor: 6h\n",
          "  quarantineFor: 24h\n", "  healthTimeout: 2m\n", "  healthSuccesses: 3\n",
          "  healthInterval: 2s\n", "  keepVersions: 1\n", "  activation: symlink\n",
          "  healthUrl: \"http://127.0.0.1:23233/health\"\n",
          "  validateArgs: [\"validate\", \"--config={config}\"]\n", "  level: info\n",
          "  format: text\n", "  issuer: \"https://token.actions.githubusercontent.com\"\n"}) {
        CAPTURE(line);
        CHECK(text.find(line) != std::string::npos);
    }
    CHECK(text.find("container:") == std::string::npos);
    std::string with = render_effective(
        expect_ok(kIdentity + "container:\n  supervisorCommand: [/s]\n  seedBinary: /b\n"));
    CHECK(with.find("  restartWindow: 10m\n") != std::string::npos);
    CHECK(with.find("  healthListen: \"0.0.0.0:13135\"\n") != std::string::npos);
}

TEST_CASE("config: the effective configuration shows the derived download prefix") {
    std::string text = render_effective(
        expect_ok(kIdentity + "server:\n  endpoint: wss://myriarchd:4320/v1/opamp\n"));
    CHECK(
        text.find("allowedDownloadPrefixes: []  # in effect: https://myriarchd:4320/artifacts/") !=
        std::string::npos);
}

TEST_CASE("config: recommended grace period is 2 stop + 2 health timeouts + 60s") {
    CHECK(recommended_grace_period(expect_ok(kIdentity)) == 360s);  // no container: default stop
    Config c = expect_ok(kIdentity + "  healthTimeout: 1m\ncontainer:\n  stopTimeout: 10s\n");
    CHECK(recommended_grace_period(c) == 200s);
    // Host mode: the updater's wait for `systemctl stop|start` (90 s) in place of stopTimeout.
    Config h = expect_ok(kIdentity + "  healthTimeout: 1m\nhost:\n  serviceName: s.service\n");
    CHECK(recommended_grace_period(h) == 360s);
    Config huge = c;
    huge.update.health_timeout = Duration(std::numeric_limits<int64_t>::max() / 2);
    CHECK(recommended_grace_period(huge) == Duration(std::numeric_limits<int64_t>::max()));
}

TEST_CASE("config: parse_url canonicalises and refuses what a client cannot use") {
    auto u = parse_url("WSS://Host.Example:443/v1/opamp?x=1");
    REQUIRE(u.ok());
    CHECK(u->scheme == "wss");
    CHECK(u->host == "host.example");
    CHECK(u->port == 443);
    CHECK(u->path == "/v1/opamp?x=1");
    CHECK(u->secure());
    CHECK(u->str() == "wss://host.example/v1/opamp?x=1");
    auto v = parse_url("http://[::1]:8080");
    REQUIRE(v.ok());
    CHECK(v->host == "::1");
    CHECK(v->path == "/");
    CHECK_FALSE(v->secure());
    CHECK(v->str() == "http://[::1]:8080/");
    CHECK(parse_url("ws://h?q")->path == "/?q");
    for (const char* bad : {"", "h:1", "ftp://h/", "ws://", "ws://:80/", "ws://h:/", "ws://h:x/",
                            "ws://h:65536/", "ws://u:p@h/", "ws://h/#f", "ws://[::1/", "ws://[zz]/",
                            "ws://h h/", "ws://h%41/", "ws://a:b:c/"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_url(bad).ok());
    }
}

TEST_CASE("config: parse_host_port takes IP literals, IPv6 in brackets, and host names") {
    auto a = parse_host_port("0.0.0.0:13135");
    REQUIRE(a.ok());
    CHECK(a->host == "0.0.0.0");
    CHECK(a->port == 13135);
    CHECK_FALSE(a->ipv6());
    auto b = parse_host_port("[::]:13135");
    REQUIRE(b.ok());
    CHECK(b->host == "::");
    CHECK(b->ipv6());
    CHECK(b->str() == "[::]:13135");
    auto c = parse_host_port("LocalHost:13135");
    REQUIRE(c.ok());
    CHECK(c->host == "localhost");
    CHECK_FALSE(c->ipv6());
    for (const char* bad : {"", ":1", "13135", "::1:80", "[::1]", "[::1]80", "1.2.3:80", "a b:80",
                            "1.2.3.4:0", "1.2.3.4:65536", "1.2.3.4:", "1.2.3.4:8a"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_host_port(bad).ok());
    }
}

TEST_CASE("config: loopback hosts are 127.0.0.0/8, ::1 and localhost") {
    for (const char* h :
         {"127.0.0.1", "127.1.2.3", "::1", "0:0:0:0:0:0:0:1", "localhost", "LocalHost"}) {
        CAPTURE(h);
        CHECK(is_loopback_host(h));
    }
    for (const char* h : {"128.0.0.1", "10.0.0.1", "::", "::2", "localhost.example", "127.0.0",
                          "example.com", ""}) {
        CAPTURE(h);
        CHECK_FALSE(is_loopback_host(h));
    }
}

TEST_CASE("config: download prefixes default to /artifacts/ on the endpoint's host") {
    Config a = expect_ok(kIdentity + "server:\n  endpoint: wss://m.example:4320/v1/opamp\n");
    auto p = effective_download_prefixes(a);
    REQUIRE(p.size() == 1);
    CHECK(p[0].str() == "https://m.example:4320/artifacts/");
    Config b = expect_ok(kIdentity + "server:\n  endpoint: ws://127.0.0.1/v1/opamp\n");
    CHECK(effective_download_prefixes(b)[0].str() == "http://127.0.0.1/artifacts/");
    Config c = expect_ok(kIdentity + "  allowedDownloadPrefixes: [https://d/x/]\n" +
                         "server:\n  endpoint: ws://127.0.0.1/v1/opamp\n");
    REQUIRE(effective_download_prefixes(c).size() == 1);
    CHECK(effective_download_prefixes(c)[0].str() == "https://d/x/");
    CHECK(effective_download_prefixes(expect_ok(kIdentity)).empty());
}
