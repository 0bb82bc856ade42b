// fake-opampsupervisor: the stand-in for the OpAMP Supervisor (docs: ../shared/design/testing.md).
//
// Behaves like the real one in what the updater can observe, and has test hooks. Every option is
// also an environment variable (option > environment), so a test can steer it through the
// updater's supervisorCommand or through the environment the updater passes on:
// clang-format off
//   --agent PATH          FAKE_SUP_AGENT          start PATH as our child, restart it 200 ms after
//                                                 it ends, TERM it on our own TERM
//   --health-port N       FAKE_SUP_HEALTH_PORT    serve GET on 127.0.0.1:N: 200 while the agent
//                                                 runs (or when there is none), else 503
//   --storage-dir D       FAKE_SUP_STORAGE_DIR    write D/persistent_state.yaml with a UUIDv7
//                                                 instance_id when absent
//   --new-instance-id     FAKE_SUP_NEW_INSTANCE_ID=1  rewrite it with a new one at start
//                                                 (and whenever D/rotate-instance-id appears: it is
//                                                 removed after the rewrite, as when the server
//                                                 assigns a new uid)
//   --signals-file F      FAKE_SUP_SIGNALS_FILE   append the name of each signal received (HUP, …)
//   --orphans N           FAKE_SUP_ORPHANS        spawn N grandchildren through a middle process
//                                                 that exits at once; each one leaves our process
//                                                 group (setsid) and exits after --orphan-life ms
//   --orphan-life MS      FAKE_SUP_ORPHAN_LIFE    default 1000
//   --exit-after MS       FAKE_SUP_EXIT_AFTER     exit after MS milliseconds…
//   --exit-code C         FAKE_SUP_EXIT_CODE      …with this code (default 0)
//   --exit-with-agent     FAKE_SUP_EXIT_WITH_AGENT=1  when the agent ends unasked, exit with its
//                                                 code instead of restarting it (a supervisor
//                                                 that crash-loops with its collector)
//   --ignore-term         FAKE_SUP_IGNORE_TERM=1  record TERM but keep running
//   --pid-file F          FAKE_SUP_PID_FILE       write our pid (as we see it) to F
//   --upstream-signals    FAKE_SUP_UPSTREAM_SIGNALS=1  take signals as the upstream supervisor
//                                                 (v0.149.0, docs/real-peers.md) does: INT stops
//                                                 the agent and exits 0; TERM and HUP kill us at
//                                                 once (Go's default action), leaving the agent
//                                                 running; USR1/USR2 are ignored
//   --upstream-bootstrap  FAKE_SUP_UPSTREAM_BOOTSTRAP=1  start as the upstream supervisor does
//                                                 (v0.149.0): the agent's first run is a bootstrap
//                                                 that must live for 3 s; when it ends sooner we
//                                                 exit 1 at the 3 s mark ("could not get bootstrap
//                                                 info from the Collector") instead of restarting it
// clang-format on
// Without --exit-after it runs until TERM/INT. Plain POSIX: a poll loop with a self-pipe.
// Without --upstream-signals, TERM stops in order like INT and HUP is only recorded: the tests of
// the updater's signal forwarding need a child that survives them; the real one does not.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

int g_pipe[2] = {-1, -1};
std::atomic<bool> g_agent_running{false};

void on_signal(int sig) {
    int saved = errno;
    unsigned char b = static_cast<unsigned char>(sig);
    (void)!write(g_pipe[1], &b, 1);
    errno = saved;
}

std::string opt(int argc, char** argv, const char* name, const char* env) {
    std::string flag = std::string("--") + name;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == flag && i + 1 < argc) return argv[i + 1];
        if (a.rfind(flag + "=", 0) == 0) return a.substr(flag.size() + 1);
    }
    const char* v = std::getenv(env);
    return v ? v : "";
}

bool has_flag(int argc, char** argv, const char* name, const char* env) {
    std::string flag = std::string("--") + name;
    for (int i = 1; i < argc; ++i) {
        if (flag == argv[i]) return true;
    }
    const char* v = std::getenv(env);
    return v && std::strcmp(v, "1") == 0;
}

