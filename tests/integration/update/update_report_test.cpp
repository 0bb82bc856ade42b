// What the server and the log are told when an install meets an odd input or a failing step
// (docs/update.md, "Reports"; issue 22): a commit that fails, a presigned URL that 404s, an offer
// with more download headers than the codec takes. The real static binary as PID 1, offered by
// the project's OpAMP test server, served by the artifact server (update_rig.hpp).
#include <doctest/doctest.h>

#include <regex>

#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

// A presigned-style query string of about 430 characters whose signature is the secret.
const std::string kSecret(256, 'f');
std::string presigned_query() {
    return "status=404&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20261202%2F"
           "eu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20261202T000000Z&X-Amz-Expires=900&"
           "X-Amz-SignedHeaders=host&X-Amz-Signature=" +
           kSecret;
}

}  // namespace

TEST_CASE("update reports: a commit that fails is logged, reported and undone") {
    // The commit is the first pass of update.finish (the journal's removal and the state files);
    // an I/O error there must not leave the new version running while the journal still names
    // the install (the next start would switch back behind the server's back).
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.release("0.116.0"));
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    {
        SpawnOptions fault;
        fault.env["MYRIARCH_FAULT"] = "update.finish.before:fail@1";
        Updater u(rig.config(), Launch::pid1, fault);
        rig.settle(u);
        const size_t from = rig.mark();
        rig.offer({"0.117.0", v117});
        auto st = rig.wait_status("0.117.0", "", from);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK_MESSAGE(st->status == "InstallFailed", st->status << " " << st->error);
        CHECK_MESSAGE(st->error.rfind("commit: ", 0) == 0, st->error);
        CHECK_MESSAGE(st->error.find("injected") != std::string::npos, st->error);
        CHECK_MESSAGE(st->error.find("rolled back to 0.116.0") != std::string::npos, st->error);
        CHECK(st->has == "0.116.0");
        // The failure is in the log as what it is, with its cause; no "committed" follows it.
        CHECK_MESSAGE(wait_until([&] { return u.log_has("state=rolled-back"); }, 30s, 50ms),
                      u.log());
        CHECK_MESSAGE(u.log_has("reason=\"commit: "), u.log());
        check_settled(rig, "0.116.0");
        CHECK(read_file(rig.state + "/last-attempt.json").find("rolled-back") != std::string::npos);
        CHECK(u.stop() == 0);
    }
    // The next start finds what the report said: 0.116.0, no switch of its own.
    const size_t m = rig.mark();
    Updater u(rig.config());
    rig.await_start(u, m);
    check_settled(rig, "0.116.0");
    CHECK_FALSE(u.log_has("recovery: volume put back"));
    CHECK(u.stop() == 0);
}

