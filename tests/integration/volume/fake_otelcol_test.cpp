// The collector stand-in behaves as its trailer says (other modules' tests rely on it).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include "volume_support.hpp"

using namespace myr::test;

TEST_CASE("fake-otelcol: --version reports the trailer's version; the last trailer wins") {
    Volume v;
    std::string b = v.release("0.116.0");
    CHECK(run({b, "--version"}).out == "otelcol-contrib version 0.116.0\n");
    write_file(b, read_file(b) + "\n#MYRIARCH-FAKE version=0.117.0\n", 0755);
    CHECK(run({b, "--version"}).out == "otelcol-contrib version 0.117.0\n");
    CHECK(run({fake_otelcol(), "--version"}).out == "otelcol-contrib version 0.0.1\n");
}

TEST_CASE("fake-otelcol: --version can print garbage, nothing, fail or hang") {
    Volume v;
    RunResult g = run({v.release("1.0.0", "version_output=garbage"), "--version"});
    CHECK(g.exit_code == 0);
    CHECK(g.out.find("version 1.0.0") == std::string::npos);
    RunResult e = run({v.release("1.0.0", "version_output=empty"), "--version"});
    CHECK(e.exit_code == 0);
    CHECK(e.out.empty());
    CHECK(run({v.release("1.0.0", "version_output=fail"), "--version"}).exit_code == 1);
    RunResult h = run({v.release("1.0.0", "version_output=hang"), "--version"}, 500ms);
    CHECK(h.timed_out);
}

TEST_CASE("fake-otelcol: validate exits 0, or 1 with the message") {
    Volume v;
    CHECK(run({v.release("1.0.0"), "validate", "--config=/nonexistent"}).exit_code == 0);
    RunResult r = run({v.release("1.0.0", "validate=fail validate_message=bad_exporter_config"),
                       "validate", "--config=/x"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("bad exporter config") != std::string::npos);
}

TEST_CASE("fake-otelcol: serves 200 or 503 on its health port and stops on TERM") {
    Volume v;
    for (const std::string health : {"ok", "fail"}) {
        CAPTURE(health);
        int port = reserve_port();
        SpawnOptions o;
        o.env["FAKE_OTELCOL_HEALTH_PORT"] = std::to_string(port);
        Process p = Process::spawn({v.release("1.0.0", "health=" + health)}, o);
        int want = health == "ok" ? 200 : 503;
        CHECK(wait_until([&] { return http_get("127.0.0.1", port, "/").status == want; }, 10s));
        p.signal(SIGTERM);
        auto st = p.wait(10s);
        REQUIRE(st);
        CHECK(WIFEXITED(*st));
        CHECK(WEXITSTATUS(*st) == 0);
    }
}

TEST_CASE("fake-otelcol: the health port comes from the config's health_check endpoint") {
    Volume v;
    int port = reserve_port();
    std::string cfg = v.tmp / "config.yaml";
    write_file(cfg, "extensions:\n  health_check:\n    endpoint: 127.0.0.1:" +
                        std::to_string(port) + "\n");
    Process p = Process::spawn({v.release("1.0.0"), "--config=" + cfg});
    CHECK(wait_until([&] { return http_get("127.0.0.1", port, "/").status == 200; }, 10s));
    p.kill_now();
}

TEST_CASE("fake-otelcol: exits on its own after exit_after, and ignore_term ignores TERM") {
    Volume v;
    RunResult r = run({v.release("1.0.0", "exit_after=300ms exit_code=3")}, 10s);
    CHECK(r.exit_code == 3);
    Process p = Process::spawn({v.release("1.0.0", "ignore_term=1")});
    CHECK(wait_until([&] { return p.err().find("running") != std::string::npos; }, 10s));
    p.signal(SIGTERM);
    CHECK_FALSE(p.wait(500ms));  // still running: the wait is what is tested
    p.kill_now();
}
