// What an uncaught exception prints before the abort (issue 38, docs/footprint.md). libstdc++'s
// default terminate handler, __gnu_cxx::__verbose_terminate_handler, names the exception's type
// demangled, and its demangler (cp-demangle.o) is 46 kB of the static binary for a message that
// should never be printed: errors travel as Result<T>, and an exception that escapes is a bug.
// This definition takes its place at link time (the linker finds it in the executable before it
// reaches libstdc++.a, so cp-demangle.o is never pulled in). It says what happened in plain words,
// with what() of a std::exception, and aborts as the default does (a core dump, exit by SIGABRT).
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace __gnu_cxx {

void __verbose_terminate_handler() {
    static bool entered = false;  // what() may throw and come back here: say nothing twice
    if (!entered) {
        entered = true;
        if (std::exception_ptr e = std::current_exception()) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::fprintf(stderr, "myriarch-updater: terminate: uncaught exception: %s\n",
                             x.what());
            } catch (...) {
                std::fputs(
                    "myriarch-updater: terminate: uncaught exception of a type that is not "
                    "std::exception\n",
                    stderr);
            }
        } else {
            std::fputs("myriarch-updater: terminate called without an active exception\n", stderr);
        }
    }
    std::abort();
}

}  // namespace __gnu_cxx
