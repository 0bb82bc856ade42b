// The extractor child (stage/child.hpp): the real updater binary re-executed as `internal-extract`,
// started through the real Reaper on a real loop; and its result line's parse.
#include "stage/child.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "archive_maker.hpp"
#include "harness.hpp"
#include "hash/sha256.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"
#include "proc/reaper.hpp"

using namespace myr;
using namespace std::chrono_literals;
using myr::test::Format;

namespace {

const std::string kBin = "otelcol-contrib";

struct Staging {
    myr::test::TempDir dir;
    std::string archive = dir / "release";
    std::string staging = dir / "staging";
    Staging() { REQUIRE(::mkdir(staging.c_str(), 0700) == 0); }

    stage::ChildRequest request(const std::string& exe = "") const {
        stage::ChildRequest r;
        r.archive = archive;
        r.staging_dir = staging;
        r.binary = kBin;
        r.limits.max_binary_size = 1 << 20;
        r.exe = exe.empty() ? myr::test::env_path("MYRIARCH_BIN") : exe;
        r.timeout = 20s;
        return r;
    }
};

Result<stage::Extracted> run_child(stage::ChildRequest req) {
    loop::Loop loop;
    std::optional<Result<stage::Extracted>> out;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        auto step = stage::extract_in_child(
            reaper, sched, std::move(req), [&](Result<stage::Extracted> r) { out = std::move(r); });
        CHECK_FALSE(out.has_value());  // never from inside the call
        CHECK(loop.run_until([&] { return out.has_value(); }, 30s));
    }
    CHECK(loop.close() == 0);
    REQUIRE(out.has_value());
    return std::move(*out);
}

}  // namespace

TEST_CASE("extractor child: the binary comes out as extract_binary would write it") {
    Staging s;
    const std::string data(300 * 1024, 'b');
    myr::test::write_file(s.archive,
                          myr::test::make_archive({{"top/" + kBin, data}}, Format::tar_gz));
    auto r = run_child(s.request());
    REQUIRE_MESSAGE(r.ok(), r.error().message());
    CHECK(r->member == "top/" + kBin);
    CHECK(r->size == data.size());
    hash::Sha256 h;
    h.update(data.data(), data.size());
    CHECK(r->sha256_hex == hash::to_hex(h.finish()));
    CHECK(myr::test::read_file(s.staging + "/" + kBin) == data);
    struct stat st {};
    REQUIRE(::stat((s.staging + "/" + kBin).c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0755);
}

TEST_CASE("extractor child: a refusal keeps its code and its message, and nothing is left") {
    Staging s;
    myr::test::write_file(s.archive, myr::test::make_archive({{"../" + kBin, "x"}}, Format::tar));
    auto r = run_child(s.request());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::invalid);
    CHECK(r.error().message() ==
          "stage: ../" + kBin + ": refusing member name with a '..' component");
    CHECK(myr::test::list_dir(s.staging).empty());
}

TEST_CASE("extractor child: a missing archive is a system error naming it") {
    Staging s;
    auto r = run_child(s.request());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::system);
    CHECK(r.error().sys_errno() == ENOENT);
    CHECK(r.error().message().find("stage: open " + s.archive) == 0);
}

TEST_CASE("extractor child: a child that ends without a result line is refused, its end named") {
    Staging s;
    auto r = run_child(s.request("/bin/false"));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == Errc::invalid);
    CHECK(r.error().message().find("the extractor ended with exit code 1 without a result") !=
          std::string::npos);
}

TEST_CASE("extractor child: the result line's parse") {
    const std::string sha(64, 'a');
    auto ok = stage::parse_child_output("noise\nextracted 12 " + sha + " 612f62\n", "exit code 0");
    REQUIRE(ok.ok());
    CHECK(ok->member == "a/b");
    CHECK(ok->size == 12);
    auto refused = stage::parse_child_output("refused 1 28 stage: x: write: full\n", "exit code 1");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code() == Errc::system);
    CHECK(refused.error().sys_errno() == 28);
    CHECK(refused.error().message() == "stage: x: write: full");
    for (const std::string& bad :
         std::vector<std::string>{"", "extracted 12 short 61", "extracted x " + sha + " 61",
                                  "extracted 1 " + sha + " 6", "refused 99 0 x", "refused 1 x"}) {
        CAPTURE(bad);
        auto r = stage::parse_child_output(bad, "signal 9 (Killed)");
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message().find("ended with signal 9 (Killed) without a result") !=
              std::string::npos);
    }
}

TEST_CASE("extractor child: destroying the step kills the child and calls nobody") {
    Staging s;
    REQUIRE(::mkfifo(s.archive.c_str(), 0600) == 0);
    ::signal(SIGPIPE, SIG_IGN);
    loop::Loop loop;
    bool called = false;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        auto step = stage::extract_in_child(reaper, sched, s.request(),
                                            [&](Result<stage::Extracted>) { called = true; });
        // The child has opened the fifo (a reader exists) and waits for bytes that never come.
        int w = -1;
        REQUIRE(loop.run_until(
            [&] { return (w = ::open(s.archive.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) >= 0; },
            20s));
        step.reset();
        // Its group is killed: the read end goes away, and a write finds no reader.
        CHECK(loop.run_until([&] { return ::write(w, "x", 1) < 0 && errno == EPIPE; }, 10s));
        ::close(w);
        loop.run_until([] { return false; }, Duration(200));
    }
    CHECK_FALSE(called);
    CHECK(loop.close() == 0);
}