long long now_ms() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

const char* sig_name(int sig) {
    switch (sig) {
        case SIGHUP:
            return "HUP";
        case SIGINT:
            return "INT";
        case SIGTERM:
            return "TERM";
        case SIGUSR1:
            return "USR1";
        case SIGUSR2:
            return "USR2";
        default:
            return "OTHER";
    }
}

void append_line(const std::string& path, const std::string& line) {
    if (path.empty()) return;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    std::string l = line + "\n";
    (void)!write(fd, l.data(), l.size());
    close(fd);
}

std::string uuid_v7() {
    unsigned char b[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, b, sizeof b) != static_cast<ssize_t>(sizeof b)) {
        for (auto& c : b) c = static_cast<unsigned char>(std::rand());
    }
    if (fd >= 0) close(fd);
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long ms = ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
    for (int i = 0; i < 6; ++i) b[i] = static_cast<unsigned char>(ms >> (8 * (5 - i)));
    b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x70);
    b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
    char out[37];
    std::snprintf(out, sizeof out,
                  "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    return out;
}

void write_persistent_state(const std::string& dir, bool rewrite) {
    if (dir.empty()) return;
    mkdir(dir.c_str(), 0755);
    std::string path = dir + "/persistent_state.yaml";
    struct stat st {};
    if (!rewrite && stat(path.c_str(), &st) == 0) return;
    std::string tmp = path + ".tmp";
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    // The real supervisor writes this second key too: the updater's reader must skip it.
    std::string body = "instance_id: " + uuid_v7() + "\nlast_remote_config_status: null\n";
    (void)!write(fd, body.data(), body.size());
    fsync(fd);
    close(fd);
    rename(tmp.c_str(), path.c_str());
}

void spawn_orphans(int n, int life_ms) {
    pid_t middle = fork();
    if (middle != 0) {
        if (middle > 0) waitpid(middle, nullptr, 0);
        return;
    }
    for (int i = 0; i < n; ++i) {
        if (fork() == 0) {
            setsid();
            usleep(static_cast<useconds_t>(life_ms) * 1000);
            _exit(0);
        }
    }
    _exit(0);  // without waiting: the grandchildren are orphans now
}

pid_t start_agent(const std::string& path) {
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGUSR1, SIG_DFL);
        signal(SIGUSR2, SIG_DFL);
        execl(path.c_str(), path.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    if (pid > 0) g_agent_running = true;
    std::printf("fake-opampsupervisor: agent started pid=%d\n", pid);
    std::fflush(stdout);
    return pid;
}

void serve_health(int port, bool have_agent) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(s, 16) != 0) {
        std::fprintf(stderr, "fake-opampsupervisor: health port %d: %s\n", port, strerror(errno));
        return;
    }
    std::thread([s, have_agent] {
        for (;;) {
            int c = accept4(s, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            char buf[2048];
            (void)!read(c, buf, sizeof buf);
            bool ok = !have_agent || g_agent_running.load();
            const char* r =
                ok ? "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"
                   : "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 9\r\n"
                     "Connection: close\r\n\r\nno agent\n";
            (void)!write(c, r, std::strlen(r));
            close(c);
        }
    }).detach();
}

}  // namespace

