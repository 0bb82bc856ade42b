// /metrics as a real Prometheus sees it (docs/container-mode.md, "Watching a fleet"): the binary as
// PID 1 installs a release and rolls another back while a Prometheus started by the test
// (tests/support/prometheus.hpp) scrapes its probe listener every second and evaluates the example
// alerting rules of packaging/prometheus/alerts.yaml. promtool lints each /metrics answer. The
// tools come from Debian's prometheus package (scripts/deps.sh); without them the case skips, or
// fails under MYR_TEST_STRICT=1.
#include <doctest/doctest.h>

#include <cmath>
#include <ctime>
#include <regex>
#include <set>
#include <sstream>

#include "prometheus.hpp"
#include "test_signer.hpp"
#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

const char* const kAttemptResults[] = {"installed", "failed", "rolled_back", "quarantined",
                                       "refused"};
const char* const kRollbackReasons[] = {"verify",    "preflight", "health",
                                        "crashloop", "trial",     "recovery"};

// The updater's /metrics now, linted by `promtool check metrics` (exit 0 and nothing said).
std::string scrape_and_lint(const Rig& rig, const std::string& when) {
    HttpResponse m = http_get("127.0.0.1", rig.health_port(), "/metrics");
    REQUIRE_MESSAGE(m.status == 200,
                    when << ": GET /metrics: " << m.status << " " << m.error << " " << m.body);
    const std::string file = rig.dir / "metrics.txt";
    write_file(file, m.body);
    SpawnOptions in;
    in.stdin_file = file;
    RunResult lint = run({promtool_bin(), "check", "metrics"}, 30s, in);
    CHECK_MESSAGE((lint.exit_code == 0 && lint.out.empty() && lint.err.empty()),
                  when << ": promtool check metrics (exit " << lint.exit_code << "):\n"
                       << lint.out << lint.err << "\n/metrics:\n"
                       << m.body);
    return m.body;
}

// The metric names alerts.yaml uses: each must be one the updater exposes.
std::set<std::string> alert_metric_names() {
    const std::string rules = read_file(source_dir() + "/packaging/prometheus/alerts.yaml");
    std::set<std::string> names;
    const std::regex name("myriarch_[a-z_]+");
    for (auto it = std::sregex_iterator(rules.begin(), rules.end(), name);
         it != std::sregex_iterator(); ++it) {
        names.insert(it->str());
    }
    return names;
}

// The label values alerts.yaml matches in its expressions (`state!~"idle|trial"` gives
// state="idle" and state="trial"): each must be one the updater exposes, or the rule matches
// nothing, or everything.
std::set<std::string> alert_label_values() {
    std::istringstream rules(read_file(source_dir() + "/packaging/prometheus/alerts.yaml"));
    std::set<std::string> out;
    const std::regex matcher("([a-z_]+)(=~|!~|!=|=)\"([^\"]*)\"");
    for (std::string line; std::getline(rules, line);) {
        if (line.find("expr:") == std::string::npos) continue;
        for (auto it = std::sregex_iterator(line.begin(), line.end(), matcher);
             it != std::sregex_iterator(); ++it) {
            std::istringstream values((*it)[3].str());
            for (std::string v; std::getline(values, v, '|');) {
                out.insert((*it)[1].str() + "=\"" + v + "\"");
            }
        }
    }
    return out;
}

// A trusted root for myriarch_trusted_root_age_seconds: the Sigstore conformance suite's
// public-good root with a log key added on 2025-09-23, its newest validity start (the fuzz corpus
// holds it behind a bundle). Signatures stay optional: the offers are unsigned.
constexpr double kRootNewestStart = 1758585600;  // 2025-09-23T00:00:00Z
void use_trusted_root(Rig& rig, UpdaterConfig& c) {
    const std::string corpus = read_file(
        source_dir() +
        "/tests/fuzz/corpus/sigstore/trust-root-tlog-validity-end-inclusive-with-root.json");
    const std::string separator = "\n--trusted-root--\n";
    const size_t at = corpus.find(separator);
    REQUIRE(at != std::string::npos);
    c.trusted_root_file = rig.dir / "trusted_root.json";
    write_file(c.trusted_root_file, corpus.substr(at + separator.size()));
    c.require_signature = false;
    c.signer_subject = kSignerSubject;
    c.signer_issuer = kSignerIssuer;
}

