// The wired `container` command through the real binary, as PID 1 of a new PID namespace: volume
// recovery and seeding before the child starts, crash recovery at fault points of the seed path,
// the liveness probe during a large seed, and the OpAMP agent's reports (volume.md, opamp.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "../opamp/opamp_support.hpp"
#include "fault_trace.hpp"
#include "pid1.hpp"
#include "wired_support.hpp"

using namespace myr::test;
using namespace myr::test::wired;

namespace {

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& e : v) s += e + "; ";
    return s;
}

// One start that must reach readiness and stop cleanly on TERM; returns the log.
std::string start_and_stop(Rig& rig, const SpawnOptions& opts = {}) {
    Updater u(rig.config(), Launch::pid1, opts);
    bool ready = rig.ready(40s);
    CHECK_MESSAGE(ready, "never ready; log:\n" << u.log());
    int code = u.stop();
    CHECK_MESSAGE(code == 0, "exit " << code << "; log:\n" << u.log());
    return u.log();
}

}  // namespace

TEST_CASE("container: seeds the volume at every start by the newest and image policies") {
    if (!can_run_pid1()) return;
    Rig rig;

    // First start: the image's version becomes active.
    rig.configure(rig.image("0.116.0"));
    start_and_stop(rig);
    CHECK_MESSAGE(rig.violations("0.116.0").empty(), joined(rig.violations("0.116.0")));
    CHECK(rig.marker("0.116.0").source == "image");
    CHECK(rig.marker("0.116.0").previous.empty());

    // A newer image: activated, with the one it replaces as previousVersion.
    rig.configure(rig.image("0.117.0"));
    start_and_stop(rig);
    CHECK_MESSAGE(rig.violations("0.117.0").empty(), joined(rig.violations("0.117.0")));
    CHECK(rig.marker("0.117.0").source == "image");
    CHECK(rig.marker("0.117.0").previous == "0.116.0");

    // An older image under `newest`: the active version stays.
    std::string old_image = rig.image("0.115.0");
    rig.configure(old_image);
    start_and_stop(rig);
    CHECK_MESSAGE(rig.violations("0.117.0").empty(), joined(rig.violations("0.117.0")));

    // `image`: the image's version is activated even though it is older.
    rig.configure(old_image, {.seed_policy = "image"});
    start_and_stop(rig);
    CHECK_MESSAGE(rig.violations("0.115.0").empty(), joined(rig.violations("0.115.0")));
    CHECK(rig.marker("0.115.0").previous == "0.117.0");
    CHECK(rig.marker("0.115.0").source == "image");
}

TEST_CASE("container: a broken active binary is replaced by the image's at the next start") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.image("0.116.0"));
    start_and_stop(rig);
    REQUIRE(rig.violations("0.116.0").empty());

    // Other bytes in place of the binary, still executable: only the hash can tell.
    write_file(rig.binary("0.116.0"), "#!/bin/sh\nexit 0\n", 0755);
    // An older image would lose under `newest` against an intact active version.
    rig.configure(rig.image("0.115.0"));
    start_and_stop(rig);
    CHECK_MESSAGE(rig.violations("0.115.0").empty(), joined(rig.violations("0.115.0")));
}

TEST_CASE("container: an image binary whose --version hangs keeps the intact active version") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.image("0.116.0"));
    start_and_stop(rig);
    REQUIRE(rig.violations("0.116.0").empty());

    // The probe's timeout is 30 s: the child starts after it, with the active version kept.
    rig.configure(rig.image("0.117.0", "version_output=hang"));
    Updater u(rig.config());
    bool ready = rig.ready(60s);
    CHECK_MESSAGE(ready, "never ready; log:\n" << u.log());
    CHECK(u.log_has("--version failed"));
    CHECK(u.stop() == 0);
    CHECK_MESSAGE(rig.violations("0.116.0").empty(), joined(rig.violations("0.116.0")));
    CHECK(!exists(rig.install + "/versions/0.117.0"));
}

