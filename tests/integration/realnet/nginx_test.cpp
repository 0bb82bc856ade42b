// nginx (Debian's nginx-light) as the artifact server of the real binary as PID 1 (issue 25, item
// 2; docs/download.md, "Real servers"). Two vhosts on 127.0.0.1 serve the rig's artifact directory
// by several locations, each one way a real server differs from the project's own test server:
//   A /artifacts/    static files: nginx's own Range, If-Range and ETag
//   A /slow/         the same at a capped rate, for a cut mid-body
//   A /trickle/      the same at 1 MB/s
//   A /redirect/     302 to vhost B's /artifacts/ (an allowed prefix)
//   A /redirect-out/ 302 to vhost B's /other/ (not an allowed prefix)
//   A /gzip-static/  `gzip_static always`: the pre-gzipped file, Content-Encoding gzip, whatever
//                    the request accepts
//   A /gzip-on/      `gzip on` for every type: compresses only what the request accepts
//   A /chunked/      `sub_filter` over every type, which drops the length: chunked, no ETag
// The 200 MB signed install with a cut is MYR_NGINX_MB (default 200) in the slow suite.
#include <doctest/doctest.h>

#include <cstdlib>

#include "../update/update_rig.hpp"
#include "realnet_support.hpp"
#include "test_signer.hpp"

using namespace myr::test;
using namespace myr::test::upd;
using namespace myr::test::realnet;

namespace {

// The rig with nginx in front of its artifact directory; the config is not written yet.
struct NginxRig {
    NginxRig() : a(reserve_port()), b(reserve_port()) {
        const std::string arts = rig.artifacts + "/";
        const std::string pa = std::to_string(a), pb = std::to_string(b);
        const std::string servers =
            "  server {\n    listen 127.0.0.1:" + pa + ";\n    root " + rig.dir.path() + ";\n" +
            "    location /artifacts/ { }\n" + "    location /slow/ { alias " + arts +
            "; limit_rate 16m; }\n" + "    location /trickle/ { alias " + arts +
            "; limit_rate 1m; }\n" +
            "    location /redirect/ { rewrite ^/redirect/(.*)$ http://127.0.0.1:" + pb +
            "/artifacts/$1 redirect; }\n" +
            "    location /redirect-out/ { rewrite ^/redirect-out/(.*)$ http://127.0.0.1:" + pb +
            "/other/$1 redirect; }\n" + "    location /gzip-static/ { alias " + arts +
            "; gzip_static always; }\n" + "    location /gzip-on/ { alias " + arts +
            "; gzip on; gzip_types *; gzip_min_length 0; gzip_proxied any; }\n" +
            // sub_filter rewrites the body, so nginx drops Content-Length (and the ETag): an
            // HTTP/1.1 answer goes chunked. The pattern never occurs in an archive.
            "    location /chunked/ { alias " + arts +
            "; sub_filter_types *; sub_filter 'myriarch-never-in-a-body' ''; "
            "sub_filter_once off; }\n  }\n" +
            "  server {\n    listen 127.0.0.1:" + pb + ";\n    location /artifacts/ { alias " +
            arts + "; }\n    location /other/ { alias " + arts + "; }\n  }\n";
        nginx.emplace(rig.dir / "nginx", servers, std::vector<int>{a, b});
        rig.cfg.allowed_download_prefixes.clear();
        for (const char* p : {"artifacts", "slow", "trickle", "redirect", "redirect-out",
                              "gzip-static", "gzip-on", "chunked"}) {
            rig.cfg.allowed_download_prefixes.push_back(url(p, ""));
        }
        rig.cfg.allowed_download_prefixes.push_back("http://127.0.0.1:" + pb + "/artifacts/");
    }
    // A URL on vhost A.
    std::string url(const std::string& location, const std::string& file) const {
        return "http://127.0.0.1:" + std::to_string(a) + "/" + location + "/" + file;
    }
    Offer offer(const std::string& version, const std::string& location,
                const std::string& file) const {
        Offer o{version, file};
        o.url = url(location, file);
        return o;
    }
    // The updater on 0.116.0, settled; v117 and v118 are releases of 0.117.0 and 0.118.0.
    void start() {
        rig.configure(rig.release("0.116.0"));
        u.emplace(rig.config());
        rig.settle(*u);
        v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
        v118 = rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz");
    }
    Rig rig;
    int a, b;
    std::optional<Nginx> nginx;
    std::optional<Updater> u;
    std::string v117, v118;
};

Status installed(NginxRig& n, const Offer& o) {
    Status st = final_status(n.rig, *n.u, o);
    CHECK_MESSAGE(st.status == "Installed", st.error << "\naccess log:\n"
                                                     << n.nginx->log_text() << "\nlog:\n"
                                                     << n.u->log());
    check_settled(n.rig, o.version);
    return st;
}

// An offer that must fail with an error holding `why`, leaving `active` installed and intact.
Status refused(NginxRig& n, const Offer& o, const std::string& why, const std::string& active) {
    Status st = final_status(n.rig, *n.u, o);
    CHECK(st.status == "InstallFailed");
    CHECK_MESSAGE(st.error.find(why) != std::string::npos, st.error);
    check_settled(n.rig, active);
    return st;
}

uint64_t size_of(const std::string& path) {
    return std::stoull(run({"stat", "-c", "%s", path}).out);
}

}  // namespace

