// Hostile release archives against the real binary as PID 1 (docs/stage.md, "Budgets"; issue 22,
// finding 2). Each archive is valid and correctly hashed — what a compromised release or signing
// identity could ship — and is built to make a reader hold too much: a zip of a million entries,
// a zip64 directory claiming 2^40 of them, a zip member and an xz block each declaring a 768 MiB
// LZMA dictionary, a zstd frame declaring a 128 MiB window, a long gzip stream, a tar of 512 KiB
// names. It is offered by the scripted OpAMP
// server and served by the artifact server (tests/integration/update/update_rig.hpp) while the
// test probes /healthz every 20 ms. What every case must leave true:
// - the install is refused at staging, with a reason, before the running collector is touched;
// - PID 1's peak RSS (VmHWM) stays under 64 MiB, and its RSS after the refusal near idle;
// - /healthz answers 200 within 100 ms throughout;
// - the volume, the supervisor's storage and the running supervisor are as they were.
// VmHWM is a lifetime peak, so every case starts its own updater.
//
// Each case prints one line of figures (`hostile-archive: …`); the closing notes quote them.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "../update/update_rig.hpp"
#include "hostile_support.hpp"

using namespace myr::test;
using namespace myr::test::upd;
using Clock = std::chrono::steady_clock;

namespace {

// The bound on PID 1's peak: idle it holds about 4 MiB (static build), a download's
// buffers a few more; an archive's reader is the work the budgets keep out of it.
constexpr long kPeakBoundKib = 64 * 1024;
// What may stay after a refusal, above the RSS before the offer (freed memory back near idle).
constexpr long kAfterSlackKib = 16 * 1024;
constexpr auto kProbeBound = std::chrono::milliseconds(100);

struct Case {
    const char* kind;    // tests/integration/update/make_archive.py's kind
    const char* reason;  // a part of the refusal's text
};

// The collector's health port, from the URL the rig configured ("http://127.0.0.1:N/").
int collector_port(const Rig& rig) {
    const std::string& url = rig.cfg.collector_health_url.value_or("");
    const size_t colon = url.rfind(':');
    return colon == std::string::npos ? 0 : std::stoi(url.substr(colon + 1));
}

// The archive of `c.kind`, offered to a fresh updater as 0.117.0 and refused within the budgets.
void refused_within_budgets(const Case& c) {
    Rig rig;
    const std::string seed = rig.release("0.116.0");
    const std::string name = rig.archive(c.kind, seed);
    const uint64_t size = std::stoull(run({"stat", "-c", "%s", rig.artifacts + "/" + name}).out);
    // Large enough that no size limit stops the download (the million-entry zip is 90 MB) and
    // that the unpacked limit (4 x) is beyond what the xz and zstd archives unpack to.
    rig.configure(seed, [](UpdaterConfig& cfg) { cfg.max_artifact_size = "256MiB"; });
    Updater u(rig.config());
    rig.settle(u);
    const pid_t pid = u.pid();
    const std::vector<pid_t> children = children_of(pid);
    const long idle_kib = status_kib(pid, "VmRSS");

    Prober probe(rig.health_port());
    const size_t from = rig.mark();
    const auto t0 = Clock::now();
    rig.offer({"0.117.0", name});
    const auto st = rig.wait_status("0.117.0", "", from, 240s);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
    // The clean-up that follows the report (staging, spool), then the memory it leaves.
    std::vector<std::string> broken;
    wait_until([&] { return (broken = rig.violations("0.116.0")).empty(); }, 20s, 50ms);
    wait_until([&] { return list_dir(rig.spool()).empty(); }, 20s, 50ms);
    // A quick refusal still gets a fair sample of probes around it.
    wait_until([&] { return probe.count() > 10; }, 10s, 20ms);
    const long peak_kib = status_kib(pid, "VmHWM");
    const long after_kib = status_kib(pid, "VmRSS");
    probe.stop();

    const std::string error = st ? st->error : "(no final status)";
    std::printf(
        "hostile-archive: %s size=%llu vmhwm=%ld KiB idle=%ld KiB after=%ld KiB probe_max=%lld ms "
        "probe_p99=%lld ms probes=%zu not_200=%d refused_in=%lld ms error=\"%s\"\n",
        c.kind, static_cast<unsigned long long>(size), peak_kib, idle_kib, after_kib,
        static_cast<long long>(probe.max().count()), static_cast<long long>(probe.p99().count()),
        probe.count(), probe.failures(), static_cast<long long>(took.count()), error.c_str());
    std::fflush(stdout);

    REQUIRE_MESSAGE(st, "no final status; record:\n" << rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(st->status == "InstallFailed", st->status << ": " << st->error);
    CHECK_MESSAGE(st->error.rfind("stage: ", 0) == 0, st->error);
    CHECK_MESSAGE(st->error.find(c.reason) != std::string::npos,
                  "want \"" << c.reason << "\" in: " << st->error);
    CHECK(st->has == "0.116.0");
    CHECK_MESSAGE(u.log_has(st->error.substr(0, 60)), "the log does not say why:\n" << u.log());

    CHECK_MESSAGE(peak_kib > 0, "no VmHWM for the updater");
    CHECK_MESSAGE(peak_kib < kPeakBoundKib, c.kind << ": PID 1's peak RSS " << peak_kib << " KiB");
    CHECK_MESSAGE(after_kib < idle_kib + kAfterSlackKib,
                  c.kind << ": RSS " << after_kib << " KiB after the refusal, " << idle_kib
                         << " KiB before the offer");
    CHECK_MESSAGE(probe.count() > 10, c.kind << ": only " << probe.count() << " probes");
    CHECK_MESSAGE(probe.failures() == 0, c.kind << ": " << probe.failures() << " probes not 200");
    CHECK_MESSAGE(probe.max() < kProbeBound,
                  c.kind << ": /healthz took " << probe.max().count() << " ms");

    // Nothing lost: the volume as it was, the same supervisor running its collector, storage
    // untouched, nothing left in the spool.
    CHECK_MESSAGE(broken.empty(), joined(broken));
    CHECK(wired::entries(rig.install + "/versions") == std::vector<std::string>{"0.116.0"});
    CHECK_MESSAGE(wait_until([&] { return children_of(pid) == children; }, 10s, 50ms),
                  "the supervisor was restarted; log:\n"
                      << u.log());
    CHECK(http_get("127.0.0.1", collector_port(rig), "/").status == 200);
    CHECK(rig.probe("/readyz") == 200);
    CHECK(rig.storage_unchanged());
    CHECK_MESSAGE(list_dir(rig.spool()).empty(), "spool: " << joined(list_dir(rig.spool())));
    CHECK(u.stop() == 0);
}

}  // namespace

TEST_CASE("hostile archive: a zip of a million empty entries (90 MB)") {
    if (!can_run_pid1()) return;
    refused_within_budgets({"zip-entries", "more than 100000 (limit max_members)"});
}

TEST_CASE("hostile archive: a zip64 directory that claims 2^40 entries") {
    if (!can_run_pid1()) return;
    refused_within_budgets({"zip64-count", "declares 1099511627776 entries"});
}

TEST_CASE("hostile archive: a zip member compressed with LZMA declaring a 768 MiB dictionary") {
    if (!can_run_pid1()) return;
    refused_within_budgets({"zip-lzma-dict", "compressed with method 14"});
}

TEST_CASE("hostile archive: a tar.xz whose block declares a 768 MiB dictionary") {
    if (!can_run_pid1()) return;
    refused_within_budgets({"xz-dict", "xz stream whose dictionary needs"});
}

TEST_CASE("hostile archive: a tar.zst of zstd --long=27 (a 128 MiB window)") {
    if (!can_run_pid1()) return;
    refused_within_budgets({"zstd-window", "zstd frame whose window is over the limit"});
}

TEST_CASE("hostile archive: a tar.gz of 320 MiB of zeros") {
    if (!can_run_pid1()) return;
    refused_within_budgets({"gz-zeros", "no member named otelcol-contrib"});
}

TEST_CASE("hostile archive: a tar.gz of 64 members with 512 KiB names, 262,143 levels deep") {
    if (!can_run_pid1()) return;
    refused_within_budgets({"deep-names", "no member named otelcol-contrib"});
}