TEST_CASE("container: with nothing active and a failing image binary, exits 1 before any child") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.image("0.116.0", "version_output=fail"));
    Updater u(rig.config());
    int code = u.wait_exit(30s);
    CHECK_MESSAGE(code == 1, "exit " << code << "; log:\n" << u.log());
    CHECK_MESSAGE(u.log_has("no intact version is active"), u.log());
    CHECK(u.log_has("volume preparation failed"));
    CHECK(!u.log_has("child started"));
    // The supervisor never ran: it would have written its state.
    CHECK(!exists(rig.storage + "/persistent_state.yaml"));
    CHECK(rig.current().empty());
}

TEST_CASE("container: a crash at any step of seeding is recovered by the next start") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.image("0.116.0"));
    {
        // /readyz is 200 as soon as the supervisor runs; its state file comes a moment later.
        Updater u(rig.config());
        REQUIRE_MESSAGE(rig.ready(40s), u.log());
        REQUIRE(wait_until([&] { return exists(rig.storage + "/persistent_state.yaml"); }, 20s));
        REQUIRE(u.stop() == 0);
    }
    REQUIRE(rig.violations("0.116.0").empty());
    // The supervisor wrote its state at its first start; nothing may touch it from here on.
    auto storage_before = snapshot(rig.storage);
    REQUIRE(storage_before.count("persistent_state.yaml") == 1);

    const std::string pristine = rig.dir / "pristine";
    REQUIRE(run({"mkdir", "-p", pristine}).exit_code == 0);
    REQUIRE(run({"cp", "-a", rig.install, rig.state, pristine}).exit_code == 0);
    auto restore = [&] {
        REQUIRE(run({"rm", "-rf", rig.install, rig.state}).exit_code == 0);
        REQUIRE(run({"cp", "-a", pristine + "/install", pristine + "/state", rig.dir.path()})
                    .exit_code == 0);
    };

    // The points an upgrading seed passes, with their pass numbers.
    rig.configure(rig.image("0.117.0"));
    const std::string trace = rig.dir / "trace";
    SpawnOptions traced;
    traced.env["MYRIARCH_FAULT_TRACE"] = trace;
    start_and_stop(rig, traced);
    REQUIRE(rig.violations("0.117.0").empty());
    const std::vector<FaultPass> points = read_fault_trace(trace);
    MESSAGE("fault points passed by an upgrading seed: " << points.size());
    REQUIRE(points.size() >= 4);
    // Every point: a start is quick, so the whole sequence is affordable.
    const std::vector<FaultPass>& chosen = points;
    std::string names;
    for (const auto& p : chosen) names += label(p) + " ";
    MESSAGE("crashing at: " << names);
    for (const FaultPass& fp : chosen) {
        const std::string p = label(fp);
        CAPTURE(p);
        restore();
        SpawnOptions crash;
        crash.env["MYRIARCH_FAULT"] = crash_at(fp);
        {
            Updater u(rig.config(), Launch::pid1, crash);
            int code = u.wait_exit(30s);
            CHECK_MESSAGE(code == 137, "exit " << code << "; log:\n" << u.log());
        }
        start_and_stop(rig);
        CHECK_MESSAGE(rig.violations("0.117.0").empty(), joined(rig.violations("0.117.0")));
        CHECK(snapshot(rig.storage) == storage_before);
    }
}

