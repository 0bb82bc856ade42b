// `myriarch-updater status` (docs/status.md; issue 26, item 2) run beside the real binary as PID 1
// in each state of the installer: idle on one version, a download the artifact server holds open,
// the critical section held at a fault point (`hold`, src/core/fault.hpp), the journal a kill left
// there, a rollback whose package is quarantined, and a trial. Every output is validated against
// docs/status.schema.json (python3-jsonschema) and checked for the facts of that state; status
// never changes what it reads. Then status without an updater: on a missing volume, and on a
// hostile one (a symlink planted as a version directory, a garbage marker).
#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>

#include "core/time.hpp"
#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

struct StatusRun {
    int exit_code = -1;
    std::string out, err;
    opamp::Json doc;
    json_object* at(std::initializer_list<const char*> path) const {
        json_object* o = doc.get();
        for (const char* k : path) o = get(o, k);
        return o;
    }
};

bool have_jsonschema() {
    return run({"python3", "-c", "import jsonschema"}).exit_code == 0;
}

// `status --config <rig's> --json`, validated against the schema.
StatusRun status(const Rig& rig, const std::string& label) {
    CAPTURE(label);
    RunResult r = run({updater_bin(), "status", "--config", rig.config(), "--json"}, 20s);
    const std::string file = rig.dir / ("status-" + label + ".json");
    write_file(file, r.out);
    RunResult v = run({"python3", source_dir() + "/tests/integration/update/check_status.py",
                       source_dir() + "/docs/status.schema.json", file},
                      30s);
    CHECK_MESSAGE(v.exit_code == 0, label << ": not valid against docs/status.schema.json:\n"
                                          << v.out << v.err << "\noutput:\n"
                                          << r.out);
    StatusRun s{r.exit_code, r.out, r.err, opamp::parse_json(r.out)};
    REQUIRE_MESSAGE(s.doc, label << ": not JSON: " << r.out << r.err);
    return s;
}

std::vector<std::string> version_names(const StatusRun& s) {
    std::vector<std::string> out;
    json_object* list = s.at({"volume", "versions"});
    for (size_t i = 0; list && i < json_object_array_length(list); ++i) {
        out.push_back(str(json_object_array_get_idx(list, i), "version"));
    }
    return out;
}

// The newest validFor.start of a trusted root, read by Python: the oracle of trustedRoot.
std::string newest_start(const std::string& file) {
    RunResult r = run({"python3", "-c",
                       "import json,sys\n"
                       "r=json.load(open(sys.argv[1]))\n"
                       "v=[e.get('validFor') or e.get('publicKey',{}).get('validFor',{}) for k in "
                       "('certificateAuthorities','tlogs','ctlogs') for e in r.get(k,[])]\n"
                       "s=[x['start'] for x in v if 'start' in x]\n"
                       "print(max(s).split('.')[0].rstrip('Z')+'Z')",
                       file});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return r.out.substr(0, r.out.find('\n'));
}

}  // namespace

