// The process_* readings from /proc/self, against what this test process knows of itself.
#include "metrics/process.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>

using namespace myr::metrics;

TEST_CASE("metrics: the process readings are this process's") {
    ProcessReader reader;
    ProcessStats before = reader.read();
    REQUIRE(before.open_fds);
    int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    ProcessStats p = reader.read();
    ::close(fd);
    CHECK(*p.open_fds == *before.open_fds + 1);
    REQUIRE(p.cpu_seconds);
    CHECK(*p.cpu_seconds >= 0);
    REQUIRE(p.resident_bytes);
    CHECK(*p.resident_bytes > 1024 * 1024);
    REQUIRE(p.virtual_bytes);
    CHECK(*p.virtual_bytes >= *p.resident_bytes);
    REQUIRE(p.max_fds);
    CHECK(*p.max_fds > 0);
    // Started a moment ago (the clock tick is the resolution), not at the epoch or the boot.
    REQUIRE(p.start_time_seconds);
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    CHECK(*p.start_time_seconds <= now + 1);
    CHECK(*p.start_time_seconds > now - 600);
}

TEST_CASE("metrics: free bytes of a directory, none for a path that does not exist") {
    auto free = free_bytes("/tmp");
    REQUIRE(free);
    CHECK(*free > 0);
    CHECK(!free_bytes("/nonexistent/surely/not"));
}
