#include "opamp/persistent_state.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>

#include "harness.hpp"
#include "loop/fake_scheduler.hpp"

using namespace myr;
using namespace myr::opamp;

TEST_CASE("persistent_state: instance_id is read from the supervisor's document") {
    auto r = parse_persistent_state(
        "instance_id: 0190A6F4-6C1E-7A3B-9C2D-0123456789AB\nother: {a: [1, 2]}\n");
    REQUIRE(r);
    CHECK(*r == "0190a6f4-6c1e-7a3b-9c2d-0123456789ab");
    auto quoted = parse_persistent_state(
        "nested:\n  instance_id: no\nlist: [instance_id]\n"
        "instance_id: \"0190a6f4-6c1e-7a3b-9c2d-0123456789ab\"\n");
    REQUIRE(quoted);
    CHECK(*quoted == "0190a6f4-6c1e-7a3b-9c2d-0123456789ab");
}

TEST_CASE("persistent_state: malformed documents are errors that say why") {
    auto check = [](const char* doc, const char* why) {
        auto r = parse_persistent_state(doc);
        REQUIRE_FALSE(r);
        CHECK_MESSAGE(r.error().message().find(why) != std::string::npos, r.error().message());
    };
    check("", "empty");
    check("- a\n- b\n", "not a mapping");
    check("other: 1\n", "no instance_id");
    check("instance_id: [1]\n", "not a scalar");
    check("instance_id: not-a-uuid\n", "not a UUID");
    check("instance_id: \"unterminated\n", "not valid YAML");
    check("{instance_id: 0190a6f4-6c1e-7a3b-9c2d-0123456789ab", "not valid YAML");
}

TEST_CASE("persistent_state: the file is read without following a symlink, size-capped") {
    test::TempDir dir;
    auto missing = read_collector_instance_uid(dir.path());
    REQUIRE_FALSE(missing);
    CHECK(missing.error().sys_errno() == ENOENT);

    test::write_file(dir / "real.yaml", "instance_id: 0190a6f4-6c1e-7a3b-9c2d-0123456789ab\n");
    REQUIRE(symlink((dir / "real.yaml").c_str(), (dir / "persistent_state.yaml").c_str()) == 0);
    CHECK_FALSE(read_collector_instance_uid(dir.path()));
    REQUIRE(unlink((dir / "persistent_state.yaml").c_str()) == 0);

    test::write_file(dir / "persistent_state.yaml",
                     "instance_id: 0190a6f4-6c1e-7a3b-9c2d-0123456789ab\n# " +
                         std::string(kMaxPersistentStateSize, 'x') + "\n");
    auto big = read_collector_instance_uid(dir.path());
    REQUIRE_FALSE(big);
    CHECK(big.error().message().find("larger") != std::string::npos);

    test::write_file(dir / "persistent_state.yaml",
                     "instance_id: 0190a6f4-6c1e-7a3b-9c2d-0123456789ab\n");
    auto ok = read_collector_instance_uid(dir.path());
    REQUIRE(ok);
    CHECK(*ok == "0190a6f4-6c1e-7a3b-9c2d-0123456789ab");
}

TEST_CASE("persistent_state: the watcher sees a rename over the file and a removal") {
    test::TempDir dir;
    loop::FakeScheduler sched;
    int changes = 0;
    PersistentStateWatcher w(sched, dir.path(), std::chrono::milliseconds(20), [&] { ++changes; });
    w.start();
    CHECK(w.collector_uid().empty());
    CHECK(changes == 0);

    test::write_file(dir / "tmp", "instance_id: 0190a6f4-6c1e-7a3b-9c2d-0123456789ab\n");
    REQUIRE(rename((dir / "tmp").c_str(), (dir / "persistent_state.yaml").c_str()) == 0);
    sched.advance(std::chrono::milliseconds(19));
    CHECK(w.collector_uid().empty());  // not polled yet
    sched.advance(std::chrono::milliseconds(1));
    CHECK(w.collector_uid() == "0190a6f4-6c1e-7a3b-9c2d-0123456789ab");
    CHECK(changes == 1);

    // An unchanged file is not read again, and reports nothing.
    sched.advance(std::chrono::seconds(1));
    CHECK(changes == 1);

    test::write_file(dir / "tmp", "instance_id: 0190a6f4-6c1e-7a3b-9c2d-ffffffffffff\n");
    REQUIRE(rename((dir / "tmp").c_str(), (dir / "persistent_state.yaml").c_str()) == 0);
    sched.advance(std::chrono::milliseconds(20));
    CHECK(w.collector_uid().find("ffff") != std::string::npos);
    CHECK(changes == 2);

    REQUIRE(unlink((dir / "persistent_state.yaml").c_str()) == 0);
    sched.advance(std::chrono::milliseconds(20));
    CHECK(w.collector_uid().empty());
    CHECK(changes == 3);
    w.stop();
    CHECK(sched.armed_timers() == 0);
}