TEST_CASE("update reports: offers refused before any change name their cause") {
    if (!can_run_pid1()) return;
    Started started;
    auto& [rig, u, v117] = started;

    SUBCASE("a presigned URL that 404s: the status first, never the query string") {
        Offer o{"0.117.0", v117, presigned_query()};
        CHECK(rig.url_of(v117, o.query).size() > 430);
        const size_t from = rig.mark();
        rig.offer(o);
        auto st = rig.wait_status("0.117.0", "", from);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK(st->status == "InstallFailed");
        MESSAGE("as reported: " << st->error);
        CHECK_MESSAGE(st->error.find("HTTP 404") != std::string::npos, st->error);
        CHECK_MESSAGE(st->error.find("/artifacts/v117.tar.gz") != std::string::npos, st->error);
        CHECK_MESSAGE(st->error.find("X-Amz") == std::string::npos, st->error);
        CHECK_MESSAGE(st->error.find(kSecret.substr(0, 16)) == std::string::npos, st->error);
        // The log says it too, and holds no part of the query string anywhere.
        CHECK_MESSAGE(wait_until([&] { return u.log_has("HTTP 404"); }, 10s, 50ms), u.log());
        CHECK(u.stop() == 0);
        CHECK_MESSAGE(!u.log_has("X-Amz"), u.log());
        CHECK_MESSAGE(!u.log_has(kSecret.substr(0, 16)), u.log());
    }
    SUBCASE("more download headers than the codec takes: that package only is refused") {
        Offer top{"0.117.0", v117};
        for (int i = 0; i < 33; ++i) top.headers.push_back("X-H" + std::to_string(i) + ": v");
        Offer addon{"1.0.0", v117};
        addon.name = "extra";
        addon.type = 1;
        const size_t from = rig.mark();
        rig.offer_all({top, addon});
        // Both packages are answered: the TopLevel one with the reason it was refused, the
        // other one as it would be without it (the rest of the message was decoded).
        auto st = rig.wait_status("0.117.0", "", from, 30s);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK(st->status == "InstallFailed");
        CHECK_MESSAGE(st->error.find("33 download headers, at most 32") != std::string::npos,
                      st->error);
        auto other = rig.wait_status("1.0.0", "", from, 10s, "extra");
        REQUIRE_MESSAGE(other, rig.record());
        CHECK(other->status == "InstallFailed");
        CHECK_MESSAGE(other->error == "unsupported package type", other->error);
        CHECK(u.log_has("33 download headers"));
        check_settled(rig, "0.116.0");
        CHECK(rig.artifact_server->requests() == 0);

        // The same offer within the budget installs: the refusal was about the headers alone.
        top.headers.resize(32);
        const size_t again = rig.mark();
        rig.offer_all({top, addon});
        st = rig.wait_status("0.117.0", "", again);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK_MESSAGE(st->status == "Installed", st->error);
        CHECK(u.stop() == 0);
    }
}

// Issue 23, item 5: a fleet server can draw a progress bar. The downloader reports progress as it
// goes; the installer sends PackageStatus.download_details (percent, bytes per second) at most
// every 2 s (update::Settings::progress_every), whatever the downloader sends.
TEST_CASE("update reports: a download sends its progress at most every 2 s") {
    if (!can_run_pid1()) return;
    Started started;
    auto& [rig, u, v117] = started;
    // drip=7: the first 7 bytes one per second, then the rest at once: about 7 s of Downloading.
    const size_t from = rig.mark();
    const auto began = std::chrono::steady_clock::now();
    rig.offer({"0.117.0", v117, "drip=7"});
    auto st = rig.wait_status("0.117.0", "", from, 60s);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
    CHECK_MESSAGE(st->status == "Installed", st->error);
    const auto took = std::chrono::steady_clock::now() - began;

    std::vector<Status> progress;
    for (const Status& s : rig.statuses(from)) {
        if (s.offered != "0.117.0") continue;
        // Every Downloading status carries the details; no other status does.
        CHECK_MESSAGE(s.percent.has_value() == (s.status == "Downloading"), s.status);
        if (s.status == "Downloading" && s.percent) progress.push_back(s);
    }
    std::string seen;
    for (const Status& s : progress) {
        seen += std::to_string(s.t_ms) + "ms " + std::to_string(*s.percent) + "% " +
                std::to_string(s.bytes_per_second) + " B/s; ";
    }
    MESSAGE("Downloading reports (server time, percent, bytes/s): " << seen);
    // The status change itself (0 %), then the progress reports of the 7 s: 3 or 4 of them at 2 s
    // intervals, plus one near the end at most.
    REQUIRE_MESSAGE(progress.size() >= 3, seen);
    CHECK(*progress.front().percent == 0.0);
    for (size_t i = 1; i < progress.size(); ++i) {
        CHECK_MESSAGE(*progress[i].percent >= *progress[i - 1].percent, seen);
        CHECK_MESSAGE(*progress[i].percent <= 100.0, seen);
    }
    // At most every 2 s: the first progress report may follow the status change at once, each
    // later one comes 2 s after the one before it (the server's arrival times, 500 ms allowed
    // for a send delayed on a loaded machine).
    for (size_t i = 2; i < progress.size(); ++i) {
        CHECK_MESSAGE(progress[i].t_ms - progress[i - 1].t_ms >= 1500, seen);
    }
    const auto whole =
        static_cast<size_t>(std::chrono::duration_cast<std::chrono::seconds>(took).count());
    CHECK_MESSAGE(progress.size() <= 2 + whole / 2, seen);
    CHECK(u.stop() == 0);
}

