#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "harness.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"
#include "proc/reaper.hpp"

using namespace myr;
using namespace std::chrono_literals;

namespace {
// Runs run_capture to its end on a fresh loop.
Result<proc::Captured> capture(const std::vector<std::string>& argv,
                               proc::CaptureOptions opts = {}) {
    loop::Loop loop;
    std::optional<Result<proc::Captured>> out;
    {
        loop::UvScheduler sched(loop.get());
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        proc::run_capture(reaper, sched, argv, opts,
                          [&](Result<proc::Captured> r) { out = std::move(r); });
        CHECK_FALSE(out.has_value());  // never from inside the call
        CHECK(loop.run_until([&] { return out.has_value(); }, 20s));
    }
    CHECK(loop.close() == 0);
    REQUIRE(out.has_value());
    return std::move(*out);
}
}  // namespace

TEST_CASE("run_capture: collects stdout and stderr and the exit code") {
    auto r = capture({"/bin/sh", "-c", "echo out; echo err >&2; exit 7"});
    REQUIRE(r.ok());
    CHECK(r->exit_code() == 7);
    CHECK(r->output.find("out\n") != std::string::npos);
    CHECK(r->output.find("err\n") != std::string::npos);
    CHECK_FALSE(r->truncated);
}

TEST_CASE("run_capture: output beyond the cap is cut and marked") {
    proc::CaptureOptions o;
    o.max_output = 100;
    auto r = capture({"/bin/sh", "-c", "head -c 5000 /dev/zero"}, o);
    REQUIRE(r.ok());
    CHECK(r->output.size() == 100);
    CHECK(r->truncated);
}

TEST_CASE("run_capture: a command that outlives its timeout is killed with its group") {
    proc::CaptureOptions o;
    o.timeout = Duration(300);
    auto r = capture({"/bin/sh", "-c", "sleep 30 & sleep 30"}, o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find("timed out after 300ms") != std::string::npos);
    CHECK(r.error().code() == Errc::timeout);
}

TEST_CASE("run_capture: what a finished command left in its group is killed") {
    auto quiet = capture({"/bin/sh", "-c", "exit 0"});
    REQUIRE(quiet.ok());
    CHECK_FALSE(quiet->left_processes);

    // A daemon the command forked and left running (its output closed, so no pipe holds us).
    auto r = capture({"/bin/sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!; exit 0"});
    REQUIRE(r.ok());
    CHECK(r->exit_code() == 0);
    CHECK(r->left_processes);
    const std::string pid = r->output.substr(0, r->output.find('\n'));
    REQUIRE_FALSE(pid.empty());
    // Killed (SIGKILL lands asynchronously): gone, or a zombie waiting for a reaper (this
    // test's loop is closed by now).
    auto dead = [&] {
        const std::string stat = test::read_file("/proc/" + pid + "/stat");
        const size_t paren = stat.rfind(')');
        return stat.empty() || (paren != std::string::npos && stat.substr(paren + 2, 1) == "Z");
    };
    CHECK(test::wait_until(dead, 10s));
}

TEST_CASE("run_capture: a missing command is an error naming errno") {
    auto r = capture({"/nonexistent/seed-binary", "--version"});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().sys_errno() == ENOENT);
    CHECK(r.error().message().find("/nonexistent/seed-binary") != std::string::npos);
}

TEST_CASE("spawn: exec failures exit 127 (not found) and 126 (not executable), like a shell") {
    myr::test::TempDir dir;
    myr::test::write_file(dir / "plain", "not a program\n", 0644);
    for (auto [path, code, err] : {std::tuple{std::string("/nonexistent/x"), 127, ENOENT},
                                   std::tuple{dir / "plain", 126, EACCES}}) {
        auto s = proc::spawn({path});
        REQUIRE(s.ok());
        CHECK(s->exec_errno == err);
        int st = 0;
        REQUIRE(::waitpid(s->pid, &st, 0) == s->pid);
        CHECK(WIFEXITED(st));
        CHECK(WEXITSTATUS(st) == code);
    }
}

