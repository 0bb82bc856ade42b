// The agent against an OpAMP peer whose codec we did not write (tests/interop/opamp-peer.mjs:
// `ws` + the protobuf-es code @elastic/opamp-client-node generated from the upstream opamp.proto).
#include <doctest/doctest.h>

#include <thread>

#include "../opamp/opamp_support.hpp"

using namespace myr::test;
using namespace myr::test::opamp;

namespace {

bool node_available(std::string& why) {
    if (run({"sh", "-c", "command -v node"}, 10s).exit_code != 0) {
        why = "node is not installed";
        return false;
    }
    if (!exists(source_dir() + "/tests/interop/node_modules/@elastic/opamp-client-node") ||
        !exists(source_dir() + "/tests/interop/node_modules/ws")) {
        why = "tests/interop/node_modules is missing (run npm install --no-audit --no-fund there)";
        return false;
    }
    return true;
}

}  // namespace

TEST_CASE("interop: an independent OpAMP peer decodes every report and we decode its messages") {
    std::string why;
    if (!node_available(why)) {
        MYR_SKIP(why);
    }
    TempDir dir;
    write_file(dir / "token", "interop-token\n", 0600);
    auto peer = Process::spawn({"node", source_dir() + "/tests/interop/opamp-peer.mjs",
                                dir / "port", dir / "result.json", "interop-token"});
    REQUIRE_MESSAGE(wait_until([&] { return !read_file(dir / "port").empty(); }, 20s), peer.err());
    const std::string url = "ws://127.0.0.1:" + read_file(dir / "port") + "/v1/opamp";
    Driver agent(dir, url, {"--token-file", dir / "token"});
    REQUIRE_MESSAGE(wait_until([&] { return !read_file(dir / "result.json").empty(); }, 40s),
                    peer.err() << agent.err());
    CHECK(agent.stop() == 0);

    Json result = parse_json(read_file(dir / "result.json"));
    REQUIRE(result);
    json_object* failures = get(result.get(), "failures");
    REQUIRE(failures);
    for (size_t i = 0; i < json_object_array_length(failures); ++i) {
        FAIL_CHECK("peer: " << std::string(
                       json_object_get_string(json_object_array_get_idx(failures, i))));
    }
    CHECK(flag(result.get(), "ok"));
    CHECK(json_object_array_length(get(result.get(), "received")) >= 4);

    // What the agent decoded from the peer's ServerToAgent equals what the peer encoded.
    json_object* sent = get(result.get(), "sent");
    auto msgs = agent.server_messages();
    REQUIRE(msgs.size() >= 2);
    json_object* first = msgs[0].get();
    CHECK(str(first, "new_instance_uid") == str(sent, "new_instance_uid"));
    CHECK(num(first, "heartbeat_interval_seconds") == 1);
    json_object* pa = get(first, "packages_available");
    REQUIRE(pa);
    CHECK(str(pa, "all_packages_hash") == str(sent, "all_packages_hash"));
    json_object* p = json_object_array_get_idx(get(pa, "packages"), 0);
    REQUIRE(p);
    CHECK(str(p, "name") == "otelcol-contrib");
    CHECK(num(p, "type") == 0);
    CHECK(str(p, "version") == "0.117.0");
    CHECK(str(p, "hash") == str(sent, "package_hash"));
    CHECK(str(p, "content_hash") == str(sent, "content_hash"));
    CHECK(str(p, "signature") == str(sent, "signature"));
    CHECK(str(p, "download_url") ==
          "https://127.0.0.1:9443/artifacts/otelcol-contrib_0.117.0.tar.gz");
    CHECK(str(get(p, "headers"), "Authorization") == "Bearer artifact-token");
    CHECK(str(get(p, "headers"), "X-Trace") == "abc");
    CHECK(num(msgs[1].get(), "flags") == 1);  // ReportFullState
    // The adopted uid is stored.
    CHECK(read_file(agent.state_dir() + "/instance_uid") ==
          "0190a6f4-6c1e-7a3b-9c2d-0123456789ab\n");
    peer.wait(5s);
}

TEST_CASE("interop: the checked-in golden OpAMP encodings are what the upstream code makes") {
    // tests/unit/opamp/golden_test.cpp trusts these files without node; here node re-makes them
    // with the upstream-generated code, so a hand edit or a stale file cannot pass unnoticed.
    std::string why;
    if (!node_available(why)) {
        MYR_SKIP(why);
    }
    RunResult r = run({"node", source_dir() + "/tests/interop/make-golden.mjs", "--check",
                       source_dir() + "/tests/unit/opamp/golden"},
                      60s);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("cases match") != std::string::npos);
}