TEST_CASE("status: each installer state beside PID 1, valid against docs/status.schema.json") {
    if (!can_run_pid1()) return;
    if (!have_jsonschema()) MYR_SKIP("python3-jsonschema is missing (scripts/deps.sh)");
    Rig rig;
    const std::string trusted = rig.dir / "trusted_root.json";
    // A root whose newest entry (a log key) is younger than its CA; status checks it usable as
    // the updater does and reads its age from validFor.
    write_file(trusted,
               read_file(data_dir() + "/sigstore-conformance/public-good-trusted-root.json"));
    const auto tweak = [&](UpdaterConfig& c) {
        c.trial_period = "10m";
        c.quarantine_for = "1h";
        c.trusted_root_file = trusted;
    };
    rig.configure(rig.release("0.116.0"), tweak);
    const std::string v117 = rig.tar_gz_padded(rig.release("0.117.0"), "v117.tar.gz", 4);
    const std::string v118 = rig.tar_gz(rig.release("0.118.0", "health=fail"), "v118.tar.gz");

    {
        Updater u(rig.config());
        rig.settle(u);
        // Idle on the image's version.
        StatusRun s = status(rig, "idle");
        CHECK_MESSAGE(s.exit_code == 0, s.err);
        CHECK(version_names(s) == std::vector<std::string>{"0.116.0"});
        CHECK(str(s.at({"volume", "current"}), "state") == "intact");
        CHECK(str(s.at({"volume", "current"}), "version") == "0.116.0");
        json_object* v = json_object_array_get_idx(s.at({"volume", "versions"}), 0);
        CHECK(str(v, "source") == "image");
        CHECK(opamp::num(v, "binarySize") ==
              static_cast<int64_t>(
                  read_file(rig.install + "/versions/0.116.0/otelcol-contrib").size()));
        CHECK(s.at({"state", "journal"}) == nullptr);
        CHECK(s.at({"state", "trial"}) == nullptr);
        CHECK(str(s.at({"trustedRoot"}), "newestStart") == newest_start(trusted));
        CHECK(opamp::num(s.at({"trustedRoot"}), "ageSeconds") > 0);

        // A download the artifact server holds open (half the body, then nothing for 60 s).
        rig.offer({"0.117.0", v117, "stall=60"});
        const std::string part_file = rig.spool() + "/" + rig.sha_of(v117) + ".part";
        auto receiving = [&] {
            struct stat st {};
            return ::stat(part_file.c_str(), &st) == 0 && st.st_size > 0;
        };
        REQUIRE_MESSAGE(wait_until(receiving, 30s, 50ms), u.log());
        s = status(rig, "downloading");
        CHECK_MESSAGE(s.exit_code == 0, s.err);
        CHECK(str(s.at({"state", "journal"}), "phase") == "downloading");
        CHECK(str(s.at({"state", "journal"}), "to") == "0.117.0");
        CHECK(str(s.at({"state", "lastAttempt"}), "outcome") == "in-progress");
        json_object* dl = s.at({"state", "downloads"});
        bool part = false;
        for (size_t i = 0; i < json_object_array_length(dl); ++i) {
            json_object* f = json_object_array_get_idx(dl, i);
            part = part ||
                   (str(f, "file") == rig.sha_of(v117) + ".part" && opamp::num(f, "bytes") > 0);
        }
        CHECK_MESSAGE(part, s.out);
        CHECK(str(s.at({"volume", "current"}), "version") == "0.116.0");
        u.signal(SIGKILL);
        u.wait_exit(10s);
    }
    {
        // The critical section: held right after the journal says "starting" (`current` already
        // names the new version, its child not yet started).
        const std::string hold = rig.dir / "held";
        SpawnOptions held;
        held.env = {{"MYRIARCH_FAULT", "update.starting.after:hold"},
                    {"MYRIARCH_FAULT_HOLD", hold}};
        const size_t before = rig.mark();  // taken first: the agent may connect at once
        Updater u(rig.config(), Launch::pid1, held);
        rig.await_start(u, before);
        rig.offer({"0.117.0", v117});
        REQUIRE_MESSAGE(wait_until([&] { return exists(hold); }, 40s, 20ms), u.log());
        const auto install_before = wired::snapshot(rig.install);
        const auto state_before = wired::snapshot(rig.state);
        StatusRun s = status(rig, "critical");
        // Nothing else moves while the updater is held: status changed nothing it read.
        CHECK(wired::snapshot(rig.install) == install_before);
        CHECK(wired::snapshot(rig.state) == state_before);
        CHECK_MESSAGE(s.exit_code == 0, s.err);
        CHECK(str(s.at({"state", "journal"}), "op") == "update");
        CHECK(str(s.at({"state", "journal"}), "phase") == "starting");
        CHECK(str(s.at({"state", "journal"}), "from") == "0.116.0");
        CHECK(str(s.at({"volume", "current"}), "version") == "0.117.0");
        CHECK(str(s.at({"volume"}), "previous") == "0.116.0");
        CHECK(version_names(s) == std::vector<std::string>{"0.116.0", "0.117.0"});
        RunResult text = run({updater_bin(), "status", "--config", rig.config()}, 20s);
        CHECK_MESSAGE(text.out.find("in flight     update 0.116.0 -> 0.117.0, phase starting") !=
                          std::string::npos,
                      text.out);
        // Killed there: the journal stays for recovery, and status says so without PID 1.
        u.signal(SIGKILL);
        u.wait_exit(10s);
    }
    {
        StatusRun s = status(rig, "killed");
        CHECK_MESSAGE(s.exit_code == 0, s.err);
        CHECK(str(s.at({"state", "journal"}), "phase") == "starting");
        CHECK(str(s.at({"state", "lastAttempt"}), "outcome") == "in-progress");
    }
    {
        // Recovery puts 0.116.0 back; then 0.118.0 fails its health check and is rolled back.
        const size_t before = rig.mark();
        Updater u(rig.config());
        rig.await_start(u, before);
        StatusRun s = status(rig, "recovered");
        CHECK(str(s.at({"state", "lastAttempt"}), "outcome") == "interrupted");
        CHECK(str(s.at({"volume", "current"}), "version") == "0.116.0");
        Status st = final_status(rig, u, {"0.118.0", v118});
        CHECK(st.status == "InstallFailed");
        // The report goes out before the finish, which clears the journal, then writes
        // last-attempt.json and packages.json: status is judged once they are all on disk.
        REQUIRE(wait_until(
            [&] {
                return !exists(rig.state + "/journal.json") &&
                       read_file(rig.state + "/last-attempt.json").find("rolled-back") !=
                           std::string::npos &&
                       read_file(rig.state + "/packages.json").find("0.118.0") != std::string::npos;
            },
            20s, 50ms));
        RunResult text = run({updater_bin(), "status", "--config", rig.config()}, 20s);
        CHECK_MESSAGE(text.out.find("last offer    otelcol-contrib 0.118.0: install-failed: ") !=
                          std::string::npos,
                      text.out << read_file(rig.state + "/packages.json"));
        CHECK_MESSAGE(
            text.out.find("quarantined   package " + rig.sha_of(v118)) != std::string::npos,
            text.out);
        s = status(rig, "rolled-back");
        CHECK_MESSAGE(s.exit_code == 0, s.err);
        json_object* a = s.at({"state", "lastAttempt"});
        CHECK(str(a, "outcome") == "rolled-back");
        CHECK(str(a, "class") == "deterministic");
        json_object* q = s.at({"state", "quarantine"});
        REQUIRE_MESSAGE(q != nullptr, s.out);
        CHECK(str(q, "packageHash") == rig.sha_of(v118));
        CHECK(str(q, "version") == "0.118.0");
        CHECK(str(q, "reason") == str(a, "reason"));
        auto since = myr::parse_rfc3339(str(q, "since"));
        REQUIRE(since);
        CHECK(str(q, "until") == myr::format_rfc3339(*since + std::chrono::hours(1)));
        CHECK(s.at({"state", "journal"}) == nullptr);

        // The trial of 0.117.0.
        st = final_status(rig, u, {"0.117.0", v117});
        CHECK(st.status == "Installed");
        s = status(rig, "trial");
        CHECK_MESSAGE(s.exit_code == 0, s.err);
        json_object* t = s.at({"state", "trial"});
        REQUIRE_MESSAGE(t != nullptr, s.out);
        CHECK(str(t, "version") == "0.117.0");
        CHECK(str(t, "from") == "0.116.0");
        CHECK(opamp::num(t, "boots") == 0);
        CHECK(opamp::num(t, "maxBoots") == 3);
        CHECK(opamp::num(t, "secondsLeft") > 500);
        CHECK(str(s.at({"volume", "current"}), "version") == "0.117.0");

        // The human form fits 100 columns and names the same facts.
        text = run({updater_bin(), "status", "--config", rig.config()}, 20s);
        CHECK(text.exit_code == 0);
        std::istringstream lines(text.out);
        for (std::string l; std::getline(lines, l);) CHECK_MESSAGE(l.size() <= 100, l);
        CHECK_MESSAGE(
            text.out.find("trial         0.117.0 (from 0.116.0) until ") != std::string::npos,
            text.out);
        CHECK(u.stop() == 0);
    }
    CHECK(rig.storage_unchanged());
}

