// Preflight with real processes: fake-otelcol "releases" (its trailer says how --version and
// validate behave) run through the real Reaper on a real loop.
#include "stage/preflight.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <optional>
#include <sstream>

#include "harness.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"
#include "proc/reaper.hpp"

using namespace myr;
using namespace std::chrono_literals;

namespace {

// A staged "release": fake-otelcol with a trailer, in a directory any user may enter.
struct Release {
    myr::test::TempDir dir;
    std::string binary;
    std::string record;  // FAKE_OTELCOL_RECORD: one line per start, "<pid> <version> <args…>"

    explicit Release(const std::string& trailer) {
        ::chmod(dir.path().c_str(), 0755);
        binary = dir / "otelcol-contrib";
        record = dir / "starts";
        myr::test::write_file(binary,
                              myr::test::read_file(myr::test::env_path("MYRIARCH_FAKE_OTELCOL")) +
                                  "\n#MYRIARCH-FAKE " + trailer + "\n",
                              0755);
        // The Reaper's children inherit our environment.
        ::setenv("FAKE_OTELCOL_RECORD", record.c_str(), 1);
    }
    ~Release() { ::unsetenv("FAKE_OTELCOL_RECORD"); }

    // The recorded starts, each "<pid> <version> <args…>".
    std::vector<std::string> starts() const {
        std::vector<std::string> out;
        std::istringstream in(myr::test::read_file(record));
        for (std::string line; std::getline(in, line);) out.push_back(line);
        return out;
    }

    stage::PreflightRequest request(const std::string& expected = "0.118.0") const {
        stage::PreflightRequest r;
        r.binary = binary;
        r.expected_version = expected;
        r.validate_args = {"validate", "--config=" + dir / "config.yaml"};
        r.version_timeout = 5s;
        r.validate_timeout = 10s;
        return r;
    }
};

Result<stage::PreflightReport> preflight(stage::PreflightRequest req) {
    loop::Loop loop;
    std::optional<Result<stage::PreflightReport>> out;
    int calls = 0;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        stage::ReaperPreflighter preflighter(reaper, sched);
        auto p = preflighter.run(std::move(req), [&](Result<stage::PreflightReport> r) {
            ++calls;
            out = std::move(r);
        });
        CHECK_FALSE(out.has_value());  // never from inside the call
        CHECK(loop.run_until([&] { return out.has_value(); }, 20s));
        // Exactly once: nothing more arrives on later turns.
        loop.run_until([] { return false; }, Duration(100));
    }
    CHECK(calls == 1);
    CHECK(loop.close() == 0);
    REQUIRE(out.has_value());
    return std::move(*out);
}