int main(int argc, char** argv) {
    if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
    std::string agent = opt(argc, argv, "agent", "FAKE_SUP_AGENT");
    std::string signals_file = opt(argc, argv, "signals-file", "FAKE_SUP_SIGNALS_FILE");
    std::string pid_file = opt(argc, argv, "pid-file", "FAKE_SUP_PID_FILE");
    int health_port = std::atoi(opt(argc, argv, "health-port", "FAKE_SUP_HEALTH_PORT").c_str());
    int orphans = std::atoi(opt(argc, argv, "orphans", "FAKE_SUP_ORPHANS").c_str());
    std::string life = opt(argc, argv, "orphan-life", "FAKE_SUP_ORPHAN_LIFE");
    int orphan_life = life.empty() ? 1000 : std::atoi(life.c_str());
    std::string exit_after = opt(argc, argv, "exit-after", "FAKE_SUP_EXIT_AFTER");
    int exit_code = std::atoi(opt(argc, argv, "exit-code", "FAKE_SUP_EXIT_CODE").c_str());
    bool ignore_term = has_flag(argc, argv, "ignore-term", "FAKE_SUP_IGNORE_TERM");
    bool upstream = has_flag(argc, argv, "upstream-signals", "FAKE_SUP_UPSTREAM_SIGNALS");
    bool bootstrap = has_flag(argc, argv, "upstream-bootstrap", "FAKE_SUP_UPSTREAM_BOOTSTRAP");
    bool exit_with_agent = has_flag(argc, argv, "exit-with-agent", "FAKE_SUP_EXIT_WITH_AGENT");

    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGCHLD})
        sigaction(sig, &sa, nullptr);

    if (!pid_file.empty()) {
        append_line(pid_file + ".tmp", std::to_string(getpid()));
        rename((pid_file + ".tmp").c_str(), pid_file.c_str());
    }
    std::string storage_dir = opt(argc, argv, "storage-dir", "FAKE_SUP_STORAGE_DIR");
    write_persistent_state(storage_dir,
                           has_flag(argc, argv, "new-instance-id", "FAKE_SUP_NEW_INSTANCE_ID"));
    std::string rotate = storage_dir.empty() ? "" : storage_dir + "/rotate-instance-id";
    std::printf("fake-opampsupervisor: started pid=%d\n", getpid());
    std::fflush(stdout);
    if (health_port > 0) serve_health(health_port, !agent.empty());
    if (orphans > 0) spawn_orphans(orphans, orphan_life);

    pid_t agent_pid = agent.empty() ? -1 : start_agent(agent);
    long long agent_restart_at = -1;
    long long deadline = exit_after.empty() ? -1 : now_ms() + std::atoll(exit_after.c_str());
    bool stopping = false;
    // The upstream supervisor's bootstrap: an agent gone before this time fails our start.
    const long long bootstrap_until = bootstrap && agent_pid > 0 ? now_ms() + 3000 : -1;
    bool bootstrap_failed = false;

    for (;;) {
        long long now = now_ms();
        if (deadline >= 0 && now >= deadline && !stopping) {
            std::printf("fake-opampsupervisor: exiting with %d\n", exit_code);
            std::fflush(stdout);
            return exit_code;
        }
        if (bootstrap_failed && now >= bootstrap_until) {
            std::printf(
                "fake-opampsupervisor: starting the supervisor: could not get bootstrap "
                "info from the Collector\n");
            std::fflush(stdout);
            return 1;
        }
        if (agent_restart_at >= 0 && now >= agent_restart_at && !stopping) {
            agent_restart_at = -1;
            agent_pid = start_agent(agent);
        }
        if (!rotate.empty() && access(rotate.c_str(), F_OK) == 0) {
            write_persistent_state(storage_dir, true);
            unlink(rotate.c_str());
        }
        pollfd p{g_pipe[0], POLLIN, 0};
        poll(&p, 1, 50);
        unsigned char sig;
        while (read(g_pipe[0], &sig, 1) == 1) {
            if (sig == SIGCHLD) {
                int st;
                pid_t pid;
                while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
                    if (pid == agent_pid) {
                        agent_pid = -1;
                        g_agent_running = false;
                        if (stopping) return 0;
                        if (now_ms() < bootstrap_until) {
                            bootstrap_failed = true;
                            continue;
                        }
                        if (exit_with_agent) {
                            int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
                            std::printf("fake-opampsupervisor: agent ended, exiting with %d\n",
                                        code);
                            std::fflush(stdout);
                            return code;
                        }
                        agent_restart_at = now_ms() + 200;
                    }
                }
                continue;
            }
            append_line(signals_file, sig_name(sig));
            if (upstream && (sig == SIGTERM || sig == SIGHUP)) {
                signal(sig, SIG_DFL);
                raise(sig);
            }
            if (sig == SIGTERM || sig == SIGINT) {
                if (ignore_term) continue;
                if (agent_pid > 0) {
                    stopping = true;
                    kill(agent_pid, SIGTERM);
                } else {
                    return 0;
                }
            }
        }
    }
}
