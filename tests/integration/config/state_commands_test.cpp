// `forget` and `status` through the real binary on a state directory a test plants (issue 43, item
// 10): forget creates nothing, and neither prints a state file's control characters raw.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "harness.hpp"

using namespace myr::test;

namespace {

// A configuration whose volume and state directory are under `dir`; nothing is created.
std::string config_in(const TempDir& dir) {
    const std::string path = dir / "updater.yaml";
    write_file(path,
               "update:\n  requireSignature: false\n  trustedRootFile: \"\"\n"
               "collector:\n  installDir: " +
                   dir / "install" + "\n  stateDir: " + dir / "state" + "\n");
    return path;
}

// ESC [ 31 m, a carriage return, the 8-bit CSI (U+009B) and DEL.
const std::string kHostile =
    "\x1b[31mred\rover\xc2\x9b"
    "2J\x7f";

// A deterministic failure of a package, with kHostile in each of its strings.
void plant_quarantine(const TempDir& dir) {
    run({"mkdir", "-p", dir / "state"});
    write_file(dir / "state/last-attempt.json",
               "{\"packageHash\":\"" + std::string(64, 'b') + "\",\"version\":\"0.117.0" +
                   kHostile + "\",\"outcome\":\"failed\",\"reason\":\"hash mismatch " + kHostile +
                   "\",\"at\":\"2027-01-15T07:30:00Z" + kHostile +
                   "\",\"class\":\"deterministic\"}\n");
}

void check_no_raw_controls(const std::string& out) {
    INFO(out);
    for (const char* raw : {"\x1b", "\r", "\xc2\x9b", "\x7f"}) {
        CAPTURE(std::string(raw));
        CHECK(out.find(raw) == std::string::npos);
    }
}

}  // namespace

TEST_CASE("forget: a missing state directory is an error naming it, and nothing is created") {
    TempDir dir;
    RunResult r = run({updater_bin(), "forget", "--config", config_in(dir)});
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(r.err.find(dir / "state") != std::string::npos, r.err);
    CHECK_MESSAGE(r.err.find("No such file or directory") != std::string::npos, r.err);
    CHECK_FALSE(exists(dir / "state"));
    CHECK(r.out.empty());
}

TEST_CASE("forget: what it lifts is printed with the state file's control characters written out") {
    TempDir dir;
    plant_quarantine(dir);
    RunResult r = run({updater_bin(), "forget", "--config", config_in(dir)});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.out.rfind("lifted the quarantine of 0.117.0\\x1b[31mred\\x0dover", 0) == 0);
    check_no_raw_controls(r.out);
    // Lifted: the file says so.
    CHECK(read_file(dir / "state/last-attempt.json").find("\"lifted\"") != std::string::npos);
}

TEST_CASE("status: the text form writes out a state file's control characters") {
    TempDir dir;
    plant_quarantine(dir);
    RunResult r = run({updater_bin(), "status", "--config", config_in(dir)});
    // The volume is missing: a problem (exit 1), and the state directory is shown all the same.
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(r.out.find("0.117.0\\x1b[31mred\\x0dover") != std::string::npos, r.out);
    check_no_raw_controls(r.out);
    check_no_raw_controls(r.err);
}
