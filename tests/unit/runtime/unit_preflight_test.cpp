// Host mode's preflight port: the unit's account read through systemctl, resolved in the passwd
// and group files, handed to the real preflighter; each way it fails ends the preflight, named,
// without running the staged binary.
#include "runtime/unit_preflight.hpp"

#include <doctest/doctest.h>

#include <optional>

#include "harness.hpp"
#include "loop/fake_scheduler.hpp"

using namespace myr;

namespace {

// Records the request it was given instead of running anything.
class RecordingPreflighter : public stage::Preflighter {
  public:
    std::unique_ptr<loop::Step> run(stage::PreflightRequest r, stage::PreflightDone done) override {
        seen = std::move(r);
        done(stage::PreflightReport{"0.150.0", 0, {}});
        return std::make_unique<loop::Step>();
    }
    std::optional<stage::PreflightRequest> seen;
};

struct Rig {
    loop::FakeScheduler sched;
    test::TempDir dir;
    RecordingPreflighter inner;
    std::vector<std::vector<std::string>> calls;
    // What `systemctl show` answers: its exit code and output.
    int exit_code = 0;
    std::string answer =
        "User=otelcol\nGroup=\nDynamicUser=no\nEnvironment=GOMAXPROCS=2 \"SITE=edge 7\"\n";
    std::unique_ptr<runtime::UnitPreflighter> port;
    std::optional<Result<stage::PreflightReport>> result;

    Rig() {
        test::write_file(dir.path() + "/passwd",
                         "root:x:0:0::/root:/bin/sh\n"
                         "otelcol:x:998:997::/:/usr/sbin/nologin\n");
        test::write_file(dir.path() + "/group", "root:x:0:\notelcol:x:997:\n");
        auto systemctl = [this](const std::vector<std::string>& args, Duration,
                                std::function<void(Result<proc::Captured>)> done) {
            calls.push_back(args);
            proc::Captured c;
            c.wait_status = exit_code << 8;
            c.output = answer;
            sched.post([done, c] { done(c); });
        };
        port = std::make_unique<runtime::UnitPreflighter>(
            systemctl, sched, inner,
            runtime::UnitPreflightSettings{"opampsupervisor.service", dir.path() + "/passwd",
                                           dir.path() + "/group"});
    }
    void preflight() {
        stage::PreflightRequest r;
        r.binary = "/var/lib/myriarch/collector/.staging/x/otelcol-contrib";
        auto step = port->run(r, [this](Result<stage::PreflightReport> rr) { result = rr; });
        for (int i = 0; i < 10 && !result; i++) sched.run_pending();
    }
};

}  // namespace

TEST_CASE("unit preflight: the staged binary runs as the unit's User= with its Environment=") {
    Rig rig;
    rig.preflight();
    REQUIRE(rig.calls.size() == 1);
    CHECK(rig.calls[0] == std::vector<std::string>{"show", "-p",
                                                   "User,Group,DynamicUser,Environment", "--",
                                                   "opampsupervisor.service"});
    REQUIRE(rig.result.has_value());
    CHECK(rig.result->ok());
    REQUIRE(rig.inner.seen.has_value());
    CHECK(rig.inner.seen->uid == 998);
    CHECK(rig.inner.seen->gid == 997);
    CHECK(rig.inner.seen->env == std::vector<std::string>{"GOMAXPROCS=2", "SITE=edge 7"});
    CHECK(rig.inner.seen->binary == "/var/lib/myriarch/collector/.staging/x/otelcol-contrib");
}

TEST_CASE("unit preflight: an account that cannot be resolved fails it before anything runs") {
    Rig rig;
    rig.answer = "User=collector\nGroup=\nDynamicUser=no\nEnvironment=\n";
    rig.preflight();
    REQUIRE(rig.result.has_value());
    REQUIRE_FALSE(rig.result->ok());
    CHECK(rig.result->error().message() ==
          "preflight: the account of unit opampsupervisor.service: User=collector is not in "
          "/etc/passwd");
    CHECK_FALSE(rig.inner.seen.has_value());

    Rig failed;
    failed.exit_code = 1;
    failed.answer = "Failed to connect to bus: No such file or directory\n";
    failed.preflight();
    REQUIRE(failed.result.has_value());
    REQUIRE_FALSE(failed.result->ok());
    CHECK(failed.result->error().message().find(
              "systemctl show exit 1: Failed to connect to bus") != std::string::npos);
    CHECK_FALSE(failed.inner.seen.has_value());
}
