#include "statedir/state_dir.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "harness.hpp"

using namespace myr;

TEST_CASE("state dir: opened when there, created when missing, entries named under it") {
    test::TempDir tmp;
    auto made = statedir::StateDir::open(tmp / "state");
    REQUIRE(made);
    CHECK(made->is_open());
    CHECK(made->path() == tmp / "state");
    CHECK(made->path_of(statedir::entry::journal) == tmp / "state/journal.json");
    struct stat st {};
    REQUIRE(::stat((tmp / "state").c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    // Reached through the fd, not the path.
    int fd = ::openat(made->fd(), "probe", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    ::close(fd);
    CHECK(test::exists(tmp / "state/probe"));
    auto again = statedir::StateDir::open(tmp / "state");
    REQUIRE(again);
}

TEST_CASE("state dir: copies share the one open directory") {
    test::TempDir tmp;
    auto made = statedir::StateDir::open(tmp.path());
    REQUIRE(made);
    std::optional<statedir::StateDir> copy(*made);
    CHECK(copy->fd() == made->fd());
    made = statedir::StateDir();  // the original handle goes; the copy still works
    CHECK(!made->is_open());
    CHECK(made->fd() == -1);
    struct stat st {};
    CHECK(::fstat(copy->fd(), &st) == 0);
}

TEST_CASE("state dir: a relative path, a symlink or a missing parent is an error naming it") {
    test::TempDir tmp;
    auto relative = statedir::StateDir::open("state");
    REQUIRE(!relative);
    CHECK(relative.error().code() == Errc::invalid);
    CHECK(relative.error().message().find("state: not an absolute path") != std::string::npos);

    REQUIRE(::symlink(tmp.path().c_str(), (tmp / "link").c_str()) == 0);
    auto link = statedir::StateDir::open(tmp / "link");
    REQUIRE(!link);
    CHECK(link.error().message().find(tmp / "link") != std::string::npos);

    auto orphan = statedir::StateDir::open(tmp / "missing/state");
    REQUIRE(!orphan);
    CHECK(orphan.error().message().find(tmp / "missing/state") != std::string::npos);
}