TEST_CASE("nginx: a redirect to another vhost's allowed prefix is followed; to another refused") {
    if (!can_run_pid1()) return;
    NginxRig n;
    n.start();
    installed(n, n.offer("0.117.0", "redirect", n.v117));
    const std::string log = n.nginx->log_text();
    CHECK_MESSAGE(log.find("GET /redirect/v117.tar.gz 302") != std::string::npos, log);
    CHECK_MESSAGE(log.find("GET /artifacts/v117.tar.gz 200") != std::string::npos, log);

    Status st = refused(n, n.offer("0.118.0", "redirect-out", n.v118),
                        "refused (rule prefix): not below any allowed download prefix", "0.117.0");
    CHECK_MESSAGE(st.error.find("/other/v118.tar.gz") != std::string::npos, st.error);
    CHECK(n.nginx->log_text().find("GET /other/") == std::string::npos);
    CHECK(n.u->stop() == 0);
}

TEST_CASE("nginx: a chunked body without Content-Length is installed, its hash checked") {
    if (!can_run_pid1()) return;
    NginxRig n;
    n.start();
    installed(n, n.offer("0.117.0", "chunked", n.v117));
    CHECK(n.nginx->log_text().find("GET /chunked/v117.tar.gz 200") != std::string::npos);
    // The same body under another hash: the bytes are compared, not the framing trusted.
    Offer wrong = n.offer("0.118.0", "chunked", n.v118);
    wrong.sha256 = n.rig.sha_of(n.v117);
    refused(n, wrong, "content hash mismatch", "0.117.0");
    CHECK(n.u->stop() == 0);
}

TEST_CASE("nginx: Content-Encoding gzip is refused by name; `gzip on` sends the identity") {
    if (!can_run_pid1()) return;
    NginxRig n;
    n.start();
    // gzip_static serves <file>.gz in place of <file> with Content-Encoding: gzip.
    REQUIRE(run({"sh", "-c",
                 "gzip -1 -c " + n.rig.artifacts + "/" + n.v117 + " >" + n.rig.artifacts + "/" +
                     n.v117 + ".gz"})
                .exit_code == 0);
    Status st = refused(n, n.offer("0.117.0", "gzip-static", n.v117),
                        "the server sent the body with Content-Encoding: gzip", "0.116.0");
    CHECK_MESSAGE(st.error.rfind("download: the server sent the body with Content-Encoding: gzip, "
                                 "although the request accepts only the identity",
                                 0) == 0,
                  st.error);
    // The refusal is deterministic (the same request gets the same answer), like a 404: that
    // release is quarantined. Another one over `gzip on`: the request says it accepts only the
    // identity, and nginx's gzip filter leaves the body alone.
    installed(n, n.offer("0.118.0", "gzip-on", n.v118));
    const std::string log = n.nginx->log_text();
    CHECK_MESSAGE(log.find("GET /gzip-on/v118.tar.gz 200") != std::string::npos, log);
    CHECK_MESSAGE(log.find("ae=\"identity\"") != std::string::npos, log);
    CHECK(n.u->stop() == 0);
}