bool contains(const Result<stage::PreflightReport>& r, const std::string& text) {
    return !r.ok() && r.error().message().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("preflight: a release that names the offered version and validates passes") {
    Release rel("version=0.118.0 validate=ok");
    auto r = preflight(rel.request());
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    CHECK(r->version == "0.118.0");
    CHECK(r->peak_rss_kib > 0);
    CHECK(r->validate_time >= Duration(0));
    // --version, then validate with the arguments as given.
    auto starts = rel.starts();
    REQUIRE(starts.size() == 2);
    CHECK(starts[0].find(" 0.118.0 --version") != std::string::npos);
    CHECK(starts[1].find(" 0.118.0 validate --config=" + rel.dir / "config.yaml") !=
          std::string::npos);
}

TEST_CASE("preflight: the validate run's peak memory is reported") {
    Release rel("version=0.118.0 validate_alloc_mb=48");
    auto r = preflight(rel.request());
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    CHECK(r->peak_rss_kib >= 48 * 1024);
    CHECK(r->peak_rss_kib < 200 * 1024);
    MESSAGE("fake-otelcol validate holding 48 MiB: peak RSS " << r->peak_rss_kib << " KiB");
    Release small("version=0.118.0");
    auto s = preflight(small.request());
    REQUIRE(s.ok());
    MESSAGE("fake-otelcol validate: peak RSS " << s->peak_rss_kib << " KiB");
    CHECK(s->peak_rss_kib < r->peak_rss_kib);
}

TEST_CASE("preflight: another version than the offered one is refused, and validate never runs") {
    Release rel("version=0.117.0");
    auto r = preflight(rel.request("0.118.0"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::invalid);
    CHECK(contains(r, "preflight: " + rel.binary +
                          " --version reports version 0.117.0, "
                          "expected 0.118.0"));
    CHECK(rel.starts().size() == 1);
}

TEST_CASE("preflight: --version without a version, or failing, is refused with its output") {
    {
        Release rel("version=0.118.0 version_output=garbage");
        auto r = preflight(rel.request());
        CHECK(r.error().code() == Errc::invalid);
        CHECK(contains(r, "--version printed no version: Segmentation fault?! ?? not a version"));
    }
    {
        Release rel("version=0.118.0 version_output=empty");
        auto r = preflight(rel.request());
        CHECK(r.error().code() == Errc::invalid);
        CHECK(contains(r, "--version printed no version (no output)"));
    }
    {
        Release rel("version=0.118.0 version_output=fail");
        auto r = preflight(rel.request());
        CHECK(r.error().code() == Errc::process);
        CHECK(contains(r,
                       "--version ended with exit code 1: fake-otelcol: --version failed on "
                       "purpose"));
    }
}

// A run that hangs: timed out, and its process group is gone (killed and reaped).
static void check_timed_out(const Release& rel, const Result<stage::PreflightReport>& r,
                            size_t runs, const std::string& text) {
    REQUIRE_FALSE(r.ok());
    INFO(r.error().message());
    CHECK(r.error().code() == Errc::timeout);
    CHECK(contains(r, text));
    auto starts = rel.starts();
    REQUIRE(starts.size() == runs);
    CHECK(::kill(-std::stoi(starts.back()), 0) != 0);
}

TEST_CASE("preflight: a --version that hangs is killed at its timeout") {
    Release rel("version=0.118.0 version_output=hang");
    auto req = rel.request();
    req.version_timeout = Duration(300);
    check_timed_out(rel, preflight(req), 1,
                    "preflight: " + rel.binary + " --version timed out after 300ms (killed)");
}

TEST_CASE("preflight: a failing validate is refused with its last lines of output") {
    Release rel(
        "version=0.118.0 validate=fail validate_message=exporter_otlp_has_no_endpoint "
        "validate_lines=30");
    auto r = preflight(rel.request());
    REQUIRE_FALSE(r.ok());
    INFO(r.error().message());
    CHECK(r.error().code() == Errc::process);
    CHECK(
        contains(r, "preflight: validate (" + rel.binary + " validate) ended with exit code 1: "));
    // The last ten lines: 22…30 and the error.
    CHECK(contains(r, "validate line 22 | validate line 23"));
    CHECK(contains(r, "validate line 30 | Error: exporter otlp has no endpoint"));
    CHECK_FALSE(contains(r, "validate line 21"));
}

TEST_CASE("preflight: long output lines are cut to 2 KiB in the reason") {
    Release rel("version=0.118.0 validate=fail validate_message=" + std::string(5000, 'x'));
    auto r = preflight(rel.request());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().size() < 2048 + 400);
    CHECK(contains(r, std::string(2000, 'x')));
}

TEST_CASE("preflight: a validate that hangs is killed with its group at the timeout") {
    Release rel("version=0.118.0 validate=hang validate_lines=3");
    auto req = rel.request();
    req.validate_timeout = Duration(400);
    // What it printed before it hung is in the reason.
    check_timed_out(rel, preflight(req), 2,
                    "preflight: validate (" + rel.binary +
                        " validate) timed out after 400ms (killed): validate line 1 | validate "
                        "line 2 | validate line 3");
}

TEST_CASE("preflight: destroying a running preflight kills the group and calls nobody") {
    Release rel("version=0.118.0 validate=hang");
    loop::Loop loop;
    bool called = false;
    pid_t pid = -1;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        stage::ReaperPreflighter preflighter(reaper, sched);
        auto p =
            preflighter.run(rel.request(), [&](Result<stage::PreflightReport>) { called = true; });
        REQUIRE(loop.run_until([&] { return rel.starts().size() == 2; }, 10s));
        pid = std::stoi(rel.starts()[1]);
        CHECK(::kill(pid, 0) == 0);
        p.reset();
        // The Reaper collects it on the loop; nothing is called back.
        CHECK(loop.run_until([&] { return !reaper.watching(pid); }, 5s));
        loop.run_until([] { return false; }, Duration(300));
    }
    CHECK_FALSE(called);
    CHECK(::kill(pid, 0) != 0);
    CHECK(loop.close() == 0);
}

TEST_CASE("preflight: a binary that cannot be run is a process error naming it") {
    Release rel("version=0.118.0");
    auto req = rel.request();
    req.binary = rel.dir / "missing";
    auto r = preflight(req);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::process);
    CHECK(contains(r, req.binary));
    CHECK(r.error().sys_errno() == ENOENT);
}

TEST_CASE("preflight: runs as the supervisor's user and group") {
    if (!myr::test::is_root()) MYR_SKIP("switching users needs root");
    Release rel("version=0.118.0 validate=fail validate_ids=1");
    auto req = rel.request();
    req.uid = 65534;
    req.gid = 65534;
    auto r = preflight(req);
    REQUIRE_FALSE(r.ok());
    CHECK(contains(r, "validate uid=65534 gid=65534"));
    // And as ourselves when no user is given.
    Release self("version=0.118.0 validate=fail validate_ids=1");
    auto s = preflight(self.request());
    CHECK(contains(s, "validate uid=0 gid=0"));
}
