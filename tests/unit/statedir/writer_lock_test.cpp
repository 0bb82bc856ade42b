#include "statedir/writer_lock.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.hpp"

using namespace myr;

// flock belongs to the open file description: a second take() in this very process conflicts
// with the first exactly as another process would.
TEST_CASE("writer lock: one holder at a time, named to the next; released with its holder") {
    test::TempDir tmp;
    auto dir = statedir::StateDir::open(tmp / "state");
    REQUIRE(dir);
    std::optional<statedir::WriterLock> first;
    {
        auto l = statedir::WriterLock::take(*dir, "2026-12-02T10:00:00Z");
        REQUIRE(l);
        first.emplace(std::move(*l));
    }
    CHECK(first->held());
    const std::string line = test::read_file(tmp / "state/.lock");
    CHECK(line ==
          "pid " + std::to_string(::getpid()) + " on " + line.substr(line.find(" on ") + 4));
    CHECK(line.find(" since 2026-12-02T10:00:00Z\n") != std::string::npos);
    struct stat st {};
    REQUIRE(::stat((tmp / "state/.lock").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    auto second = statedir::WriterLock::take(*dir, "2026-12-02T11:00:00Z");
    REQUIRE(!second);
    CHECK(second.error().code() == Errc::invalid);
    const std::string want = "state directory " + tmp / "state" +
                             " is in use by another updater (pid " + std::to_string(::getpid());
    CHECK_MESSAGE(second.error().message().rfind(want, 0) == 0, second.error().message());
    CHECK(second.error().message().find("since 2026-12-02T10:00:00Z)") != std::string::npos);
    // The refused one changed nothing.
    CHECK(test::read_file(tmp / "state/.lock") == line);

    first.reset();
    auto third = statedir::WriterLock::take(*dir, "2026-12-02T12:00:00Z");
    REQUIRE(third);
    CHECK(test::read_file(tmp / "state/.lock").find(" since 2026-12-02T12:00:00Z\n") !=
          std::string::npos);
}

TEST_CASE("writer lock: a symlink or a directory as the lock file is refused") {
    test::TempDir tmp;
    auto dir = statedir::StateDir::open(tmp / "state");
    REQUIRE(dir);
    const std::string target = tmp / "elsewhere";
    test::write_file(target, "keep");
    REQUIRE(::symlink(target.c_str(), (tmp / "state/.lock").c_str()) == 0);
    auto l = statedir::WriterLock::take(*dir, "t");
    REQUIRE(!l);
    CHECK(l.error().message().find("state directory lock " + tmp / "state/.lock") == 0);
    CHECK(test::read_file(target) == "keep");
    REQUIRE(::unlink((tmp / "state/.lock").c_str()) == 0);
    REQUIRE(::mkdir((tmp / "state/.lock").c_str(), 0700) == 0);
    CHECK(!statedir::WriterLock::take(*dir, "t"));
}
