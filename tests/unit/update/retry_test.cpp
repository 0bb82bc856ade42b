#include "update/retry.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "update/check.hpp"

using namespace myr;
using namespace myr::update;
using namespace std::chrono_literals;

namespace {

// Every Errc, in the order of core/result.hpp: a code added there must be classed here (and in
// docs/update.md's table) before this compiles and passes.
constexpr Errc kEveryErrc[] = {Errc::unknown,   Errc::system,  Errc::invalid, Errc::network,
                               Errc::integrity, Errc::process, Errc::timeout, Errc::cancelled,
                               Errc::injected,  Errc::refused};
static_assert(std::size(kEveryErrc) == static_cast<size_t>(Errc::refused) + 1);

// The rows of docs/update.md's "Failure classes" table: each row's `Errc` names (second column)
// with its class (third column).
std::multimap<std::string, std::string> documented_classes() {
    const char* source = std::getenv("MYRIARCH_SOURCE_DIR");
    REQUIRE(source != nullptr);
    std::ifstream in(std::string(source) + "/docs/update.md");
    REQUIRE(in);
    std::multimap<std::string, std::string> out;
    std::string line;
    bool in_section = false;
    while (std::getline(in, line)) {
        if (line.rfind("## ", 0) == 0) in_section = line == "## Failure classes";
        if (!in_section || line.rfind("| ", 0) != 0) continue;
        std::vector<std::string> cols;
        size_t at = 1;
        for (size_t bar; (bar = line.find(" |", at)) != std::string::npos; at = bar + 2) {
            cols.push_back(line.substr(at + 1, bar - at - 1));
        }
        if (cols.size() < 3) continue;
        for (size_t q = cols[1].find('`'); q != std::string::npos;) {
            size_t end = cols[1].find('`', q + 1);
            if (end == std::string::npos) break;
            out.emplace(cols[1].substr(q + 1, end - q - 1), cols[2]);
            q = cols[1].find('`', end + 1);
        }
    }
    return out;
}

}  // namespace

TEST_CASE("retry: every Errc walks through the classifier as docs/update.md's table says") {
    struct Case {
        Error error;
        FailureClass expected;
    };
    const Case cases[] = {
        {Error(Errc::network, "connection refused"), FailureClass::transient},
        {Error(Errc::network, "HTTP 503, after 5 tries"), FailureClass::transient},
        {Error(Errc::timeout, "exceeded update.downloadTimeout"), FailureClass::transient},
        {Error(Errc::system, "write: No space left on device", ENOSPC), FailureClass::transient},
        {Error(Errc::system, "write: Disk quota exceeded", EDQUOT), FailureClass::transient},
        {Error(Errc::system, "open: Permission denied", EACCES), FailureClass::refused},
        {Error(Errc::system, "write: Input/output error", EIO), FailureClass::refused},
        {Error(Errc::refused, "HTTP 404 Not Found"), FailureClass::refused},
        {Error(Errc::refused, "the proxy http://p:3128 refused the request: HTTP 407"),
         FailureClass::refused},
        {Error(Errc::refused, "refusing a plaintext connection to 10.0.0.1"),
         FailureClass::refused},
        {Error(Errc::refused, "not enough space on /s/spool: need 3, have 2"),
         FailureClass::refused},
        {Error(Errc::invalid, "content hash \"x\" is not 64 lower-case hex digits"),
         FailureClass::deterministic},
        {Error(Errc::integrity, "content hash mismatch"), FailureClass::deterministic},
        {Error(Errc::process, "preflight: exit 1"), FailureClass::deterministic},
        {Error(Errc::unknown, "?"), FailureClass::deterministic},
        {Error(Errc::cancelled, "cancelled"), FailureClass::deterministic},
        {Error(Errc::injected, "fault"), FailureClass::deterministic},
    };
    const auto documented = documented_classes();
    std::set<Errc> walked;
    for (const Case& c : cases) {
        CAPTURE(c.error.message());
        const FailureClass got = classify(c.error);
        CHECK(got == c.expected);
        CHECK(transient(c.error) == (got == FailureClass::transient));
        walked.insert(c.error.code());
        // The table has a row naming this code with this class (cancelled: not a failure).
        if (c.error.code() == Errc::cancelled) continue;
        auto [lo, hi] = documented.equal_range(to_string(c.error.code()));
        const bool in_docs =
            std::any_of(lo, hi, [&](const auto& row) { return row.second == to_string(got); });
        CHECK_MESSAGE(in_docs, "docs/update.md names `" << to_string(c.error.code()) << "` as "
                                                        << to_string(got));
    }
    for (Errc e : kEveryErrc) {
        CAPTURE(to_string(e));
        CHECK(walked.count(e) == 1);
    }
}

TEST_CASE("retry: every Checking rule has its class; only the quarantine is deterministic") {
    for (int i = static_cast<int>(Rule::unparsable_version); i <= static_cast<int>(Rule::no_room);
         ++i) {
        const Rule r = static_cast<Rule>(i);
        CAPTURE(to_string(r));
        CHECK(class_of(r) ==
              (r == Rule::quarantined ? FailureClass::deterministic : FailureClass::refused));
    }
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