// The file changes on the server while the download is cut (here: its mtime, which nginx's ETag
// holds): nginx answers the Range with If-Range holding the old ETag by a 200 with the whole
// file, and the downloader starts the part again from zero.
TEST_CASE("nginx: a file changed under a cut download is fetched again whole (If-Range, 200)") {
    if (!can_run_pid1()) return;
    NginxRig n;
    n.start();
    const std::string mid = n.rig.tar_gz_padded(n.rig.release("0.117.0"), "mid.tar.gz", 3);
    const std::string path = n.rig.artifacts + "/" + mid;
    const uint64_t size = size_of(path);
    const std::string part = n.rig.spool() + "/" + n.rig.sha_of(mid) + ".part";
    const size_t from = n.rig.mark();
    n.rig.offer(n.offer("0.117.0", "trickle", mid));
    REQUIRE_MESSAGE(
        wait_until([&] { return exists(part) && size_of(part) >= size / 3; }, 60s, 20ms),
        "the part never reached a third; log:\n"
            << n.u->log());
    n.nginx->stop();
    REQUIRE(run({"touch", "-d", "+1 hour", path}).exit_code == 0);
    n.nginx->start();
    auto st = n.rig.wait_status("0.117.0", "", from, 120s);
    REQUIRE_MESSAGE(st, n.rig.record() << "\nlog:\n" << n.u->log());
    const std::string log = n.nginx->log_text();
    CHECK_MESSAGE(st->status == "Installed", st->error << "\naccess log:\n" << log);
    check_settled(n.rig, "0.117.0");
    // A Range with If-Range answered 200: the whole file again.
    bool whole = false;
    for (const std::string& l : n.nginx->log()) {
        whole = whole || (l.starts_with("GET /trickle/" + mid + " 200 ") &&
                          l.find("range=\"bytes=") != std::string::npos);
    }
    CHECK_MESSAGE(whole, log);
    MESSAGE("the file changed during a cut; access log:\n" << log);
    CHECK_MESSAGE(log.find(" 206 ") == std::string::npos, log);
    CHECK(n.u->stop() == 0);
}

// A signed release of MYR_NGINX_MB MB served at 16 MB/s; nginx is stopped (fast shutdown, the
// connection cut mid-body) once the part holds a third of it and started again: the download goes
// on with Range and If-Range holding nginx's ETag, nginx answers 206, and the install completes.
TEST_CASE("nginx: a signed release resumes after a cut with nginx's own Range, If-Range, ETag") {
    if (!can_run_pid1()) return;
    if (std::string why = signer_unavailable(); !why.empty()) MYR_SKIP(why);
    const char* env = std::getenv("MYR_NGINX_MB");
    const int mb = env && std::atoi(env) > 0 ? std::atoi(env) : 200;
    NginxRig n;
    Rig& rig = n.rig;
    const std::string big = rig.tar_gz_padded(rig.release("0.117.0"), "big.tar.gz", mb);
    const uint64_t size = size_of(rig.artifacts + "/" + big);
    const std::string sig = rig.dir / "sigstore";
    sign_artifacts(sig, {rig.artifacts + "/" + big});
    rig.cfg.require_signature = true;
    rig.cfg.trusted_root_file = sig + "/trusted_root.json";
    rig.cfg.signer_subject = kSignerSubject;
    rig.cfg.signer_issuer = kSignerIssuer;
    n.start();
    Offer o = n.offer("0.117.0", "slow", big);
    o.signature_file = sig + "/cases/ok-v0.3/bundle.json";
    const size_t from = rig.mark();
    rig.offer(o);
    const std::string part = rig.spool() + "/" + rig.sha_of(big) + ".part";
    auto part_size = [&] { return exists(part) ? size_of(part) : uint64_t{0}; };
    REQUIRE_MESSAGE(wait_until([&] { return part_size() >= size / 3; }, 120s, 20ms),
                    "the part never reached a third; log:\n"
                        << n.u->log());
    n.nginx->stop();
    const uint64_t at_cut = part_size();
    n.nginx->start();
    auto st = rig.wait_status("0.117.0", "", from, 300s);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << n.u->log());
    CHECK_MESSAGE(st->status == "Installed", st->error << "\naccess log:\n"
                                                       << n.nginx->log_text() << "\nlog:\n"
                                                       << n.u->log());
    check_settled(rig, "0.117.0");
    const std::string log = n.nginx->log_text();
    MESSAGE("cut with " << at_cut << " of " << size << " bytes in the part; access log:\n" << log);
    // The request after the restart: a Range from the synced part, If-Range with nginx's ETag
    // (strong, "mtime-size" in hex), answered 206.
    CHECK_MESSAGE(log.find(" 206 ") != std::string::npos, log);
    CHECK_MESSAGE(log.find("if_range=\"\\x22") != std::string::npos, log);
    // nginx's fast shutdown does not log the request it cut. What that request delivered is
    // where the next one's Range starts (the downloader resumes from every byte it received);
    // each later request is logged with its `$bytes_sent`.
    const size_t at = log.find("range=\"bytes=");
    REQUIRE_MESSAGE(at != std::string::npos, log);
    const uint64_t first = std::stoull(log.substr(at + 13));
    CHECK(first >= at_cut);
    const uint64_t sent = first + n.nginx->bytes_sent("/slow/" + big);
    MESSAGE("transferred " << sent << " bytes (" << first << " before the cut, heads after it "
                           << "included) for a " << size << " byte artifact ("
                           << 100.0 * static_cast<double>(sent) / static_cast<double>(size)
                           << " %)");
    CHECK(sent * 10 <= size * 12);
    CHECK(n.u->stop() == 0);
}