TEST_CASE("spawn: the child leads its own process group and has default signal dispositions") {
    loop::Loop loop;
    std::optional<int> status;
    {
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        // A shell reports its pgid and pid; SIGUSR1's default action then ends it.
        myr::test::TempDir dir;
        std::string script = "ps -o pgid= -p $$ > " + dir / "pgid" + "; echo $$ > " + dir / "pid" +
                             "; kill -USR1 $$; sleep 5";
        auto s = reaper.spawn({"/bin/sh", "-c", script}, {}, [&](int st) { status = st; });
        REQUIRE(s.ok());
        CHECK(::getpgid(s->pid) == s->pid);
        CHECK(loop.run_until([&] { return status.has_value(); }, 10s));
        REQUIRE(status.has_value());
        CHECK(WIFSIGNALED(*status));
        CHECK(WTERMSIG(*status) == SIGUSR1);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("reaper: an orphan re-parented to us is reaped, a watched pid goes to its owner") {
    loop::Loop loop;
    std::optional<int> status;
    {
        proc::Reaper reaper(loop);
        REQUIRE(reaper.start());
        // The shell starts a background grandchild and exits at once: the grandchild is orphaned
        // and, with us as subreaper (or PID 1), comes to our reaper when it ends.
        auto s = reaper.spawn({"/bin/sh", "-c", "(sleep 0.2; exit 0) & exit 4"}, {},
                              [&](int st) { status = st; });
        REQUIRE(s.ok());
        CHECK(loop.run_until([&] { return status.has_value() && reaper.orphans_reaped() >= 1; },
                             10s));
        REQUIRE(status.has_value());
        CHECK(WEXITSTATUS(*status) == 4);
        CHECK_FALSE(reaper.watching(s->pid));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("run_capture: keep_tail keeps the last bytes of a long output") {
    proc::CaptureOptions o;
    o.max_output = 10;
    o.keep_tail = true;
    auto r = capture({"/bin/sh", "-c", "seq 1 1000"}, o);
    REQUIRE(r.ok());
    CHECK(r->output == "\n999\n1000\n");
    CHECK(r->truncated);
}

TEST_CASE("run_capture: the child's peak resident set comes from wait4") {
    // A shell that holds a 20 MiB string at once: its peak is at least that.
    auto r = capture({"/bin/sh", "-c", "x=$(head -c 20000000 /dev/zero | tr '\\0' a); echo ${#x}"});
    REQUIRE(r.ok());
    CHECK(r->output == "20000000\n");
    CHECK(r->max_rss_kib > 19000);
}

TEST_CASE("run_capture: run_as runs the command as another user and group") {
    if (!myr::test::is_root()) MYR_SKIP("switching users needs root");
    proc::CaptureOptions o;
    o.run_as = proc::RunAs{65534, 65534};
    auto r = capture({"/bin/sh", "-c", "id -u; id -g; id -G"}, o);
    REQUIRE(r.ok());
    CHECK(r->exit_code() == 0);
    CHECK(r->output == "65534\n65534\n65534\n");
}

TEST_CASE("run_capture: env sets entries over the updater's environment, the last one winning") {
    ::setenv("MYR_PROC_TEST_KEPT", "ours", 1);
    ::setenv("MYR_PROC_TEST_OVER", "ours", 1);
    proc::CaptureOptions o;
    o.env = {"MYR_PROC_TEST_OVER=first", "MYR_PROC_TEST_NEW=a b", "MYR_PROC_TEST_OVER=theirs"};
    auto r = capture({"/bin/sh", "-c",
                      "echo \"$MYR_PROC_TEST_KEPT|$MYR_PROC_TEST_OVER|$MYR_PROC_TEST_NEW\"; "
                      "env | grep -c '^MYR_PROC_TEST_OVER='"},
                     o);
    REQUIRE(r.ok());
    CHECK(r->output == "ours|theirs|a b\n1\n");
    // Without env the child has ours, unchanged.
    auto plain = capture({"/bin/sh", "-c", "echo \"$MYR_PROC_TEST_OVER\""});
    REQUIRE(plain.ok());
    CHECK(plain->output == "ours\n");
}