TEST_CASE("container: /healthz answers promptly while a 300 MB image binary is seeded") {
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.image("0.116.0", "", 300));
    Updater u(rig.config());
    using Clock = std::chrono::steady_clock;
    // From the probe server's first answer (before seeding) until the child runs (after it).
    REQUIRE_MESSAGE(wait_until([&] { return rig.probe("/healthz", 500ms) != 0; }, 20s, 10ms),
                    u.log());
    // The child starts only once the volume is ready: not while the copy runs.
    CHECK(rig.probe("/readyz", 5s) == 503);
    CHECK(!u.log_has("child started"));
    std::vector<double> ms;
    std::vector<int> statuses;
    auto deadline = Clock::now() + 120s;
    while (Clock::now() < deadline) {
        auto t0 = Clock::now();
        int st = rig.probe("/healthz", 5s);
        auto t1 = Clock::now();
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        statuses.push_back(st);
        if (u.log_has("child started")) break;
        std::this_thread::sleep_for(50ms);  // the sampling rate, not a wait for something
    }
    CHECK_MESSAGE(u.log_has("child started"), u.log());
    CHECK(std::all_of(statuses.begin(), statuses.end(), [](int s) { return s == 200; }));
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    double median = sorted[sorted.size() / 2], max = sorted.back();
    MESSAGE("/healthz during a 300 MB seed: " << ms.size() << " answers, median " << median
                                              << " ms, max " << max << " ms");
    CHECK(ms.size() >= 5);  // the window really covered the seed
    CHECK(median < 100.0);
    CHECK(max < 1000.0);
    CHECK(rig.ready(30s));
    CHECK(u.stop() == 0);
    CHECK_MESSAGE(rig.violations("0.116.0").empty(), joined(rig.violations("0.116.0")));
}

TEST_CASE(
    "container: reports itself, the collector and its health over OpAMP, and answers offers") {
    if (!can_run_pid1()) return;
    Rig rig;
    opamp::Server server(rig.dir, {"--on", "2:offer=collector,0.117.0,abc"});
    rig.configure(rig.image("0.116.0"), {.endpoint = server.ws_url()});
    Updater u(rig.config());
    REQUIRE_MESSAGE(rig.ready(40s), u.log());
    REQUIRE_MESSAGE(server.wait_messages(1), u.log());

    using opamp::flag;
    using opamp::get;
    using opamp::str;
    // The agent's first message (sequence_num 1) is its full report.
    const auto messages = server.messages();
    json_object* first = nullptr;
    for (const auto& m : messages) {
        if (str(m.get(), "sequence_num") == "1") first = m.get();
    }
    REQUIRE_MESSAGE(first != nullptr, read_file(server.record()));
    std::string uid_text = read_file(rig.state + "/instance_uid");
    uid_text.erase(uid_text.find_last_not_of("\n") + 1);
    json_object* id = get(first, "identifying");
    json_object* non = get(first, "non_identifying");
    CHECK(str(id, "service.name") == "myriarch-updater");
    CHECK(!uid_text.empty());
    CHECK(str(id, "service.instance.id") == uid_text);
    std::string uid_hex = uid_text;
    uid_hex.erase(std::remove(uid_hex.begin(), uid_hex.end(), '-'), uid_hex.end());
    CHECK(str(first, "instance_uid") == uid_hex);
    CHECK(str(non, "dev.myriarch.updater.install_method") == "container");
    CHECK(str(non, "dev.myriarch.updater.image_collector_version") == "0.116.0");
    CHECK(str(non, "dev.myriarch.collector.version") == "0.116.0");

    // The supervisor's state is written when it starts; a later report carries its instance id.
    std::string yaml;
    REQUIRE(wait_until(
        [&] { return !(yaml = read_file(rig.storage + "/persistent_state.yaml")).empty(); }, 20s));
    // Its first line: like the real one, the stand-in writes more keys after instance_id.
    std::string collector_uid = yaml.substr(0, yaml.find('\n'));
    collector_uid = collector_uid.substr(collector_uid.find(':') + 1);
    collector_uid.erase(0, collector_uid.find_first_not_of(" \""));
    collector_uid.erase(collector_uid.find_last_not_of(" \"\n") + 1);
    auto latest = [&](auto pred) {
        for (auto& m : server.messages()) {
            if (pred(m.get())) return true;
        }
        return false;
    };
    CHECK_MESSAGE(
        wait_until(
            [&] {
                return latest([&](json_object* m) {
                    return str(get(m, "non_identifying"), "dev.myriarch.collector.instance_uid") ==
                           collector_uid;
                });
            },
            30s, 100ms),
        "collector uid " << collector_uid << " never reported; " << read_file(server.record()));
    CHECK(wait_until(
        [&] { return latest([](json_object* m) { return flag(get(m, "health"), "healthy"); }); },
        30s, 100ms));

    // The offer (in the reply to the second message) names https://127.0.0.1/artifacts/…, which
    // is not below the default prefix (the endpoint's own host and port, /artifacts/): refused by
    // the URL policy in Checking, before any byte is downloaded.
    CHECK_MESSAGE(
        wait_until(
            [&] {
                return latest([](json_object* m) {
                    json_object* arr = get(get(m, "package_statuses"), "packages");
                    if (arr == nullptr) return false;
                    for (size_t i = 0; i < json_object_array_length(arr); ++i) {
                        json_object* p = json_object_array_get_idx(arr, i);
                        if (str(p, "name") == "collector" && str(p, "status") == "InstallFailed" &&
                            str(p, "error_message")
                                    .rfind("download URL refused: https://127.0.0.1/artifacts/"
                                           "collector.tar.gz: refused (rule prefix): not below "
                                           "any allowed download prefix (http://127.0.0.1:",
                                           0) == 0 &&
                            str(p, "agent_has_version") == "0.116.0" &&
                            str(p, "server_offered_version") == "0.117.0") {
                            return true;
                        }
                    }
                    return false;
                });
            },
            // The offer rides on the reply to the second message, the 30 s heartbeat:
            // a 30 s wait ended right as it came (seen once on a loaded machine).
            60s, 100ms),
        read_file(server.record()) << "\nlog:\n"
                                   << u.log());

    int code = u.stop();
    CHECK_MESSAGE(code == 0, "exit " << code << "; log:\n" << u.log());
    CHECK(wait_until(
        [&] { return latest([](json_object* m) { return flag(m, "agent_disconnect"); }); }, 10s));
    server.stop();
}