TEST_CASE("status: a missing volume and a hostile one are reported, no link is followed") {
    if (!have_jsonschema()) MYR_SKIP("python3-jsonschema is missing (scripts/deps.sh)");
    Rig rig;
    rig.configure(rig.release("0.116.0"));
    // Nothing there yet: exit 1, saying which directory is missing, and still the JSON.
    REQUIRE(run({"rm", "-rf", rig.install, rig.state}).exit_code == 0);
    StatusRun s = status(rig, "missing");
    CHECK(s.exit_code == 1);
    CHECK_MESSAGE(str(s.at({"volume"}), "problem").find(rig.install) != std::string::npos, s.out);
    CHECK_MESSAGE(s.err.find("No such file or directory") != std::string::npos, s.err);
    CHECK(!exists(rig.install));  // status created nothing
    CHECK(!exists(rig.state));
    // An empty volume (the mount point, nothing seeded).
    REQUIRE(run({"mkdir", "-p", rig.install}).exit_code == 0);
    s = status(rig, "empty");
    CHECK(s.exit_code == 1);
    CHECK_MESSAGE(
        str(s.at({"volume"}), "problem").find(rig.install + "/versions") != std::string::npos,
        s.out);
    CHECK(list_dir(rig.install).empty());

    // A volume with one good version, a symlink planted as a version directory (pointing at a
    // directory with a valid-looking marker) and a garbage marker.
    const std::string good = rig.install + "/versions/0.116.0";
    const std::string bin = rig.release("0.116.0");
    REQUIRE(run({"mkdir", "-p", good, rig.state, rig.dir / "outside"}).exit_code == 0);
    REQUIRE(run({"cp", bin, good + "/otelcol-contrib"}).exit_code == 0);
    const std::string sha = wired::sha256_of(bin);
    const std::string marker =
        "{\"version\":\"0.116.0\",\"binary\":\"otelcol-contrib\",\"sha256\":\"" + sha +
        "\",\"size\":" + std::to_string(read_file(bin).size()) +
        ",\"source\":\"image\",\"previousVersion\":\"\","
        "\"installedAt\":\"2026-12-01T00:00:00Z\"}\n";
    write_file(good + "/install.json", marker);
    REQUIRE(run({"ln", "-s", "versions/0.116.0", rig.install + "/current"}).exit_code == 0);
    REQUIRE(run({"ln", "-s", rig.dir / "outside", rig.install + "/versions/0.200.0"}).exit_code ==
            0);
    REQUIRE(run({"mkdir", "-p", rig.install + "/versions/0.150.0"}).exit_code == 0);
    write_file(rig.install + "/versions/0.150.0/install.json", "{\"version\": \xff garbage");
    StatusRun h = status(rig, "hostile");
    CHECK(h.exit_code == 1);
    CHECK(version_names(h) == std::vector<std::string>{"0.116.0", "0.150.0", "0.200.0"});
    json_object* list = h.at({"volume", "versions"});
    CHECK(opamp::flag(json_object_array_get_idx(list, 0), "intact"));
    CHECK_MESSAGE(str(json_object_array_get_idx(list, 1), "problem").find("install.json") !=
                      std::string::npos,
                  h.out);
    CHECK_MESSAGE(
        str(json_object_array_get_idx(list, 2), "problem").find("symlink") != std::string::npos,
        h.out);
    CHECK(str(h.at({"volume", "current"}), "state") == "intact");
    CHECK(json_object_array_length(h.at({"problems"})) == 2);
    CHECK(list_dir(rig.dir / "outside").empty());
    // The text form says the same, one PROBLEM line each, and exits 1 too.
    RunResult text = run({updater_bin(), "status", "--config", rig.config()}, 20s);
    CHECK(text.exit_code == 1);
    CHECK_MESSAGE(text.out.find("PROBLEM       " + rig.install + "/versions/0.200.0: not intact") !=
                      std::string::npos,
                  text.out);
}
