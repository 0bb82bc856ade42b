// Through a real HTTP proxy (squid, started by each case on loopback; docs/net.md, "Proxies"):
// OpAMP over ws:// and wss:// by CONNECT, signed installs over http:// (absolute-form) and
// https:// (CONNECT), NO_PROXY, basic auth right and wrong, and a proxy killed mid-download.
// The real binary runs as PID 1 (update_rig.hpp); squid's access log is the witness of what went
// through it.
#include <sys/stat.h>

#include "squid.hpp"
#include "test_signer.hpp"
#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

// The signed 0.117.0 of every case, under a private test root.
struct Signed {
    explicit Signed(Rig& rig, std::string name = "") : file(std::move(name)) {
        if (file.empty()) file = rig.tar_gz(rig.release("0.117.0"), "signed.tar.gz");
        sig = rig.dir / "sigstore";
        sign_artifacts(sig, {rig.artifacts + "/" + file});
    }
    void require(UpdaterConfig& c) const {
        c.require_signature = true;
        c.trusted_root_file = sig + "/trusted_root.json";
        c.signer_subject = kSignerSubject;
        c.signer_issuer = kSignerIssuer;
    }
    Offer offer(const std::string& url = "") const {
        Offer o{"0.117.0", file};
        o.signature_file = sig + "/cases/ok-v0.3/bundle.json";
        o.url = url;
        return o;
    }
    std::string file, sig;
};

// Nothing of the proxy variables of the machine running the tests reaches the updater.
SpawnOptions env(std::map<std::string, std::string> vars) {
    SpawnOptions o;
    for (const char* v : {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy",
                          "NO_PROXY", "all_proxy", "ALL_PROXY"}) {
        if (!vars.count(v)) o.unset_env.emplace_back(v);
    }
    o.env = std::move(vars);
    return o;
}

std::string hostport(int port) {
    return "127.0.0.1:" + std::to_string(port);
}

// Whether a case can run here: root for a PID 1, the signer and squid (a skip is reported).
bool runnable() {
    if (!can_run_pid1()) return false;
    std::string why = signer_unavailable();
    if (why.empty()) why = squid_unavailable();
    if (why.empty()) return true;
    report_skip(why);
    return false;
}

// Most cases: the rig, the signed 0.117.0, a squid anyone may use, and the updater configured to
// require the signature (`tweak` adds to it).
struct Site {
    explicit Site(const std::function<void(UpdaterConfig&)>& tweak = {}) {
        rig.configure(rig.release("0.116.0"), [&](UpdaterConfig& c) {
            rel.require(c);
            if (tweak) tweak(c);
        });
    }
    Rig rig;
    Signed rel{rig};
    Squid squid{rig.dir / "squid", {}};
};

// Restarts the rig's artifact server on https with a test CA of its own; returns that CA.
opamp::TlsMaterial serve_artifacts_over_tls(Rig& rig) {
    opamp::TlsMaterial tls = opamp::TlsMaterial::make(rig.dir);
    rig.artifact_server.reset();
    ::unlink((rig.artifacts + "/port").c_str());
    rig.artifact_server.emplace(rig.artifacts, tls.cert, tls.key);
    return tls;
}

// Waits for a final status of `o` offered now and returns it.
Status install(Rig& rig, const Updater& u, const Offer& o, Millis t = 60s) {
    size_t from = rig.mark();
    rig.offer(o);
    auto st = rig.wait_status(o.version, "", from, t);
    REQUIRE_MESSAGE(st, "no final status; record:\n" << rig.record() << "\nlog:\n" << u.log());
    return *st;
}

}  // namespace

TEST_CASE("proxy: OpAMP over ws:// by CONNECT and a signed http:// download through squid") {
    if (!runnable()) return;
    Site site;
    auto& [rig, rel, squid] = site;
    Updater u(rig.config(), Launch::pid1,
              env({{"HTTP_PROXY", squid.url()}, {"HTTPS_PROXY", squid.url()}}));
    rig.settle(u);
    Status st = install(rig, u, rel.offer());
    CHECK_MESSAGE(st.status == "Installed", st.error << "\nlog:\n" << u.log());
    check_settled(rig, "0.117.0");
    // The OpAMP connection is a tunnel (logged when it ends, so after the stop); the download
    // an absolute-form GET.
    CHECK(u.stop() == 0);
    CHECK_MESSAGE(
        wait_until(
            [&] { return !squid.log_lines("CONNECT " + hostport(rig.server->port())).empty(); },
            10s),
        read_file(squid.access_log()));
    CHECK_MESSAGE(!squid.log_lines("GET " + rig.url_of(rel.file)).empty(),
                  read_file(squid.access_log()));
    CHECK(u.log().find("proxy for OpAMP and downloads") != std::string::npos);
}