// `increase(<counter>[5m])` by `label`: one sample per label value (rounded: increase()
// extrapolates to the window's edges, so one step reads as slightly more than 1).
std::map<std::string, long> increases(const Prometheus& prom, const std::string& counter,
                                      const std::string& label) {
    std::map<std::string, long> out;
    auto v = prom.query("increase(" + counter + "[5m])");
    REQUIRE_MESSAGE(v, prom.error());
    for (const PromSample& s : *v) out[s.labels.at(label)] = std::lround(s.value);
    return out;
}

}  // namespace

TEST_CASE(
    "metrics: a real Prometheus scrapes an install and a rollback; the rollback alert fires") {
    if (!can_run_pid1()) return;
    if (prometheus_bin().empty() || promtool_bin().empty()) {
        MYR_SKIP(
            "prometheus or promtool is not installed (Debian package prometheus, "
            "MYR_PROMETHEUS_PKGS in scripts/deps.sh)");
    }
    Rig rig;
    rig.configure(rig.release("0.116.0"), [&](UpdaterConfig& c) { use_trusted_root(rig, c); });
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    Updater u(rig.config());
    rig.settle(u);
    const std::string target = "127.0.0.1:" + std::to_string(rig.health_port());
    Prometheus prom({target}, {source_dir() + "/packaging/prometheus/alerts.yaml"});

    // A scrape with every counter at 0 comes first: increase() counts the install and the
    // rollback from it, as it would for a pod that has just started.
    REQUIRE_MESSAGE(prom.wait_value("up{job=\"myriarch\"}", 1),
                    "Prometheus never scraped " << target << " " << prom.error() << "\n"
                                                << prom.targets() << prom.log());
    REQUIRE_MESSAGE(prom.wait_value("myriarch_rollbacks_total{reason=\"health\"}", 0),
                    prom.error() << "\n/metrics:\n"
                                 << http_get("127.0.0.1", rig.health_port(), "/metrics").body);
    const std::string first = scrape_and_lint(rig, "after the start");
    for (const std::string& name : alert_metric_names()) {
        CHECK_MESSAGE(first.find("# TYPE " + name + " ") != std::string::npos,
                      "alerts.yaml uses " << name << ", which /metrics does not expose");
    }
    const std::set<std::string> matched = alert_label_values();
    CHECK(matched.size() >= 4);
    for (const std::string& label : matched) {
        CHECK_MESSAGE(first.find("{" + label + "}") != std::string::npos,
                      "alerts.yaml matches " << label << ", which /metrics does not expose");
    }

    Status st = final_status(rig, u, {"0.117.0", v117});
    CHECK_MESSAGE(st.status == "Installed", st.error);
    check_settled(rig, "0.117.0");
    scrape_and_lint(rig, "after the install");

    const std::string bad = rig.tar_gz(rig.release("0.118.0", "health=fail"), "v118-bad.tar.gz");
    st = final_status(rig, u, {"0.118.0", bad});
    CHECK(st.status == "InstallFailed");
    CHECK_MESSAGE(st.error.find("; rolled back to 0.117.0") != std::string::npos, st.error);
    check_settled(rig, "0.117.0");
    const std::string last = scrape_and_lint(rig, "after the rollback");

    // Wait for the scrape that holds the rollback, then read the rest from the same store.
    REQUIRE_MESSAGE(prom.wait_value("myriarch_rollbacks_total{reason=\"health\"}", 1),
                    prom.error() << "\n/metrics:\n"
                                 << last);
    REQUIRE(prom.wait_value("myriarch_update_attempts_total{result=\"rolled_back\"}", 1));
    std::map<std::string, long> attempts =
        increases(prom, "myriarch_update_attempts_total", "result");
    std::map<std::string, long> rollbacks = increases(prom, "myriarch_rollbacks_total", "reason");
    for (const char* r : kAttemptResults) {
        CAPTURE(r);
        CHECK(attempts.count(r) == 1);
        CHECK(attempts[r] == (r == std::string("installed") || r == std::string("rolled_back")));
    }
    for (const char* r : kRollbackReasons) {
        CAPTURE(r);
        CHECK(rollbacks.count(r) == 1);
        CHECK(rollbacks[r] == (r == std::string("health")));
    }
    CHECK(prom.value("myriarch_collector_info{version=\"0.117.0\"}") == 1);
    CHECK(prom.wait_value("myriarch_update_state{state=\"idle\"}", 1));
    CHECK(prom.value("sum(myriarch_update_state)") == 1);
    // Two of the fleet queries docs/container-mode.md suggests, on a fleet of one: the version
    // each collector runs, and the downloads completed (both releases were fetched in full).
    auto versions = prom.query("sum by (version) (myriarch_collector_info)");
    REQUIRE_MESSAGE(versions, prom.error());
    REQUIRE(versions->size() == 1);
    CHECK(versions->front().labels["version"] == "0.117.0");
    CHECK(versions->front().value == 1);
    auto downloads = prom.value("sum(increase(myriarch_download_duration_seconds_count[5m]))");
    REQUIRE_MESSAGE(downloads, prom.error());
    CHECK(std::lround(*downloads) == 2);

    // The root's age as the updater counts it, against this clock (a scrape is at most a second
    // old, and the query's time a little later).
    auto age = prom.value("myriarch_trusted_root_age_seconds");
    REQUIRE(age);
    CHECK(std::abs(*age - (static_cast<double>(::time(nullptr)) - kRootNewestStart)) < 30);
    auto success = prom.value("myriarch_update_last_success_timestamp_seconds");
    auto failure = prom.value("myriarch_update_last_failure_timestamp_seconds");
    REQUIRE((success && failure));
    CHECK(*success > 0);
    CHECK(*failure >= *success);  // the rollback came after the install

    // The example rules fire from these series: the rollback's, and the old root's when the
    // root's newest key is older than its threshold (it was on 2026-09-23); no other rule.
    std::set<std::string> want = {"MyriarchRollback"};
    if (*age > 365 * 86400.0) want.insert("MyriarchTrustedRootOld");
    std::vector<PromSample> firing;
    auto names = [&] {
        std::set<std::string> n;
        for (PromSample& a : firing) n.insert(a.labels["alertname"]);
        return n;
    };
    const bool fired = prom.wait_for("ALERTS{alertstate=\"firing\"}", [&](const auto& v) {
        firing = v;
        return names() == want;
    });
    const std::set<std::string> got = names();
    CHECK_MESSAGE(fired, "firing: " << joined({got.begin(), got.end()}) << prom.error());
    for (PromSample& a : firing) {
        CAPTURE(a.labels["alertname"]);
        CHECK(a.labels["instance"] == target);
        if (a.labels["alertname"] == "MyriarchRollback") CHECK(a.labels["reason"] == "health");
    }

    // For the record, not asserted (a loaded machine would make it flaky): how long Prometheus
    // waited for /metrics, the whole HTTP exchange on loopback, over the scrapes of this case.
    auto slowest = prom.value("max_over_time(scrape_duration_seconds[5m])");
    auto scrapes = prom.value("count_over_time(up[5m])");
    MESSAGE("scrapes: " << scrapes.value_or(0)
                        << ", slowest scrape_duration_seconds: " << slowest.value_or(-1));

    CHECK(u.stop() == 0);
    CHECK(prom.stop() == 0);
}
