#include "loop/loop.hpp"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "loop/uv_scheduler.hpp"

using namespace myr;
using namespace std::chrono_literals;

TEST_CASE("loop: a one-shot timer fires once and the loop closes cleanly") {
    loop::Loop loop;
    int fired = 0;
    {
        loop::UvScheduler sched(loop.get());
        auto t = sched.timer();
        t->start(Duration(5), [&] { ++fired; });
        CHECK(t->active());
        CHECK(loop.run_until([&] { return fired > 0; }, 5s));
        CHECK_FALSE(t->active());
    }
    CHECK(fired == 1);
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: a repeating timer fires until stopped and reports the time left") {
    loop::Loop loop;
    int fired = 0;
    {
        loop::UvScheduler sched(loop.get());
        auto t = sched.timer();
        t->start_repeating(Duration(1), [&] { ++fired; });
        CHECK(loop.run_until([&] { return fired >= 3; }, 5s));
        t->stop();
        CHECK(t->remaining() == Duration(0));
        t->start(Duration(60'000), [] {});
        CHECK(t->remaining() > Duration(50'000));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: a timer destroyed from inside its own callback is freed after close") {
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        auto t = sched.timer();
        bool fired = false;
        t->start(Duration(1), [&] {
            fired = true;
            t.reset();
        });
        CHECK(loop.run_until([&] { return fired; }, 5s));
        CHECK(t == nullptr);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: post runs on a later turn, in order, never inline") {
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        std::vector<int> order;
        sched.post([&] {
            order.push_back(1);
            sched.post([&] { order.push_back(3); });
        });
        sched.post([&] { order.push_back(2); });
        CHECK(order.empty());
        CHECK(loop.run_until([&] { return order.size() == 3; }, 5s));
        CHECK(order == std::vector<int>{1, 2, 3});
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: a Guard drops what it bound once its owner is gone") {
    loop::Loop loop;
    {
        loop::UvScheduler sched(loop.get());
        int ran = 0;
        auto guard = std::make_unique<loop::Guard>();
        sched.post(guard->bind([&] { ++ran; }));
        loop::Guard other;
        sched.post(other.bind([&] { ran += 10; }));
        other.drop();
        sched.post(other.bind([&] { ran += 100; }));
        guard.reset();
        bool end = false;
        sched.post([&] { end = true; });
        CHECK(loop.run_until([&] { return end; }, 5s));
        CHECK(ran == 100);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: a signal watcher turns a signal into a loop event") {
    loop::Loop loop;
    int got = 0;
    {
        loop::SignalWatcher w(loop);
        REQUIRE(w.start(SIGUSR2, [&](int s) { got = s; }));
        ::kill(::getpid(), SIGUSR2);
        CHECK(loop.run_until([&] { return got != 0; }, 5s));
    }
    CHECK(got == SIGUSR2);
    CHECK(loop.close() == 0);
}

TEST_CASE("loop: post_work runs the job off the loop thread and completes on it") {
    loop::Loop loop;
    auto loop_thread = std::this_thread::get_id();
    std::thread::id work_thread;
    bool done = false;
    bool done_on_loop = false;
    {
        loop::UvScheduler sched(loop.get());
        sched.post_work([&] { work_thread = std::this_thread::get_id(); },
                        [&](bool cancelled) {
                            CHECK_FALSE(cancelled);
                            done = true;
                            done_on_loop = std::this_thread::get_id() == loop_thread;
                        });
        CHECK(loop.run_until([&] { return done; }, 5s));
    }
    CHECK(done_on_loop);
    CHECK(work_thread != loop_thread);
    CHECK(loop.close() == 0);
}

// Idle memory (docs/footprint.md): two pool threads, not libuv's four, and the size not passed on
// to the children. In a child process, since libuv starts its pool once per process (and again
// after a fork): what the parent's earlier cases started does not count there.
TEST_CASE("loop: the work pool has two threads and leaves UV_THREADPOOL_SIZE unset") {
    ::unsetenv("UV_THREADPOOL_SIZE");
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    // Threads are counted against the child's own before the pool starts: under qemu-user the
    // emulator has a thread of its own in /proc/self/task.
    auto threads = [] {
        size_t n = 0;
        for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
            (void)e;
            ++n;
        }
        return n;
    };
    if (pid == 0) {
        int code = 0;
        const size_t before = threads();
        {
            loop::Loop loop;
            loop::UvScheduler sched(loop.get());
            bool done = false;
            sched.post_work([] {}, [&](bool) { done = true; });
            if (!loop.run_until([&] { return done; }, 5s)) code |= 1;
            if (std::getenv("UV_THREADPOOL_SIZE") != nullptr) code |= 2;
            if (threads() != before + 2) code |= 4;  // the pool's two beside the loop's
        }
        ::_exit(code);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK_MESSAGE((WEXITSTATUS(status) & 1) == 0, "the job did not complete");
    CHECK_MESSAGE((WEXITSTATUS(status) & 2) == 0, "UV_THREADPOOL_SIZE left in the environment");
    CHECK_MESSAGE((WEXITSTATUS(status) & 4) == 0, "the pool does not have two threads");
}

TEST_CASE("loop: close() closes handles left open and still ends at zero") {
    loop::Loop loop;
    auto* raw = new uv_timer_t;
    uv_timer_init(loop.get(), raw);
    uv_timer_start(
        raw, [](uv_timer_t*) noexcept {}, 100000, 0);
    CHECK(loop.close() == 0);
    delete raw;
}