TEST_CASE("container: staging leftovers that cannot be removed do not stop the start") {
    // Housekeeping never blocks a start (docs/volume.md): an immutable file under .staging and a
    // tree deeper than remove_tree goes are left with a warning, and the intact active version
    // starts. Before, either one failed recovery on every start: a crash loop with
    // `current` intact.
    if (!can_run_pid1()) return;
    Rig rig;
    rig.configure(rig.image("0.116.0"));
    start_and_stop(rig);
    const std::string leftover = rig.install + "/.staging/leftover";
    run({"mkdir", "-p", leftover});
    write_file(leftover + "/otelcol-contrib", "half a binary");
    if (run({"chattr", "+i", leftover + "/otelcol-contrib"}).exit_code != 0) {
        MYR_SKIP("chattr +i is not supported on this file system");
    }
    // Mutable again whatever happens, so that the test's directory can be removed.
    struct Unfreeze {
        std::string path;
        ~Unfreeze() { run({"chattr", "-i", path}); }
    } unfreeze{leftover + "/otelcol-contrib"};
    std::string deep = rig.install + "/.staging/deep";
    for (int i = 0; i < 300; ++i, deep += "/d") REQUIRE(::mkdir(deep.c_str(), 0755) == 0);
    std::string log;
    {
        Updater u(rig.config());
        const bool ready = rig.ready(40s);
        log = u.log();
        CHECK_MESSAGE(ready, "never ready; log:\n" << log);
        CHECK(u.stop() == 0);
        log = u.log();
    }
    CHECK(rig.current() == "versions/0.116.0");
    CHECK(log.find("cannot remove a staging leftover; leaving it") != std::string::npos);
    CHECK(log.find("path=.staging/leftover") != std::string::npos);
    CHECK(log.find("path=.staging/deep") != std::string::npos);
    CHECK(exists(rig.install + "/.staging/deep"));
    CHECK(exists(leftover + "/otelcol-contrib"));
}
