#include "opamp/uid.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.hpp"

using namespace myr;
using namespace myr::opamp;

namespace {

statedir::StateDir open_state(const test::TempDir& dir) {
    return statedir::StateDir::open(dir.path()).value();
}

}  // namespace

TEST_CASE("uid: a UUIDv7 carries the time, version 7 and variant 10") {
    const WallTime t{std::chrono::milliseconds(0x0190a6f46c1eLL)};
    const Uid u = new_uuid_v7(t);
    const std::string text = uid_to_text(u);
    CHECK(text.size() == 36);
    CHECK(text.substr(0, 13) == "0190a6f4-6c1e");
    CHECK(text[14] == '7');
    CHECK((text[19] == '8' || text[19] == '9' || text[19] == 'a' || text[19] == 'b'));
    CHECK(u != new_uuid_v7(t));
}

TEST_CASE("uid: text form round-trips and rejects what is not a UUID") {
    auto u = uid_from_text("0190A6F4-6C1E-7A3B-9C2D-0123456789AB");
    REQUIRE(u);
    CHECK(uid_to_text(*u) == "0190a6f4-6c1e-7a3b-9c2d-0123456789ab");
    CHECK_FALSE(uid_from_text("0190a6f46c1e7a3b9c2d0123456789ab"));
    CHECK_FALSE(uid_from_text("0190a6f4-6c1e-7a3b-9c2d-0123456789ag"));
    CHECK_FALSE(uid_from_text("0190a6f4-6c1e-7a3b-9c2d+0123456789ab"));
    CHECK_FALSE(uid_from_text(""));
    CHECK(uid_from_bytes(uid_bytes(*u)).value() == *u);
    CHECK_FALSE(uid_from_bytes("short"));
}

TEST_CASE("uid: created once, stored 0600, and the same after a reload") {
    test::TempDir dir;
    auto a = load_or_create_instance_uid(open_state(dir), wall_now());
    REQUIRE(a);
    const std::string path = dir / "instance_uid";
    CHECK(test::read_file(path) == uid_to_text(*a) + "\n");
    struct stat st {};
    REQUIRE(stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    auto b = load_or_create_instance_uid(open_state(dir), wall_now());
    REQUIRE(b);
    CHECK(*a == *b);
}

TEST_CASE("uid: a stored server-assigned uid is what the next load returns") {
    test::TempDir dir;
    auto a = load_or_create_instance_uid(open_state(dir), wall_now());
    REQUIRE(a);
    auto n = uid_from_text("11111111-2222-7333-8444-555555555555");
    REQUIRE(n);
    REQUIRE(store_instance_uid(open_state(dir), *n));
    auto b = load_or_create_instance_uid(open_state(dir), wall_now());
    REQUIRE(b);
    CHECK(*b == *n);
}

TEST_CASE("uid: a damaged file is replaced by a new identity") {
    test::TempDir dir;
    test::write_file(dir / "instance_uid", "garbage\n", 0600);
    auto a = load_or_create_instance_uid(open_state(dir), wall_now());
    REQUIRE(a);
    CHECK(test::read_file(dir / "instance_uid") == uid_to_text(*a) + "\n");
}

TEST_CASE("uid: a symlink, a FIFO or a directory in place of the file is moved aside") {
    // Once each of these stopped the agent for good: it never started and never retried.
    for (const char* kind : {"symlink", "fifo", "directory"}) {
        CAPTURE(kind);
        test::TempDir dir;
        const std::string target = "0190a6f4-6c1e-7a3b-9c2d-0123456789ab\n";
        test::write_file(dir / "elsewhere", target);
        const std::string path = dir / "instance_uid";
        if (std::string(kind) == "symlink") {
            REQUIRE(symlink((dir / "elsewhere").c_str(), path.c_str()) == 0);
        } else if (std::string(kind) == "fifo") {
            REQUIRE(mkfifo(path.c_str(), 0600) == 0);
        } else {
            REQUIRE(mkdir(path.c_str(), 0700) == 0);
        }
        auto a = load_or_create_instance_uid(open_state(dir), wall_now());
        REQUIRE(a);
        CHECK(uid_to_text(*a) != "0190a6f4-6c1e-7a3b-9c2d-0123456789ab");  // not followed
        CHECK(test::read_file(path) == uid_to_text(*a) + "\n");
        CHECK(test::read_file(dir / "elsewhere") == target);  // the link's target is untouched
        auto again = load_or_create_instance_uid(open_state(dir), wall_now());
        REQUIRE(again);
        CHECK(*again == *a);
    }
}

TEST_CASE("uid: a state directory that is not open is an error, never a uid") {
    auto a = load_or_create_instance_uid(statedir::StateDir(), wall_now());
    REQUIRE_FALSE(a);
    CHECK(a.error().message().find("instance uid") != std::string::npos);
}
