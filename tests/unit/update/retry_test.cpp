#include "update/retry.hpp"

#include <doctest/doctest.h>

#include <cerrno>

using namespace myr;
using namespace myr::update;
using namespace std::chrono_literals;

TEST_CASE("retry: the downloader's kinds as failure classes") {
    CHECK(transient(Error(Errc::network, "connection refused")));
    CHECK(transient(Error(Errc::network, "HTTP 503, after 5 tries")));
    CHECK(transient(Error(Errc::timeout, "exceeded update.downloadTimeout")));
    CHECK(transient(Error(Errc::system, "write: No space left on device", ENOSPC)));
    CHECK(transient(Error(Errc::system, "write: Disk quota exceeded", EDQUOT)));
    CHECK_FALSE(transient(Error(Errc::system, "open: Permission denied", EACCES)));
    CHECK_FALSE(transient(Error(Errc::invalid, "HTTP 404 Not Found")));
    CHECK_FALSE(transient(Error(Errc::integrity, "content hash mismatch")));
    CHECK_FALSE(transient(Error(Errc::injected, "fault")));
}

TEST_CASE("retry: 5 s doubling to 5 min, jittered between half and all") {
    CHECK(retry_delay(1, 1.0) == 5s);
    CHECK(retry_delay(1, 0.0) == 2500ms);
    CHECK(retry_delay(2, 1.0) == 10s);
    CHECK(retry_delay(4, 1.0) == 40s);
    CHECK(retry_delay(7, 1.0) == 5min);  // 320 s capped
    CHECK(retry_delay(1000, 1.0) == 5min);
    CHECK(retry_delay(1000, 0.0) == 150s);
}

TEST_CASE("retry: the budget counts from the first try; the last wait is cut to what is left") {
    CHECK(next_retry(1, 0s, 6h, 1.0) == 5s);
    CHECK(next_retry(3, 28s, 30s, 1.0) == 2s);
    CHECK_FALSE(next_retry(3, 30s, 30s, 1.0).has_value());
    CHECK_FALSE(next_retry(1, 0s, 0s, 1.0).has_value());  // retryFor 0: never
}
