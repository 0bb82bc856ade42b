// The real binary as PID 1 installing a package that an OpAMP peer whose codec we did not write
// offers (tests/interop/opamp-peer.mjs with MYR_PEER_RELEASE: `ws` and the protobuf-es code
// @elastic/opamp-client-node generated from the upstream opamp.proto). The artifact is a real
// release archive served by tests/servers/artifact_server.py, so every step runs: download,
// digest, extraction, preflight, swap, health, commit.
#include <doctest/doctest.h>
#include <json-c/json.h>

#include "core/hex.hpp"
#include "harness.hpp"
#include "pid1.hpp"

using namespace myr::test;

namespace {

std::string first_word(const std::string& s) {
    return s.substr(0, s.find_first_of(" \n"));
}

// A stand-in collector release reporting `version` (fake-otelcol reads its trailer).
std::string fake_collector(const std::string& path, const std::string& version) {
    REQUIRE(run({"cp", env_path("MYRIARCH_FAKE_OTELCOL"), path}).exit_code == 0);
    std::string bin = read_file(path);
    write_file(path, bin + "\n#MYRIARCH-FAKE version=" + version + " health=ok\n", 0755);
    return path;
}

}  // namespace

TEST_CASE(
    "interop: an independent OpAMP peer offers a package and sees it Installed with the new "
    "version, which the first report after a restart still says") {
    if (run({"sh", "-c", "command -v node"}, 10s).exit_code != 0) MYR_SKIP("node is not installed");
    if (!exists(source_dir() + "/tests/interop/node_modules/@elastic/opamp-client-node")) {
        MYR_SKIP(
            "tests/interop/node_modules is missing (run npm install --no-audit --no-fund there)");
    }
    if (!can_run_pid1()) return;
    TempDir dir;
    run({"mkdir", "-p", dir / "rel", dir / "art", dir / "install", dir / "state", dir / "storage"});
    fake_collector(dir / "seed", "0.116.0");
    fake_collector(dir / "rel/otelcol-contrib", "0.117.0");
    REQUIRE(run({"tar", "czf", dir / "art/otelcol-contrib_0.117.0.tar.gz", "-C", dir / "rel",
                 "otelcol-contrib"})
                .exit_code == 0);
    RunResult sum = run({"sha256sum", dir / "art/otelcol-contrib_0.117.0.tar.gz"});
    REQUIRE(sum.exit_code == 0);

    auto artifacts = Process::spawn({"python3", source_dir() + "/tests/servers/artifact_server.py",
                                     "--dir", dir / "art", "--port-file", dir / "aport"});
    REQUIRE_MESSAGE(wait_until([&] { return !read_file(dir / "aport").empty(); }, 20s),
                    artifacts.err());
    const std::string prefix = "http://127.0.0.1:" + read_file(dir / "aport") + "/artifacts/";
    write_file(dir / "release.json",
               "{\"url\":\"" + prefix + "otelcol-contrib_0.117.0.tar.gz\",\"sha256\":\"" +
                   first_word(sum.out) + "\",\"version\":\"0.117.0\",\"from\":\"0.116.0\"}");
    SpawnOptions peer_env;
    peer_env.env["MYR_PEER_RELEASE"] = dir / "release.json";
    auto peer = Process::spawn(
        {"node", source_dir() + "/tests/interop/opamp-peer.mjs", dir / "port", dir / "result.json"},
        peer_env);
    REQUIRE_MESSAGE(wait_until([&] { return !read_file(dir / "port").empty(); }, 20s), peer.err());

    write_file(dir / "effective.yaml", "");
    write_file(dir / "updater.yaml",
               "server:\n"
               "  endpoint: ws://127.0.0.1:" +
                   read_file(dir / "port") +
                   "/v1/opamp\n"
                   "update:\n"
                   "  requireSignature: false\n"
                   "  allowedDownloadPrefixes: [\"" +
                   prefix +
                   "\"]\n"
                   "  healthTimeout: 20s\n"
                   "  healthSuccesses: 2\n"
                   "  healthInterval: 200ms\n"
                   "collector:\n"
                   "  installDir: " +
                   dir / "install" +
                   "\n"
                   "  stateDir: " +
                   dir / "state" +
                   "\n"
                   "  healthUrl: \"\"\n"
                   "  configFile: " +
                   dir / "effective.yaml" +
                   "\n"
                   "supervisor:\n"
                   "  storageDir: " +
                   dir / "storage" +
                   "\n"
                   "  healthUrl: \"\"\n"
                   "container:\n"
                   "  supervisorCommand: [\"" +
                   env_path("MYRIARCH_FAKE_OPAMPSUPERVISOR") + "\", \"--storage-dir\", \"" +
                   dir / "storage" + "\", \"--agent\", \"" +
                   dir / "install/current/otelcol-contrib" +
                   "\"]\n"
                   "  seedBinary: " +
                   dir / "seed" +
                   "\n"
                   "  stopTimeout: 5s\n"
                   "  healthListen: \"\"\n");
    Updater updater(dir / "updater.yaml");
    REQUIRE_MESSAGE(wait_until([&] { return !read_file(dir / "result.json").empty(); }, 70s),
                    peer.err() << updater.log());
    CHECK(updater.stop() == 0);

    json_object* result = json_tokener_parse(read_file(dir / "result.json").c_str());
    REQUIRE(result);
    json_object* failures = nullptr;
    REQUIRE(json_object_object_get_ex(result, "failures", &failures));
    for (size_t i = 0; i < json_object_array_length(failures); ++i) {
        json_object* f = json_object_array_get_idx(failures, i);
        FAIL_CHECK("peer: " << std::string(json_object_get_string(f)));
    }
    json_object* ok = nullptr;
    CHECK((json_object_object_get_ex(result, "ok", &ok) && json_object_get_boolean(ok)));
    json_object_put(result);
    // The peer's word is checked against the volume: the new version is what `current` names.
    RunResult link = run({"readlink", dir / "install/current"});
    CHECK(link.out.find("0.117.0") != std::string::npos);
    // One line per state change, the last one too: an install passes more states than the log's
    // rate limit lets through for one message. With the default config the install ends on
    // trial (update.trialPeriod 10m) and the stop drops the trial to idle.
    for (const char* state :
         {"checking", "downloading", "verifying", "staging", "preflight", "stopping", "swapping",
          "starting", "health-checking", "trial", "idle"}) {
        CHECK_MESSAGE(updater.log_has(std::string("msg=\"update: state\" state=") + state),
                      std::string(state) << "\n"
                                         << updater.log());
    }
    CHECK_FALSE(updater.log_has("suppressed="));
    CHECK(updater.count("preflight passed") == 1);
    peer.wait(5s);

    // A restart, now against the project's test server: the first report still says Installed,
    // and the same offer again (same all_packages_hash) is nothing to do.
    auto server =
        Process::spawn({env_path("MYRIARCH_OPAMP_TEST_SERVER"), "--port", "0", "--port-file",
                        dir / "oport", "--record", dir / "rec.jsonl", "--commands", dir / "cmds"});
    REQUIRE_MESSAGE(wait_until([&] { return !read_file(dir / "oport").empty(); }, 20s),
                    server.err());
    std::string yaml = read_file(dir / "updater.yaml");
    const std::string old_endpoint = "127.0.0.1:" + read_file(dir / "port") + "/";
    yaml.replace(yaml.find(old_endpoint), old_endpoint.size(),
                 "127.0.0.1:" + first_word(read_file(dir / "oport")) + "/");
    write_file(dir / "updater.yaml", yaml);
    Updater again(dir / "updater.yaml");
    REQUIRE_MESSAGE(
        wait_until(
            [&] { return read_file(dir / "rec.jsonl").find("\"message\"") != std::string::npos; },
            20s),
        again.log());
    std::string first = read_file(dir / "rec.jsonl");
    json_object* rec = nullptr;
    for (size_t at = 0, nl; (nl = first.find('\n', at)) != std::string::npos; at = nl + 1) {
        json_object* o = json_tokener_parse(first.substr(at, nl - at).c_str());
        json_object* ev = nullptr;
        if (o && json_object_object_get_ex(o, "event", &ev) &&
            std::string(json_object_get_string(ev)) == "message") {
            rec = o;
            break;
        }
        if (o) json_object_put(o);
    }
    REQUIRE(rec);
    INFO(json_object_to_json_string(rec));
    json_object *ps = nullptr, *pkgs = nullptr;
    REQUIRE(json_object_object_get_ex(rec, "package_statuses", &ps));
    REQUIRE(json_object_object_get_ex(ps, "packages", &pkgs));
    REQUIRE(json_object_array_length(pkgs) == 1);
    std::string status = json_object_to_json_string(json_object_array_get_idx(pkgs, 0));
    CHECK(status.find("\"Installed\"") != std::string::npos);
    CHECK(status.find("\"0.117.0\"") != std::string::npos);
    json_object_put(rec);
    // The peer's package hash and all_packages_hash (opamp-peer.mjs), offered again.
    auto hexs = [](const std::string& t) { return myr::hex::encode(t.data(), t.size()); };
    write_file(dir / "again.txt", "name=otelcol-contrib\nversion=0.117.0\nurl=" + prefix +
                                      "otelcol-contrib_0.117.0.tar.gz\nsha256=" +
                                      first_word(sum.out) + "\nhash=" + hexs("package-hash-1") +
                                      "\nall_hash=" + hexs("all-packages-hash-1") + "\n");
    write_file(dir / "cmds", "release=" + dir / "again.txt" + "\n");
    CHECK_MESSAGE(again.wait_for_log("update: offer already installed", 15s), again.log());
    CHECK_FALSE(again.log_has("state=checking"));
    CHECK(again.stop() == 0);
}
