// Offers sent again, failure classes and the updater's own health, against the real peers (issue
// 35, item 4; docs/update.md "Failure classes" and "Offers sent again", docs/opamp.md "The
// updater's own health"): the updater as PID 1 runs the real OpAMP Supervisor and collector, the
// opamp-go server of tests/real offers a signed release and sends it again on command or on a
// timer, and decodes the updater's health attributes (ComponentHealth field 7, unknown to its
// generated code). Requests are counted at the artifact server, Checkings in the updater's log.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <functional>
#include <optional>

#include "artifact_server.hpp"
#include "pid1.hpp"
#include "real_support.hpp"
#include "test_signer.hpp"
#include "tmpfs.hpp"

using namespace myr::test;
using namespace myr::test::real;

namespace {

using Clock = std::chrono::steady_clock;
using Tweak = std::function<void(UpdaterConfig&)>;

const char* const kChecking = "msg=\"update: state\" state=checking ";

long long ms_since(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// One container of the real peers with a signed otelcol-2 release: the opamp-go server, the
// artifact server on a reserved port (so that it can be down and come back at the same URL), and
// the updater as PID 1 started on otelcol-1 once `start` is called.
struct Rollout {
    explicit Rollout(const std::string& tools_dir)
        : p(tools_dir), server(p.dir, tools_dir, {"--token", p.token}) {
        good = p.release_archive(tools_dir + "/otelcol-2", "otelcol-2.tar.gz");
        sig = p.dir / "sigstore";
        sign_artifacts(sig, {good});
        bundle = sig + "/signed/otelcol-2.tar.gz.json";
        hash = wired::sha256_of(good);
        p.write_peer_configs(server.ws_url());
    }

    std::string url(const std::string& rest) const {
        return "http://127.0.0.1:" + std::to_string(artifact_port) + "/artifacts/" + rest;
    }
    void start_artifacts() { artifacts.emplace(p.dir / "artifacts", "", "", artifact_port); }
    size_t requests() const { return artifacts ? artifacts->requests() : 0; }

    // The updater as PID 1 on otelcol-1, settled: the collector healthy and the updater's first
    // report in.
    void start(const Tweak& tweak = {}) {
        p.write_updater(server.ws_url(), "INT", "", [&](UpdaterConfig& c) {
            c.require_signature = true;
            c.trusted_root_file = sig + "/trusted_root.json";
            c.signer_subject = kSignerSubject;
            c.signer_issuer = kSignerIssuer;
            c.allowed_download_prefixes = {url("")};
            c.collector_health_url =
                "http://127.0.0.1:" + std::to_string(p.collector_health_port) + "/";
            c.health_timeout = "20s";
            c.health_interval = "500ms";
            c.health_successes = 3;
            c.keep_versions = 2;
            if (tweak) tweak(c);
        });
        u.emplace(p.updater_config());
        REQUIRE_MESSAGE(p.wait_collector_healthy(), logs());
        REQUIRE(wait_until([&] { return !server.from("myriarch-updater").empty(); }, 30s, 100ms));
    }

    // Offers otelcol-2 (at `rest` of the artifact server, or `full_url`) and returns the record
    // line it was offered at.
    size_t offer(const std::string& full_url, const std::string& more = "") const {
        const size_t from = server.all().size();
        server.offer(p.versions[1], full_url, hash, bundle, more);
        return from;
    }
    UpdaterStatus final_after(size_t from, Millis t = 120s) const {
        auto st = wait_final(server, p.versions[1], from, t);
        REQUIRE_MESSAGE(st, "no final status for " << p.versions[1] << "\n" << logs());
        return *st;
    }

    std::string logs() const {
        return "updater log:\n" + (u ? u->log() : "") + "\nserver:\n" + server.err();
    }

    Peers p;
    GoServer server;
    int artifact_port = reserve_port();
    std::string good, sig, bundle, hash;
    std::optional<ArtifactServer> artifacts;
    std::optional<Updater> u;
};

// The Downloading statuses of `version` that said "retrying: …", from record line `from` on.
size_t retrying(const GoServer& s, const std::string& version, size_t from) {
    size_t n = 0;
    for (const UpdaterStatus& st : updater_statuses(s, version, from)) {
        if (st.error.rfind("retrying: ", 0) == 0) ++n;
    }
    return n;
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// Skips (named) what suite `real` cannot run here; false when the case must end.
bool real_peers_here(std::string& tools_dir) {
    if (!can_run_pid1()) return false;
    tools_dir = tools();
    if (tools_dir.empty()) return false;
    if (std::string why = signer_unavailable(); !why.empty()) {
        report_skip(why);
        return false;
    }
    return true;
}

}  // namespace

TEST_CASE(
    "issue 35: an artifact server down past retryFor, then back and the same offer sent again: "
    "Installed without a restart") {
    std::string t;
    if (!real_peers_here(t)) return;
    Rollout r(t);
    r.start([](UpdaterConfig& c) { c.retry_for = "10s"; });
    const pid_t pid1 = r.u->pid();

    // Nothing listens on the artifact port: connection refused, a transient failure retried
    // until update.retryFor runs out. (When the downloader's own tries of the first fetch outlast
    // the budget, as on a loaded machine, no outer retry is made and the message has no "gave up
    // after" clause: so the case checks the time and the class, not that clause.)
    const std::string url = r.url("otelcol-2.tar.gz");
    auto t0 = Clock::now();
    size_t from = r.offer(url);
    UpdaterStatus st = r.final_after(from, 90s);
    const long long down_ms = ms_since(t0);
    CHECK(st.status == "PackageStatusEnum_InstallFailed");
    CHECK_MESSAGE(has(st.error, "connection refused"), st.error);
    CHECK(down_ms >= 10000);
    CHECK(wait_until(
        [&] { return has(read_file(r.p.state + "/last-attempt.json"), "\"class\":\"transient\""); },
        10s, 50ms));
    MESSAGE("down: InstallFailed after " << down_ms << " ms, "
                                         << retrying(r.server, r.p.versions[1], from)
                                         << " retrying statuses: " << st.error);
    CHECK(current_of(r.p.install) == "versions/" + r.p.versions[0]);

    // The server comes back at the same URL and the fleet server sends the same offer again.
    r.start_artifacts();
    from = r.offer(url);
    t0 = Clock::now();
    st = r.final_after(from, 90s);
    CHECK_MESSAGE(st.status == "PackageStatusEnum_Installed", st.error << "\n" << r.logs());
    MESSAGE("sent again to Installed: " << ms_since(t0) << " ms (the backoff step included)");
    CHECK(r.requests() >= 1);
    CHECK(current_of(r.p.install) == "versions/" + r.p.versions[1]);
    CHECK(wait_until([&] { return supervisor_reported(r.server, r.p.versions[1], from); }, 30s,
                     100ms));
    // The same PID 1 all along: no pod restart was needed.
    CHECK(r.u->pid() == pid1);
    CHECK_FALSE(r.u->wait(0ms).has_value());
    CHECK(r.u->stop(60s) == 0);
}

TEST_CASE(
    "issue 35: a deterministic failure sent again is quarantined with 0 requests; forget, then "
    "the same offer: Installed") {
    std::string t;
    if (!real_peers_here(t)) return;
    Rollout r(t);
    // The first answer for this URL is another build's archive (a hash mismatch: deterministic);
    // from the second request on the artifact server serves the signed release (`change=2`).
    const std::string dir = r.p.dir / "artifacts";
    REQUIRE(run({"cp", t + "/otelcol-1", dir + "/otelcol-q.tar.gz"}).exit_code == 0);
    REQUIRE(run({"cp", r.good, dir + "/otelcol-q.tar.gz.v2"}).exit_code == 0);
    r.start_artifacts();
    r.start([](UpdaterConfig& c) { c.quarantine_for = "1h"; });
    const std::string url = r.url("otelcol-q.tar.gz?change=2");

    size_t from = r.offer(url);
    UpdaterStatus st = r.final_after(from);
    CHECK(st.status == "PackageStatusEnum_InstallFailed");
    CHECK_MESSAGE(has(st.error, "content hash mismatch"), st.error);
    const size_t requests = r.requests();
    CHECK(requests == 1);
    CHECK(wait_until(
        [&] { return has(read_file(r.p.state + "/last-attempt.json"), "deterministic"); }, 10s,
        50ms));

    // Sent again: answered from the quarantine, no request to the artifact server.
    from = r.offer(url);
    st = r.final_after(from, 60s);
    CHECK(st.status == "PackageStatusEnum_InstallFailed");
    CHECK_MESSAGE(st.error.rfind("quarantined: content hash mismatch", 0) == 0, st.error);
    CHECK(r.requests() == requests);

    // forget lifts it while PID 1 runs; the same offer sent again then installs.
    RunResult f = run({updater_bin(), "forget", "--config", r.p.updater_config()});
    CHECK_MESSAGE(f.exit_code == 0, f.err);
    CHECK_MESSAGE(has(f.out, "lifted the quarantine of " + r.p.versions[1]), f.out);
    from = r.offer(url);
    st = r.final_after(from, 90s);
    CHECK_MESSAGE(st.status == "PackageStatusEnum_Installed", st.error << "\n" << r.logs());
    CHECK(r.requests() == requests + 1);
    CHECK(current_of(r.p.install) == "versions/" + r.p.versions[1]);
    CHECK(r.u->stop(60s) == 0);
}

TEST_CASE(
    "issue 35: a plaintext download through a proxy is refused: InstallFailed within 5 s, "
    "0 retries, no connection made") {
    std::string t;
    if (!real_peers_here(t)) return;
    Rollout r(t);
    // The proxy: a loopback listener that is never accepted from; a connection to it would wait in
    // its backlog, where the end of the case looks.
    const int proxy = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    REQUIRE(proxy >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    REQUIRE(::bind(proxy, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(proxy, 16) == 0);
    REQUIRE(::getsockname(proxy, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    // 10.255.255.1 is never reached: the transport rule refuses plaintext before any connect.
    const std::string url = "http://10.255.255.1/otelcol-2.tar.gz";
    r.start([&](UpdaterConfig& c) {
        c.proxy_url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
        c.no_proxy = {"127.0.0.1"};
        c.allowed_download_prefixes.push_back("http://10.255.255.1/");
        c.retry_for = "1m";
    });

    const auto t0 = Clock::now();
    const size_t from = r.offer(url);
    UpdaterStatus st = r.final_after(from, 30s);
    const long long took = ms_since(t0);
    CHECK(st.status == "PackageStatusEnum_InstallFailed");
    CHECK_MESSAGE(has(st.error, "refusing a plaintext connection"), st.error);
    MESSAGE("offer to InstallFailed (plaintext through a proxy): " << took << " ms; " << st.error);
    CHECK(took < 5000);
    CHECK(retrying(r.server, r.p.versions[1], from) == 0);
    CHECK_MESSAGE(r.u->log_has("class=refused"), r.logs());
    CHECK(r.u->count(kChecking) == 1);
    sockaddr_storage peer{};
    socklen_t plen = sizeof peer;
    const int c = ::accept(proxy, reinterpret_cast<sockaddr*>(&peer), &plen);
    CHECK_MESSAGE((c < 0 && errno == EAGAIN), "the proxy got a connection");
    if (c >= 0) ::close(c);
    ::close(proxy);
    CHECK(current_of(r.p.install) == "versions/" + r.p.versions[0]);
    CHECK(r.u->stop(60s) == 0);
}

TEST_CASE(
    "issue 35: a volume too small for the release: InstallFailed within 5 s, 0 retries, 0 "
    "requests") {
    std::string t;
    if (!real_peers_here(t)) return;
    if (::geteuid() != 0) MYR_SKIP("mounting a tmpfs needs root");
    Rollout r(t);
    // Room for the seeded collector and half of it again: the new binary, estimated by the active
    // one's size, cannot fit.
    struct stat seed {};
    REQUIRE(::stat(r.p.seed.c_str(), &seed) == 0);
    Tmpfs volume(r.p.install, std::to_string(seed.st_size + seed.st_size / 2));
    if (!volume.mounted) MYR_SKIP("cannot mount a tmpfs");
    r.start_artifacts();
    r.start([](UpdaterConfig& c) { c.retry_for = "1m"; });

    const auto t0 = Clock::now();
    const size_t from = r.offer(r.url("otelcol-2.tar.gz"));
    UpdaterStatus st = r.final_after(from, 30s);
    const long long took = ms_since(t0);
    CHECK(st.status == "PackageStatusEnum_InstallFailed");
    CHECK_MESSAGE(has(st.error, "not enough space on " + r.p.install), st.error);
    MESSAGE("offer to InstallFailed (volume too small): " << took << " ms; " << st.error);
    CHECK(took < 5000);
    CHECK(retrying(r.server, r.p.versions[1], from) == 0);
    CHECK(r.requests() == 0);
    CHECK_MESSAGE(r.u->log_has("class=refused"), r.logs());
    CHECK(current_of(r.p.install) == "versions/" + r.p.versions[0]);
    CHECK(r.u->stop(60s) == 0);
}

namespace {

// The first of the updater's health attribute maps from record line `from` on for which `match`
// holds, waited for.
std::optional<std::map<std::string, std::string>> wait_health(
    const GoServer& s, size_t from,
    const std::function<bool(std::map<std::string, std::string>&)>& match, Millis t) {
    std::optional<std::map<std::string, std::string>> found;
    wait_until(
        [&] {
            for (auto& m : updater_health(s, from)) {
                if (match(m)) {
                    found = m;
                    return true;
                }
            }
            return false;
        },
        t, 100ms);
    return found;
}

std::string at(const std::map<std::string, std::string>& m, const std::string& key) {
    auto it = m.find("myriarch.update." + key);
    return it == m.end() ? "" : it->second;
}

// An RFC 3339 UTC time as the updater writes it: 2026-12-07T10:10:00Z.
bool rfc3339(const std::string& s) {
    return s.size() >= 20 && s[4] == '-' && s[10] == 'T' && s.back() == 'Z';
}

// The trial of otelcol-2 as opamp-go decoded it: state trial, both versions, until when.
std::map<std::string, std::string> on_trial(const Rollout& r, size_t from) {
    auto m = wait_health(
        r.server, from, [](auto& a) { return at(a, "state") == "trial"; }, 60s);
    REQUIRE_MESSAGE(m, "no health report with state trial\n" << r.logs());
    CHECK(at(*m, "target_version") == r.p.versions[1]);
    CHECK(at(*m, "previous_version") == r.p.versions[0]);
    CHECK_MESSAGE(rfc3339(at(*m, "trial_until")), at(*m, "trial_until"));
    return *m;
}

}  // namespace

TEST_CASE(
    "issue 35: the trial's attributes decoded by opamp-go: installed on trial, trial passed") {
    std::string t;
    if (!real_peers_here(t)) return;
    Rollout r(t);
    r.start_artifacts();
    r.start([](UpdaterConfig& c) { c.trial_period = "6s"; });

    const size_t from = r.offer(r.url("otelcol-2.tar.gz"));
    UpdaterStatus st = r.final_after(from);
    CHECK_MESSAGE(st.status == "PackageStatusEnum_Installed", st.error << "\n" << r.logs());
    on_trial(r, from);
    // The trial passed: the state leaves trial and trial_until is gone; the install is final.
    auto after = wait_health(
        r.server, from, [](auto& a) { return at(a, "state") == "idle"; }, 60s);
    REQUIRE_MESSAGE(after, "no health report after the trial\n" << r.logs());
    CHECK(at(*after, "trial_until").empty());
    CHECK(at(*after, "last_error").empty());
    CHECK(current_of(r.p.install) == "versions/" + r.p.versions[1]);
    CHECK(r.u->stop(60s) == 0);
}

TEST_CASE(
    "issue 35: the trial's attributes decoded by opamp-go: a rollback after commit (the "
    "supervisor killed during the trial)") {
    std::string t;
    if (!real_peers_here(t)) return;
    Rollout r(t);
    r.start_artifacts();
    r.start([](UpdaterConfig& c) {
        c.trial_period = "2m";
        c.trial_max_restarts = 1;
    });

    const size_t from = r.offer(r.url("otelcol-2.tar.gz"));
    UpdaterStatus st = r.final_after(from);
    CHECK_MESSAGE(st.status == "PackageStatusEnum_Installed", st.error << "\n" << r.logs());
    on_trial(r, from);
    // The new version passed its health check; now its supervisor dies during the trial, as a
    // collector that crashes at its first scrape would take it down (the real builds have no such
    // mode, so the test kills it: what the trial watches is the supervisor's unexpected end).
    const pid_t sup = find_descendant(r.u->pid(), r.p.supervisor_bin());
    REQUIRE(sup > 0);
    REQUIRE(::kill(sup, SIGKILL) == 0);

    std::optional<UpdaterStatus> failed;
    REQUIRE_MESSAGE(wait_until(
                        [&] {
                            for (auto& s : updater_statuses(r.server, r.p.versions[1], from)) {
                                if (s.status == "PackageStatusEnum_InstallFailed") failed = s;
                            }
                            return failed.has_value();
                        },
                        90s, 100ms),
                    r.logs());
    CHECK_MESSAGE(failed->error.rfind("rolled back after commit: ", 0) == 0, failed->error);
    CHECK(failed->has == r.p.versions[0]);
    auto after = wait_health(
        r.server, from,
        [](auto& a) {
            return at(a, "state") == "idle" && has(at(a, "last_error"), "rolled back after commit");
        },
        60s);
    REQUIRE_MESSAGE(after, "no health report after the rollback\n" << r.logs());
    CHECK(at(*after, "trial_until").empty());
    CHECK(current_of(r.p.install) == "versions/" + r.p.versions[0]);
    CHECK(wait_until([&] { return supervisor_reported(r.server, r.p.versions[0], from); }, 30s,
                     100ms));
    CHECK(r.u->stop(60s) == 0);
}

TEST_CASE(
    "issue 35: a server that resends the failed offer every second for 2 minutes: at most one "
    "Checking per backoff step") {
    std::string t;
    if (!real_peers_here(t)) return;
    Rollout r(t);
    r.start_artifacts();
    r.start();
    const int checkings_before = r.u->count(kChecking);

    // A 404 (refused: ended at once, one request per Checking); the opamp-go server sends the
    // same offer at once and then every second for 120 s.
    const double sent_at =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const size_t from =
        r.offer(r.url("missing.tar.gz"), ",\"repeat_every_ms\":1000,\"repeat_for_ms\":120000");
    UpdaterStatus st = r.final_after(from, 30s);
    CHECK(st.status == "PackageStatusEnum_InstallFailed");
    CHECK_MESSAGE(has(st.error, "HTTP 404"), st.error);
    // The resends end (the server's last one is recorded at about 120 s).
    REQUIRE(wait_until(
        [&] {
            auto resends = r.server.events("resend");
            return !resends.empty() && opamp::num(resends.back().get(), "n") >= 119;
        },
        150s, 500ms));
    const size_t resends = r.server.events("resend").size();
    // A resend held back at the end of the window would be checked when its step ends; the stop
    // drops it, so the counts below are final.
    REQUIRE(r.u->stop(60s) == 0);

    const std::vector<double> times = r.artifacts->request_times();
    const int checkings = r.u->count(kChecking) - checkings_before;
    // Each Checking made exactly one request (a 404 is not retried), so the request times are the
    // Checkings' times.
    CHECK(static_cast<size_t>(checkings) == times.size());
    // After the k-th failure the next Checking waits at least half of 5 s * 2^(k-1) (the jitter
    // scales a step by 0.5 to 1): within 120 s that is at most 6 Checkings (2.5 + 5 + 10 + 20 + 40
    // s), and at least 5 (5 + 10 + 20 + 40 s).
    std::string gaps;
    for (size_t i = 1; i < times.size(); ++i) {
        const double gap = times[i] - times[i - 1];
        const double step = 5.0 * static_cast<double>(1 << std::min<size_t>(i - 1, 6));
        gaps += std::to_string(gap).substr(0, 5) + " s ";
        CHECK_MESSAGE(gap >= 0.5 * std::min(step, 300.0),
                      "request " << i + 1 << " " << gap << " s after the one before");
    }
    size_t in_window = 0;
    for (double at_time : times) in_window += at_time <= sent_at + 120.0 ? 1 : 0;
    MESSAGE("120 s of resends every second (" << resends << " resends): " << checkings
                                              << " Checkings, " << times.size()
                                              << " requests, gaps " << gaps);
    CHECK(in_window >= 5);
    CHECK(in_window <= 6);
    CHECK(r.u->log_has("update: a failed offer sent again; it is checked again after the backoff"));
}
