// src/cli/terminate.cpp: what an uncaught exception prints before the abort, now that it replaces
// libstdc++'s verbose handler (and its 46 kB demangler) in the binary. Its own executable, since
// the definition replaces the handler for everything linked with it. Each case terminates a
// forked child and reads what the child wrote to stderr.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <exception>
#include <stdexcept>
#include <string>

namespace {

struct Ended {
    int signal = 0;
    std::string err;
};

// Runs `f` in a child whose stderr is a pipe, with the handler of terminate.cpp installed by name:
// against a shared libstdc++ (the sanitizer build) the library's own default may bind to its own
// copy, so the case does not rely on the link-time replacement, which the binary's size shows.
template <class F>
Ended in_child(F f) {
    int p[2];
    REQUIRE(::pipe(p) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::dup2(p[1], STDERR_FILENO);
        ::close(p[0]);
        ::signal(SIGABRT, SIG_DFL);  // doctest's crash report belongs to the parent's cases
        std::set_terminate(__gnu_cxx::__verbose_terminate_handler);
        f();
        ::_exit(0);
    }
    ::close(p[1]);
    Ended e;
    char buf[512];
    for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) e.err.append(buf, size_t(n));
    ::close(p[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
    // Under qemu-user the emulator adds a line of its own about the signal: the first is ours.
    e.err = e.err.substr(0, e.err.find('\n') + 1);
    return e;
}

[[noreturn]] void escape(const std::exception_ptr& e) noexcept {
    std::rethrow_exception(e);  // out of a noexcept function: std::terminate
}

}  // namespace

TEST_CASE("terminate: an uncaught std::exception is named by its what(), then SIGABRT") {
    Ended e = in_child([] { escape(std::make_exception_ptr(std::runtime_error("boom"))); });
    CHECK(e.signal == SIGABRT);
    CHECK(e.err == "myriarch-updater: terminate: uncaught exception: boom\n");
}

TEST_CASE("terminate: another type and no exception at all are said in plain words") {
    Ended other = in_child([] { escape(std::make_exception_ptr(42)); });
    CHECK(other.signal == SIGABRT);
    CHECK(other.err ==
          "myriarch-updater: terminate: uncaught exception of a type that is not std::exception\n");
    Ended none = in_child([] { std::terminate(); });
    CHECK(none.signal == SIGABRT);
    CHECK(none.err == "myriarch-updater: terminate called without an active exception\n");
}
