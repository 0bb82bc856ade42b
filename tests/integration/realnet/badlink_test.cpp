// A bad edge link (issue 25, item 3; docs/download.md, "Real servers"): Toxiproxy (built by
// tests/toxiproxy/build.sh) between the real binary as PID 1 and its servers. The artifact link
// (to nginx) adds 300 ms and caps the bandwidth at 1 Mbit/s; the OpAMP link adds 300 ms. While a
// signed release of MYR_BADLINK_MB MiB (default 20) downloads, the link is cut three times: a
// reset (`reset_peer`) at a quarter, a stall of 5 s that ends in a close (`timeout`) at half, and a
// cut after 1 MB more (`limit_data`) at three quarters. The release must install, /healthz must
// answer fast throughout (the loop never blocks), and the bytes that crossed the link stay within
// 1.2 × the artifact. The figures (install time against the link's floor, size / bandwidth) are
// what tests/bench/badlink.sh reports. About 3 minutes: alone in suite `slow`.
#include <doctest/doctest.h>

#include <cstdlib>

#include "../update/update_rig.hpp"
#include "realnet_support.hpp"
#include "test_signer.hpp"

using namespace myr::test;
using namespace myr::test::upd;
using namespace myr::test::realnet;

namespace {

constexpr double kLinkBytesPerSecond = 125000;  // 1 Mbit/s: Toxiproxy's bandwidth rate is KB/s

uint64_t size_of(const std::string& path) {
    return exists(path) ? std::stoull(run({"stat", "-c", "%s", path}).out) : 0;
}

// Whether a TCP connection to 127.0.0.1:`port` is established (/proc/net/tcp: the updater runs
// in a PID namespace of its own, not a network namespace).
bool established_to(int port) {
    char want[8];
    std::snprintf(want, sizeof want, ":%04X", port);
    std::istringstream in(read_file("/proc/net/tcp"));
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string slot, local, remote, state;
        if (f >> slot >> local >> remote >> state && remote.ends_with(want) && state == "01") {
            return true;
        }
    }
    return false;
}

// Seconds since midnight of the updater's first log line holding `needle` (its `ts=` field,
// 2026-12-03T13:24:42.740Z), or -1.
double log_time(const std::string& log, const std::string& needle) {
    const size_t at = log.find(needle);
    if (at == std::string::npos) return -1;
    const size_t line = log.rfind('\n', at) + 1;  // npos + 1 == 0: the first line
    const size_t t = log.find('T', log.find("ts=", line));
    if (t == std::string::npos || t > at) return -1;
    return std::stod(log.substr(t + 1, 2)) * 3600 + std::stod(log.substr(t + 4, 2)) * 60 +
           std::stod(log.substr(t + 7, 6));
}

int requests_for(const Nginx& nginx, const std::string& file) {
    int n = 0;
    for (const std::string& l : nginx.log()) n += l.find(file) != std::string::npos;
    return n;
}

}  // namespace

