// The /metrics text (docs/metrics.md): the Prometheus text format 0.0.4 as promtool and
// Prometheus read it, label escaping, the histogram's cumulative buckets, and a size bound that
// holds for the largest values any series can take.
#include "metrics/registry.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

using namespace myr::metrics;

namespace {

Registry make() {
    return Registry({"idle", "checking", "downloading"});
}

bool has_line(const std::string& text, const std::string& line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("metrics: every family has HELP and TYPE before its samples, every label from 0") {
    Registry r = make();
    const std::string& text = r.render({}, 1'800'000'000);
    CHECK(has_line(text, "# TYPE myriarch_update_attempts_total counter"));
    for (const char* v : {"installed", "failed", "rolled_back", "quarantined", "refused"}) {
        CHECK(
            has_line(text, std::string("myriarch_update_attempts_total{result=\"") + v + "\"} 0"));
    }
    for (const char* v : {"verify", "preflight", "health", "crashloop", "trial", "recovery"}) {
        CHECK(has_line(text, std::string("myriarch_rollbacks_total{reason=\"") + v + "\"} 0"));
    }
    CHECK(has_line(text, "myriarch_update_state{state=\"idle\"} 1"));
    CHECK(has_line(text, "myriarch_update_state{state=\"checking\"} 0"));
    CHECK(has_line(text, "myriarch_opamp_connected 0"));
    CHECK(has_line(text, "myriarch_update_last_success_timestamp_seconds 0"));
    // Unknown values are left out rather than made up.
    CHECK(text.find("myriarch_collector_info") == std::string::npos);
    CHECK(text.find("myriarch_trusted_root_age_seconds") == std::string::npos);
    CHECK(text.find("myriarch_volume_free_bytes") == std::string::npos);
    CHECK(text.find("process_") == std::string::npos);
    // Each sample's family was announced (TYPE) before it, and the text ends with a newline.
    std::istringstream in(text);
    std::string line;
    std::vector<std::string> typed;
    while (std::getline(in, line)) {
        if (line.rfind("# TYPE ", 0) == 0) {
            typed.push_back(line.substr(7, line.find(' ', 7) - 7));
            continue;
        }
        if (line.rfind("# HELP ", 0) == 0) continue;
        REQUIRE(!typed.empty());
        CAPTURE(line);
        CHECK(line.rfind(typed.back(), 0) == 0);
    }
    CHECK(text.back() == '\n');
}

TEST_CASE("metrics: counting sets the timestamps and the one-hot state") {
    Registry r = make();
    r.attempt(AttemptResult::installed, 100);
    r.attempt(AttemptResult::rolled_back, 200);
    r.attempt(AttemptResult::refused, 300);  // an offer turned down is no failure
    r.rollback(RollbackReason::health);
    r.state(2);
    r.collector_version("0.117.0");
    r.trusted_root_since(1'000);
    Live live;
    live.volume_free_bytes = 123456789012;
    live.opamp_connected = true;
    live.child_restarts = 3;
    const std::string& text = r.render(live, 1'500);
    CHECK(has_line(text, "myriarch_update_attempts_total{result=\"installed\"} 1"));
    CHECK(has_line(text, "myriarch_update_attempts_total{result=\"rolled_back\"} 1"));
    CHECK(has_line(text, "myriarch_update_attempts_total{result=\"refused\"} 1"));
    CHECK(has_line(text, "myriarch_rollbacks_total{reason=\"health\"} 1"));
    CHECK(has_line(text, "myriarch_update_last_success_timestamp_seconds 100"));
    CHECK(has_line(text, "myriarch_update_last_failure_timestamp_seconds 200"));
    CHECK(has_line(text, "myriarch_update_state{state=\"idle\"} 0"));
    CHECK(has_line(text, "myriarch_update_state{state=\"downloading\"} 1"));
    CHECK(has_line(text, "myriarch_collector_info{version=\"0.117.0\"} 1"));
    CHECK(has_line(text, "myriarch_trusted_root_age_seconds 500"));
    CHECK(has_line(text, "myriarch_volume_free_bytes 123456789012"));
    CHECK(has_line(text, "myriarch_child_restarts_total 3"));
    CHECK(has_line(text, "myriarch_opamp_connected 1"));
}

TEST_CASE("metrics: the histogram's buckets are cumulative, with +Inf, _sum and _count") {
    Registry r = make();
    r.downloaded(10, 0.5);
    r.downloaded(20, 10);
    r.downloaded(30, 5000);  // beyond the last bucket: only in +Inf
    const std::string& text = r.render({}, 0);
    const char* b = "myriarch_download_duration_seconds_bucket";
    CHECK(has_line(text, "# TYPE myriarch_download_duration_seconds histogram"));
    CHECK(has_line(text, std::string(b) + "{le=\"1\"} 1"));
    CHECK(has_line(text, std::string(b) + "{le=\"5\"} 1"));
    CHECK(has_line(text, std::string(b) + "{le=\"15\"} 2"));
    CHECK(has_line(text, std::string(b) + "{le=\"3600\"} 2"));
    CHECK(has_line(text, std::string(b) + "{le=\"+Inf\"} 3"));
    CHECK(has_line(text, "myriarch_download_duration_seconds_sum 5010.5"));
    CHECK(has_line(text, "myriarch_download_duration_seconds_count 3"));
    CHECK(has_line(text, "myriarch_download_bytes_total 60"));
}

TEST_CASE("metrics: label values are escaped; a version that is not canonical is no label") {
    std::string out;
    append_label_value(out, "a\"b\\c\nd");
    CHECK(out == "a\\\"b\\\\c\\nd");
    Registry r = make();
    for (const char* v : {"v1.0.0", "1.0.0\"} 1\nevil 1", "not a version", "../1.0.0"}) {
        CAPTURE(v);
        r.collector_version(v);
        CHECK(has_line(r.render({}, 0), "myriarch_collector_info{version=\"invalid\"} 1"));
    }
    r.collector_version("1.0.0-rc.1+build.5");
    CHECK(has_line(r.render({}, 0), "myriarch_collector_info{version=\"1.0.0-rc.1+build.5\"} 1"));
    r.collector_version("1.0.0-" + std::string(200, 'a'));
    CHECK(has_line(r.render({}, 0), "myriarch_collector_info{version=\"invalid\"} 1"));
}

TEST_CASE("metrics: values print as Prometheus reads them") {
    auto text = [](double v) {
        std::string s;
        append_value(s, v);
        return s;
    };
    CHECK(text(0) == "0");
    CHECK(text(42) == "42");
    CHECK(text(-1) == "-1");
    CHECK(text(0.25) == "0.25");
    CHECK(text(1e300) == "1e+300");
    CHECK(text(0.1) == "0.1");
    CHECK(text(1765142400.125) == "1765142400.125");
    CHECK(text(2.5e-7) == "2.5e-07");
    // Not shortest in 15 digits: the text must still read back as the same double.
    for (double v : {1.0 / 3, 0.1 + 0.2, 5e-324, 1.7976931348623157e308, -2.0 / 3}) {
        CHECK_MESSAGE(std::strtod(text(v).c_str(), nullptr) == v, text(v));
    }
    CHECK(text(std::numeric_limits<double>::infinity()) == "+Inf");
    CHECK(text(std::numeric_limits<double>::quiet_NaN()) == "NaN");
}

TEST_CASE("metrics: the largest text stays within kMaxRenderBytes and the buffer is not regrown") {
    // The installer's 15 states, each as long as the longest one.
    std::vector<std::string> states(15, "health-checking");
    Registry r(states);
    const double big = -1.2345678901234567e-300;  // the longest a double prints
    for (int i = 0; i < 5; ++i) r.attempt(static_cast<AttemptResult>(i), big);
    r.collector_version("1.0.0-" + std::string(122, 'a'));  // version::kMaxLength
    r.trusted_root_since(big);
    r.downloaded(std::numeric_limits<uint64_t>::max() / 2, 1e300);
    Live live;
    live.volume_free_bytes = std::numeric_limits<uint64_t>::max();
    live.child_restarts = std::numeric_limits<uint64_t>::max();
    live.opamp_connected = true;
    live.process = {big, big, big, big, big, big};
    const std::string& first = r.render(live, big);
    const size_t capacity = first.capacity();
    const size_t size = first.size();
    MESSAGE("largest render: " << size << " bytes of " << kMaxRenderBytes);
    CHECK(size <= kMaxRenderBytes);
    CHECK(first.find("version=\"invalid\"") == std::string::npos);
    for (int i = 0; i < 100; ++i) r.render(live, big);
    CHECK(r.render(live, big).capacity() == capacity);
}
