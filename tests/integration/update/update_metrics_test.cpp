// /metrics through the real binary as PID 1 (docs/metrics.md): what an install, a rollback and
// the offers Checking turns down do to the counters, the one-hot state and the collector's
// version, scraped from the probe listener as Prometheus would; and container.metrics: false.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

// The samples of one scrape, by series as written ("name{label=\"v\"}").
using Samples = std::map<std::string, double>;

Samples scrape(const Rig& rig) {
    HttpResponse r = http_get("127.0.0.1", rig.health_port(), "/metrics", 5s);
    REQUIRE_MESSAGE(r.status == 200, "GET /metrics: " << r.status << " " << r.error);
    Samples out;
    std::istringstream in(r.body);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        size_t sp = line.rfind(' ');
        REQUIRE_MESSAGE(sp != std::string::npos, "sample without a value: " << line);
        out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
    }
    return out;
}

double value(const Samples& s, const std::string& series) {
    auto it = s.find(series);
    return it == s.end() ? -1 : it->second;
}

std::string attempts(const std::string& result) {
    return "myriarch_update_attempts_total{result=\"" + result + "\"}";
}
std::string rollbacks(const std::string& reason) {
    return "myriarch_rollbacks_total{reason=\"" + reason + "\"}";
}
std::string state(const std::string& name) {
    return "myriarch_update_state{state=\"" + name + "\"}";
}

// Waits until the scrape shows the installer idle again (the clean-up after the report ran).
Samples idle_scrape(const Rig& rig, const Updater& u) {
    Samples s;
    REQUIRE_MESSAGE(wait_until([&] { return value(s = scrape(rig), state("idle")) == 1; }, 20s,
                               50ms),
                    "never idle; log:\n"
                        << u.log());
    return s;
}

}  // namespace

TEST_CASE("metrics: an install, a rollback and refused offers as Prometheus scrapes them") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.release("0.116.0"));
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    const std::string bad = rig.tar_gz(rig.release("0.118.0", "health=fail"), "bad.tar.gz");
    {
        Updater u(rig.config());
        rig.settle(u);

        // Every label value from the first scrape on, at 0: increase() works at once.
        Samples s = scrape(rig);
        for (const char* r : {"installed", "failed", "rolled_back", "quarantined", "refused"}) {
            CAPTURE(r);
            CHECK(value(s, attempts(r)) == 0);
        }
        for (const char* r : {"verify", "preflight", "health", "crashloop", "trial", "recovery"}) {
            CAPTURE(r);
            CHECK(value(s, rollbacks(r)) == 0);
        }
        CHECK(value(s, "myriarch_collector_info{version=\"0.116.0\"}") == 1);
        CHECK(value(s, state("idle")) == 1);
        CHECK(value(s, state("downloading")) == 0);
        CHECK(value(s, "myriarch_opamp_connected") == 1);
        CHECK(value(s, "myriarch_volume_free_bytes") > 0);
        CHECK(value(s, "process_resident_memory_bytes") > 0);
        CHECK(value(s, "process_open_fds") > 0);
        CHECK(value(s, "myriarch_download_duration_seconds_count") == 0);

        // An install: installed, the new version, its download counted.
        Status st = final_status(rig, u, {"0.117.0", v117});
        CHECK_MESSAGE(st.status == "Installed", st.error);
        s = idle_scrape(rig, u);
        CHECK(value(s, attempts("installed")) == 1);
        CHECK(value(s, "myriarch_collector_info{version=\"0.117.0\"}") == 1);
        CHECK(value(s, "myriarch_collector_info{version=\"0.116.0\"}") == -1);
        CHECK(value(s, "myriarch_update_last_success_timestamp_seconds") > 1.7e9);
        CHECK(value(s, "myriarch_update_last_failure_timestamp_seconds") == 0);
        CHECK(value(s, "myriarch_download_bytes_total") ==
              static_cast<double>(std::filesystem::file_size(rig.artifacts + "/" + v117)));
        CHECK(value(s, "myriarch_download_duration_seconds_count") == 1);
        CHECK(value(s, "myriarch_download_duration_seconds_bucket{le=\"+Inf\"}") == 1);

        // A release that fails its health check: swapped in, then 0.117.0 restored.
        st = final_status(rig, u, {"0.118.0", bad});
        CHECK(st.status == "InstallFailed");
        s = idle_scrape(rig, u);
        CHECK(value(s, attempts("rolled_back")) == 1);
        CHECK(value(s, rollbacks("health")) == 1);
        CHECK(value(s, rollbacks("crashloop")) == 0);
        CHECK(value(s, attempts("installed")) == 1);
        CHECK(value(s, "myriarch_collector_info{version=\"0.117.0\"}") == 1);
        CHECK(value(s, "myriarch_update_last_failure_timestamp_seconds") > 1.7e9);
        CHECK(u.stop() == 0);
    }
    // After a restart (the counters start again at 0) the same package is quarantined at
    // Checking, and a version that does not parse is refused: neither is an install that failed.
    Updater u(rig.config());
    rig.settle(u);
    Status st = final_status(rig, u, {"0.118.0", bad});
    CHECK(st.status == "InstallFailed");
    st = final_status(rig, u, {"banana", v117});
    CHECK(st.status == "InstallFailed");
    Samples s = idle_scrape(rig, u);
    CHECK(value(s, attempts("quarantined")) == 1);
    CHECK(value(s, attempts("refused")) == 1);
    CHECK(value(s, attempts("failed")) == 0);
    CHECK(value(s, attempts("rolled_back")) == 0);
    CHECK(value(s, "myriarch_update_last_failure_timestamp_seconds") == 0);
    CHECK(value(s, "myriarch_collector_info{version=\"0.117.0\"}") == 1);

    // Refused before the swap: a digest that is not the offered one (verify), a validate that
    // fails (preflight). Failed installs whose new version did not stay.
    Offer wrong{"0.119.0", v117};
    wrong.sha256 = std::string(64, '0');
    st = final_status(rig, u, wrong);
    CHECK(st.status == "InstallFailed");
    const std::string invalid =
        rig.tar_gz(rig.release("0.120.0", "validate=fail"), "invalid.tar.gz");
    st = final_status(rig, u, {"0.120.0", invalid});
    CHECK(st.status == "InstallFailed");
    s = idle_scrape(rig, u);
    CHECK(value(s, attempts("failed")) == 2);
    CHECK(value(s, rollbacks("verify")) == 1);
    CHECK(value(s, rollbacks("preflight")) == 1);
    CHECK(value(s, attempts("rolled_back")) == 0);
    CHECK(value(s, "myriarch_update_last_failure_timestamp_seconds") > 1.7e9);
    CHECK(value(s, "myriarch_collector_info{version=\"0.117.0\"}") == 1);
    CHECK(u.stop() == 0);
}

TEST_CASE("metrics: container.metrics false answers 404 on /metrics and keeps the probes") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.release("0.116.0"), [](UpdaterConfig& c) { c.metrics = false; });
    Updater u(rig.config());
    rig.settle(u);
    HttpResponse r = http_get("127.0.0.1", rig.health_port(), "/metrics", 5s);
    CHECK(r.status == 404);
    CHECK_MESSAGE(r.body.find("container.metrics") != std::string::npos, r.body);
    CHECK(rig.probe("/healthz") == 200);
    CHECK(rig.probe("/readyz") == 200);
    CHECK(u.stop() == 0);
}