TEST_CASE("bad link: a signed release over 300 ms, 1 Mbit/s, two cuts and a stall installs") {
    if (!can_run_pid1()) return;
    if (std::string why = signer_unavailable(); !why.empty()) MYR_SKIP(why);
    std::string why;
    const std::string bin = Toxiproxy::binary(&why);
    if (bin.empty()) MYR_SKIP(why);
    const char* env = std::getenv("MYR_BADLINK_MB");
    const int mb = env && std::atoi(env) > 0 ? std::atoi(env) : 20;

    Rig rig;
    const int web = reserve_port();
    Nginx nginx(rig.dir / "nginx",
                "  server {\n    listen 127.0.0.1:" + std::to_string(web) + ";\n    root " +
                    rig.dir.path() + ";\n    location /artifacts/ { }\n  }\n",
                {web});
    Toxiproxy link(bin);
    const int art = link.proxy("artifacts", web);
    const int fleet = link.proxy("opamp", rig.server->port());
    link.add("artifacts", "latency", "latency", R"("latency":300,"jitter":0)");
    link.add("artifacts", "bandwidth", "bandwidth", R"("rate":125)");
    link.add("opamp", "latency", "latency", R"("latency":300,"jitter":0)");

    const std::string big = rig.tar_gz_padded(rig.release("0.117.0"), "big.tar.gz", mb);
    const uint64_t size = size_of(rig.artifacts + "/" + big);
    const std::string sig = rig.dir / "sigstore";
    sign_artifacts(sig, {rig.artifacts + "/" + big});
    rig.cfg.endpoint = "ws://127.0.0.1:" + std::to_string(fleet) + "/v1/opamp";
    const std::string base = "http://127.0.0.1:" + std::to_string(art) + "/artifacts/";
    rig.cfg.allowed_download_prefixes = {base};
    rig.cfg.require_signature = true;
    rig.cfg.trusted_root_file = sig + "/trusted_root.json";
    rig.cfg.signer_subject = kSignerSubject;
    rig.cfg.signer_issuer = kSignerIssuer;
    rig.cfg.retry_for = "10m";  // the installer fetches again (resuming) should the tries run out
    rig.configure(rig.release("0.116.0"));
    Updater u(rig.config());
    rig.settle(u);

    Offer o{"0.117.0", big};
    o.url = base + big;
    o.signature_file = sig + "/cases/ok-v0.3/bundle.json";
    const std::string part = rig.spool() + "/" + rig.sha_of(big) + ".part";
    const size_t from = rig.mark();
    const auto t0 = std::chrono::steady_clock::now();
    rig.offer(o);

    Latencies probes;
    auto probe = [&] { probes.sample("127.0.0.1", rig.health_port(), "/healthz"); };
    // Each fault: added once the part holds `fraction` of the artifact, removed as soon as the
    // updater's connection through the link is gone (the retry comes after at least half a
    // second of backoff, so it meets a clean link). A fault with a `hold` is removed after that
    // long instead, which is what ends it: Toxiproxy's `timeout` toxic with timeout 0 drops the
    // data until it is removed and closes the connection then. (With a timeout of its own, it
    // closes only that long after the last chunk came in: behind the bandwidth cap, that is after
    // the whole rest of the body has trickled in and been dropped.)
    auto fault = [&](double fraction, const std::string& type, const std::string& attributes,
                     Millis hold = Millis(0)) {
        const auto want = static_cast<uint64_t>(fraction * static_cast<double>(size));
        REQUIRE_MESSAGE(wait_until(
                            [&] {
                                probe();
                                return size_of(part) >= want && established_to(art);
                            },
                            600s, 100ms),
                        "the part never reached " << want << " bytes; log:\n"
                                                  << u.log());
        link.add("artifacts", type, type, attributes);
        const auto added = std::chrono::steady_clock::now();
        if (hold > Millis(0)) {
            wait_until(
                [&] {
                    probe();
                    return std::chrono::steady_clock::now() - added >= hold;
                },
                hold + 10s, 100ms);
            link.remove("artifacts", type);
        }
        REQUIRE_MESSAGE(wait_until([&] { return !established_to(art); }, 120s, 10ms),
                        type << " never ended the connection; log:\n"
                             << u.log());
        const std::chrono::duration<double> at = std::chrono::steady_clock::now() - t0;
        if (hold == Millis(0)) link.remove("artifacts", type);
        MESSAGE(type << " cut the link at " << size_of(part) << " of " << size << " bytes, "
                     << at.count() << " s after the offer");
    };
    // MYR_BADLINK_CLEAN=1 (tests/bench/badlink.sh): the slow link without cuts, the baseline.
    const char* clean = std::getenv("MYR_BADLINK_CLEAN");
    if (clean == nullptr || std::string(clean) != "1") {
        fault(0.25, "reset_peer", R"("timeout":0)");
        fault(0.5, "timeout", R"("timeout":0)", 5s);
        fault(0.75, "limit_data", R"("bytes":1000000)");
    }
    std::optional<Status> st;
    REQUIRE_MESSAGE(wait_until(
                        [&] {
                            probe();
                            return (st = rig.wait_status("0.117.0", "", from, 0s)).has_value();
                        },
                        900s, 100ms),
                    rig.record() << "\nlog:\n"
                                 << u.log());
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
    CHECK_MESSAGE(st->status == "Installed", st->error << "\naccess log:\n"
                                                       << nginx.log_text() << "\nlog:\n"
                                                       << u.log());
    check_settled(rig, "0.117.0");

    const double floor = static_cast<double>(size) / kLinkBytesPerSecond;
    const double crossed = link.sent_bytes("artifacts");
    MESSAGE("bad link: " << size << " bytes installed in " << took.count()
                         << " s; the link's floor " << floor << " s (size / 1 Mbit/s); ratio "
                         << took.count() / floor << "; " << static_cast<uint64_t>(crossed)
                         << " bytes crossed the link ("
                         << 100.0 * crossed / static_cast<double>(size) << " % of the artifact); "
                         << requests_for(nginx, big) << " requests; /healthz " << probes.summary());
    // Where the time went: the download (from the state `downloading` to `verifying`) against
    // the floor, and the install after it.
    const std::string ulog = u.log();
    const double downloading = log_time(ulog, "state=downloading from=checking");
    const double verifying = log_time(ulog, "state=verifying from=downloading");
    const double committed = log_time(ulog, "state=committed");
    MESSAGE("bad link: the download took " << verifying - downloading << " s ("
                                           << static_cast<double>(size) / (verifying - downloading)
                                           << " B/s on average), the install after it "
                                           << committed - verifying << " s");
    MESSAGE("access log:\n" << nginx.log_text());
    CHECK(crossed > 0);
    CHECK(crossed <= 1.2 * static_cast<double>(size));
    CHECK(probes.failed() == 0);
    CHECK(probes.percentile(99) < 100.0);
    CHECK(u.stop() == 0);
}
