// Helpers for tests that drive real processes, files and sockets. Blocking by design: tests may
// block, the product may not. Every wait has a timeout so a hung test fails instead of hanging.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace myr::test {

using namespace std::chrono_literals;
using Millis = std::chrono::milliseconds;

// Paths handed in by meson (tests/meson.build): the binary under test and the stand-ins.
std::string env_path(const char* name);  // fails the test when unset
std::string updater_bin();               // $MYRIARCH_BIN
std::string source_dir();                // $MYRIARCH_SOURCE_DIR
std::string data_dir();                  // tests/data: public test material with its origin

// A test case whose prerequisite this machine lacks calls MYR_SKIP(why) (or report_skip and
// returns). It prints the marker line `MYR-SKIP<TAB><test case><TAB><why>`, which
// tests/summarize.py counts as skipped: doctest alone would count the case as passed. Under
// MYR_TEST_STRICT=1 (set by .ci/run, which installs every prerequisite) a skip fails the case
// instead, so CI skips nothing.
#define MYR_SKIP(why)                                   \
    do {                                                \
        std::ostringstream myr_skip_text_;              \
        myr_skip_text_ << why;                          \
        ::myr::test::report_skip(myr_skip_text_.str()); \
        return;                                         \
    } while (0)
void report_skip(const std::string& why);
bool strict_mode();                      // MYR_TEST_STRICT=1
const std::string& current_test_case();  // set by the listener in doctest_main.cpp

bool is_root();
// True when `unshare --pid --fork --mount-proc` works here (root on Linux).
bool can_unshare_pid();

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

void remove_tree(const std::string& path);
std::string read_file(const std::string& path);  // "" when missing
void write_file(const std::string& path, const std::string& content, mode_t mode = 0644);
bool exists(const std::string& path);  // lstat succeeds
// The names in `dir` without "." and "..", sorted; empty when it cannot be opened.
std::vector<std::string> list_dir(const std::string& dir);

struct SpawnOptions {
    std::map<std::string, std::string> env;  // added to (or replacing in) the inherited environment
    std::vector<std::string> unset_env;
    std::string cwd;
    std::string stdin_file;  // "" = /dev/null
    bool new_process_group = true;
};

// A child process whose stdout and stderr go to files (no pipe can fill up and block it).
class Process {
  public:
    static Process spawn(const std::vector<std::string>& argv, const SpawnOptions& opts = {});
    Process(Process&& o) noexcept;
    Process& operator=(Process&& o) noexcept;
    ~Process();  // kills the process group if still running

    pid_t pid() const { return pid_; }
    // Waits up to `timeout`; returns the raw wait status, or nullopt if still running.
    std::optional<int> wait(Millis timeout);
    bool running();
    void signal(int sig);        // to the process
    void signal_group(int sig);  // to its process group
    void kill_now();             // SIGKILL to the group and reap
    std::string out() const;     // everything written to stdout so far
    std::string err() const;     // everything written to stderr so far

  private:
    Process() = default;
    pid_t pid_ = -1;
    std::optional<int> status_;
    std::string out_path_, err_path_, dir_;
};

struct RunResult {
    int exit_code = -1;  // -1 when killed by a signal or timed out
    int term_signal = 0;
    bool timed_out = false;
    std::string out, err;
};

// Runs to completion (killed after `timeout`).
RunResult run(const std::vector<std::string>& argv, Millis timeout = 30s,
              const SpawnOptions& opts = {});

// Polls `pred` every `poll` until it is true or `timeout` passes.
bool wait_until(const std::function<bool()>& pred, Millis timeout, Millis poll = 20ms);

// Ports. A port picked by binding port 0, closing and handing the number on can be taken by any
// process in between (another test, or any connect() given it as its source port), so tests that
// run side by side keep to these rules:
// - A program that can bind port 0 and tell which port it got binds 0 and tells: the probe server
//   and TestServer in-process, opamp-test-server through --port-file, python's http.server on its
//   stdout.
// - A port that must be named before the program starts (container.healthListen, a collector's
//   health_check endpoint, a server restarted on the same port) comes from reserve_port().
// - A port where nothing may listen (to provoke "connection refused") comes from refusing_port().
//
// reserve_port(): a port outside the kernel's ephemeral range (ip_local_port_range), so neither
// bind(0) nor connect() anywhere is handed it, and locked with flock on
// /tmp/myr-test-ports/<port> for the life of the test process, so no other test process picks it
// (the lock goes with the process, even on SIGKILL). It was bindable on 127.0.0.1 when reserved.
int reserve_port();
// A port on 127.0.0.1 bound to a socket that never listens, kept open for the life of the test
// process: a connection to it is refused, and nothing else can bind it meanwhile.
int refusing_port();

// A blocking TCP connection to 127.0.0.1:`port`; -1 when it fails. With `rcvbuf` > 0 the socket's
// SO_RCVBUF is set first, so a client that never reads fills its share of the kernel's buffers
// at once.
int connect_loopback(int port, int rcvbuf = 0);

struct HttpResponse {
    int status = 0;  // 0: no response (connection refused, timeout, garbage)
    std::string body;
    std::string error;
};
// A minimal blocking HTTP/1.1 GET with Connection: close.
HttpResponse http_get(const std::string& host, int port, const std::string& path,
                      Millis timeout = 2s);

// Counts zombie processes (state Z in /proc/<pid>/stat) visible in this PID namespace.
int count_zombies();

}  // namespace myr::test
