#include "loop/step.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "loop/fake_scheduler.hpp"

using namespace myr;

TEST_CASE("post_job: the work's result arrives on the loop, never from inside the call") {
    loop::FakeScheduler s;
    std::optional<Result<int>> got;
    auto step = loop::post_job<int>(
        s, "count", [] { return Result<int>(42); }, [&](Result<int> r) { got = std::move(r); });
    CHECK(!got);
    CHECK(s.queued_work() == 1);
    s.run_pending();
    REQUIRE(got);
    REQUIRE(got->ok());
    CHECK(**got == 42);
}

TEST_CASE("post_job: destroying the step silences the answer, the work still runs") {
    loop::FakeScheduler s;
    bool ran = false, answered = false;
    auto step = loop::post_job<void>(
        s, "tidy",
        [&]() -> Status {
            ran = true;
            return {};
        },
        [&](Status) { answered = true; });
    step.reset();
    s.run_pending();
    CHECK(ran);
    CHECK_FALSE(answered);
}

TEST_CASE("post_job: a job dropped by a shutdown answers cancelled, naming what it was") {
    loop::FakeScheduler s;
    std::optional<Status> got;
    auto step = loop::post_job<void>(
        s, "volume", []() -> Status { return {}; }, [&](Status st) { got = std::move(st); });
    s.cancel_work();
    REQUIRE(got);
    REQUIRE(!got->ok());
    CHECK(got->error().code() == Errc::cancelled);
    CHECK(got->error().message() == "volume: dropped by shutdown");
}