namespace {

// The delay the updater drew for the start jitter of `version`, from its log line; nullopt when
// it did not wait.
std::optional<double> jitter_delay_s(const Updater& u, const std::string& version) {
    const std::string log = u.log();
    const std::regex line("msg=\"update: download waits for the start jitter\"[^\\n]*");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
         ++it) {
        const std::string l = it->str();
        if (l.find("version=" + version) == std::string::npos) continue;
        std::smatch m;
        if (!std::regex_search(l, m, std::regex(" delay=([0-9.]+)(ms|s|m)( |$)"))) continue;
        const double n = std::stod(m[1]);
        return m[2] == "ms" ? n / 1000 : m[2] == "m" ? n * 60 : n;
    }
    return std::nullopt;
}

double wall_now_s() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

// Issue 23, item 6: 10,000 pods offered the same release must not reach the artifact server in
// the same second. The delay is random; what is checked is that the request comes no sooner
// than the delay the updater logged, and that a newer offer or a shutdown ends the wait.
TEST_CASE("update: a download starts after a random delay within update.startJitter") {
    if (!can_run_pid1()) return;
    Rig rig;
    const std::string seed = rig.release("0.116.0");
    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");

    SUBCASE("the request comes after the logged delay, within the window") {
        rig.configure(seed, [](UpdaterConfig& c) { c.start_jitter = "3s"; });
        Updater u(rig.config());
        rig.settle(u);
        const size_t from = rig.mark();
        const double offered = wall_now_s();
        rig.offer({"0.117.0", v117});
        auto st = rig.wait_status("0.117.0", "", from, 60s);
        REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
        CHECK_MESSAGE(st->status == "Installed", st->error);
        CHECK(rig.sequence("0.117.0", from) == "Installing Downloading Installing Installed");
        auto delay = jitter_delay_s(u, "0.117.0");
        REQUIRE_MESSAGE(delay, u.log());
        CHECK(*delay >= 0.0);
        CHECK(*delay <= 3.0);
        auto times = rig.artifact_server->request_times();
        REQUIRE(times.size() == 1);
        MESSAGE("drawn delay " << *delay << " s; request " << times[0] - offered
                               << " s after the offer was written");
        // 10 ms for the two clocks' rounding (both are the same system clock).
        CHECK(times[0] - offered >= *delay - 0.01);
        CHECK(times[0] - offered <= *delay + 15);
        check_settled(rig, "0.117.0");
        CHECK(u.stop() == 0);
    }
    SUBCASE("a newer offer and then a shutdown end the wait without a request") {
        rig.configure(seed, [](UpdaterConfig& c) { c.start_jitter = "10m"; });
        const std::string v118 = rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz");
        Updater u(rig.config());
        rig.settle(u);
        const size_t from = rig.mark();
        rig.offer({"0.117.0", v117});
        REQUIRE_MESSAGE(wait_until([&] { return jitter_delay_s(u, "0.117.0").has_value(); }, 20s),
                        u.log());
        // While it waits the server sees Downloading at 0 %.
        auto waiting = rig.wait_status("0.117.0", "Downloading", from, 20s);
        REQUIRE_MESSAGE(waiting, rig.record());
        CHECK(waiting->percent == 0.0);
        rig.offer({"0.118.0", v118});
        REQUIRE_MESSAGE(wait_until([&] { return jitter_delay_s(u, "0.118.0").has_value(); }, 20s),
                        u.log());
        CHECK(u.log_has("update: newer offer remembered"));
        REQUIRE_MESSAGE(rig.wait_status("0.118.0", "Downloading", from, 20s), rig.record());
        const auto stopping = std::chrono::steady_clock::now();
        CHECK(u.stop() == 0);
        CHECK(std::chrono::steady_clock::now() - stopping < 20s);
        CHECK(rig.artifact_server->requests() == 0);
        std::vector<std::string> v = rig.violations("0.116.0");
        CHECK_MESSAGE(v.empty(), joined(v));
        CHECK(rig.storage_unchanged());
    }
}