TEST_CASE("proxy: OpAMP over wss:// and a signed https:// download, both by CONNECT") {
    if (!runnable()) return;
    Rig rig;
    Signed rel(rig);
    // The same rig, over TLS: the origin's certificate is checked through the tunnel.
    opamp::TlsMaterial tls = serve_artifacts_over_tls(rig);
    rig.server.reset();
    rig.server.emplace(rig.dir, std::vector<std::string>{"--commands", rig.commands, "--tls-cert",
                                                         tls.cert, "--tls-key", tls.key});
    Squid squid(rig.dir / "squid", {});
    rig.configure(rig.release("0.116.0"), [&](UpdaterConfig& c) {
        rel.require(c);
        c.endpoint = rig.server->wss_url();
        c.ca_file = tls.ca;
        c.allowed_download_prefixes = {rig.artifact_server->url("https", "")};
        c.proxy_url = squid.url();
    });
    Updater u(rig.config(), Launch::pid1, env({}));
    rig.settle(u);
    Status st = install(rig, u, rel.offer(rig.artifact_server->url("https", rel.file)));
    CHECK_MESSAGE(st.status == "Installed", st.error << "\nlog:\n" << u.log());
    check_settled(rig, "0.117.0");
    CHECK(u.stop() == 0);
    const std::string server = "CONNECT " + hostport(rig.server->port());
    const std::string artifacts = "CONNECT " + hostport(rig.artifact_server->port());
    CHECK_MESSAGE(wait_until([&] { return !squid.log_lines(server).empty(); }, 10s),
                  read_file(squid.access_log()));
    CHECK_MESSAGE(!squid.log_lines(artifacts).empty(), read_file(squid.access_log()));
    for (const std::string& line : squid.log_lines("CONNECT")) MESSAGE(line);
}

TEST_CASE("proxy: NO_PROXY sends the download direct; squid never sees it") {
    if (!runnable()) return;
    Site site;
    auto& [rig, rel, squid] = site;
    const std::string artifact_port = std::to_string(rig.artifact_server->port());
    Updater u(rig.config(), Launch::pid1,
              env({{"http_proxy", squid.url()},
                   {"no_proxy", "example.com, 127.0.0.1:" + artifact_port}}));
    rig.settle(u);
    Status st = install(rig, u, rel.offer());
    CHECK_MESSAGE(st.status == "Installed", st.error);
    check_settled(rig, "0.117.0");
    CHECK(u.stop() == 0);
    CHECK(wait_until(
        [&] { return !squid.log_lines("CONNECT " + hostport(rig.server->port())).empty(); }, 10s));
    CHECK_MESSAGE(squid.log_lines(":" + artifact_port + "/").empty(),
                  read_file(squid.access_log()));
}

TEST_CASE("proxy: basic auth, right and wrong") {
    if (!runnable()) return;
    Rig rig;
    Signed rel(rig);
    opamp::TlsMaterial tls = serve_artifacts_over_tls(rig);
    Squid squid(rig.dir / "squid", {"updater", "s3cret:pass", 0});
    const std::string creds = rig.dir / "proxy-credentials";
    rig.configure(rig.release("0.116.0"), [&](UpdaterConfig& c) {
        rel.require(c);
        c.ca_file = tls.ca;
        c.allowed_download_prefixes = {rig.artifact_server->url("https", "")};
        c.proxy_url = squid.url();
        c.no_proxy = {"127.0.0.1:" + std::to_string(rig.server->port())};  // OpAMP direct
        c.proxy_credentials_file = creds;
    });
    const Offer offer = rel.offer(rig.artifact_server->url("https", rel.file));

    SUBCASE("a wrong password: 407 in the status, nothing installed") {
        write_file(creds, "updater:wrong\n");
        Updater u(rig.config(), Launch::pid1, env({}));
        rig.settle(u);
        Status st = install(rig, u, offer);
        CHECK(st.status == "InstallFailed");
        CHECK_MESSAGE(st.error.find("proxy http://127.0.0.1:" + std::to_string(squid.port()) +
                                    " refused CONNECT " + hostport(rig.artifact_server->port()) +
                                    ": 407 Proxy Authentication Required") != std::string::npos,
                      st.error);
        MESSAGE("status: " << st.error);
        check_settled(rig, "0.116.0");
        // The password never reaches the log, right or wrong.
        CHECK(u.log().find("wrong") == std::string::npos);
        CHECK(u.stop() == 0);
    }
    SUBCASE("the right password, read from the file at use") {
        write_file(creds, "updater:wrong\n");
        Updater u(rig.config(), Launch::pid1, env({}));
        rig.settle(u);
        // The secret is rotated after the start: the next connection reads it.
        write_file(creds, "updater:s3cret:pass\n");
        Status st = install(rig, u, offer);
        CHECK_MESSAGE(st.status == "Installed", st.error << "\nlog:\n" << u.log());
        check_settled(rig, "0.117.0");
        CHECK(u.stop() == 0);
        CHECK(!squid.log_lines("updater").empty());
    }
}

TEST_CASE("proxy: squid killed mid-download; the download resumes through the restarted one") {
    if (!runnable()) return;
    Rig rig;
    // 8 MiB at 2 MB/s: seconds in flight, long enough to kill the proxy halfway.
    const std::string big = rig.tar_gz_padded(rig.release("0.117.0"), "big.tar.gz", 8);
    Signed rel(rig, big);
    Squid squid(rig.dir / "squid", {});
    rig.configure(rig.release("0.116.0"), [&](UpdaterConfig& c) {
        rel.require(c);
        c.proxy_url = squid.url();
    });
    Updater u(rig.config(), Launch::pid1, env({}));
    rig.settle(u);
    Offer o = rel.offer(rig.url_of(big, "rate=2000000"));
    size_t from = rig.mark();
    rig.offer(o);
    REQUIRE_MESSAGE(wait_until(
                        [&] {
                            for (const Status& s : rig.statuses(from)) {
                                if (s.percent && *s.percent >= 30) return true;
                            }
                            return false;
                        },
                        30s, 20ms),
                    rig.record());
    squid.kill();
    squid.start();
    auto st = rig.wait_status("0.117.0", "", from, 60s);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(st->status == "Installed", st->error << "\nlog:\n" << u.log());
    check_settled(rig, "0.117.0");
    // The second request asked for the rest only.
    const std::string stats = rig.artifact_server->stats();
    CHECK_MESSAGE(stats.find("bytes=") != std::string::npos, stats);
    CHECK(u.stop() == 0);
}
