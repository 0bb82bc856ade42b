// fake-otelcol: a stand-in for the collector (shared/design/testing.md), one build for many
// "releases". Its behaviour comes from a text trailer appended to its own file, read through
// /proc/self/exe; the last trailer wins:
//
//   cp fake-otelcol v2 && printf '\n#MYRIARCH-FAKE version=0.117.0 health=fail\n' >> v2
//
// Keys (all optional):
//   version=0.116.0         what --version reports (default 0.0.1)
//   version_output=ok|garbage|empty|hang|fail
//                           ok: "otelcol-contrib version <v>"; garbage: a line without a version;
//                           empty: nothing, exit 0; hang: never returns; fail: exit 1
//   validate=ok|fail|hang   `validate --config=F`: exit 0, or 1 with validate_message on stderr,
//                           or never return
//   validate_message=text   (underscores become spaces)
//   validate_lines=N        validate first prints N lines "validate line <i>" on stdout
//   validate_alloc_mb=N     validate allocates and touches N MiB first (peak memory tests)
//   validate_ids=1          validate first prints "validate uid=<uid> gid=<gid>" on stdout
//   validate_daemon=NAME    validate first forks a daemon named NAME (its comm, at most 15
//                           characters) that closes its output, ignores TERM and HUP and sleeps
//                           for ever in validate's process group; validate itself goes on
//   health=ok|fail          running: GET / on the health port answers 200 or 503
//   health_port=N           health port; FAKE_OTELCOL_HEALTH_PORT wins, then the port of the first
//                           `endpoint:` after `health_check` in the file given by --config;
//                           0/absent everywhere: no server
//   start_delay=T           wait before serving
//   exit_after=T            exit on its own after T with exit_code (default 1); 0: never
//   exit_code=N
//   hang=1                  running: never serve, never exit on its own
//   ignore_term=1           SIGTERM is ignored (only SIGKILL ends it)
//   alloc_mb=N              allocate and touch N MiB at start
// Durations T: "500ms", "2s" or a bare number of milliseconds.
// With FAKE_OTELCOL_RECORD=<file> every start appends "<pid> <version> <args…>" to that file.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

using Trailer = std::map<std::string, std::string>;

constexpr const char* kMarker = "\n#MYRIARCH-FAKE ";

Trailer read_trailer() {
    Trailer t;
    int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return t;
    struct stat st {};
    std::string tail;
    if (::fstat(fd, &st) == 0) {
        off_t want = st.st_size < 65536 ? st.st_size : 65536;
        tail.resize(static_cast<size_t>(want));
        ssize_t n = ::pread(fd, tail.data(), tail.size(), st.st_size - want);
        tail.resize(n > 0 ? static_cast<size_t>(n) : 0);
    }
    ::close(fd);
    size_t pos = tail.rfind(kMarker);
    if (pos == std::string::npos) return t;
    size_t start = pos + std::strlen(kMarker);
    size_t end = tail.find('\n', start);
    std::string line =
        tail.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && line[i] == ' ') ++i;
        size_t j = line.find(' ', i);
        std::string item = line.substr(i, j == std::string::npos ? std::string::npos : j - i);
        size_t eq = item.find('=');
        if (eq != std::string::npos) t[item.substr(0, eq)] = item.substr(eq + 1);
        if (j == std::string::npos) break;
        i = j + 1;
    }
    return t;
}

std::string get(const Trailer& t, const char* key, const char* def) {
    auto it = t.find(key);
    return it == t.end() ? def : it->second;
}

long millis(const std::string& v) {
    if (v.empty()) return 0;
    char* end = nullptr;
    double n = std::strtod(v.c_str(), &end);
    std::string unit = end ? end : "";
    if (unit == "s") return static_cast<long>(n * 1000);
    return static_cast<long>(n);  // "ms" or bare
}

long now_ms() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sleep_ms(long ms) {
    timespec ts{ms / 1000, (ms % 1000) * 1000000};
    while (::nanosleep(&ts, &ts) != 0) {
    }
}

[[noreturn]] void hang_forever() {
    for (;;) ::pause();
}

void write_all(int fd, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
        ssize_t n = ::write(fd, s.data() + off, s.size() - off);
        if (n <= 0) return;
        off += static_cast<size_t>(n);
    }
}

void record_start(const std::string& version, int argc, char** argv) {
    const char* path = std::getenv("FAKE_OTELCOL_RECORD");
    if (!path || !*path) return;
    std::string line = std::to_string(::getpid()) + " " + version;
    for (int i = 1; i < argc; ++i) line += std::string(" ") + argv[i];
    line += '\n';
    int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    write_all(fd, line);
    ::close(fd);
}

int print_version(const Trailer& t, const std::string& version) {
    std::string mode = get(t, "version_output", "ok");
    if (mode == "hang") hang_forever();
    if (mode == "fail") {
        write_all(2, "fake-otelcol: --version failed on purpose\n");
        return 1;
    }
    if (mode == "empty") return 0;
    if (mode == "garbage") {
        write_all(1, "Segmentation fault?! \x01\x02 not a version\n");
        return 0;
    }
    write_all(1, "otelcol-contrib version " + version + "\n");
    return 0;
}

// A daemon as a careless validate leaves it: output closed, deaf to TERM and HUP, in the group.
void start_daemon(const std::string& name) {
    if (::fork() != 0) return;
    ::prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
    ::signal(SIGTERM, SIG_IGN);
    ::signal(SIGHUP, SIG_IGN);
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd <= 2; ++fd) ::dup2(null, fd);
    hang_forever();
}

int validate(const Trailer& t) {
    if (auto name = get(t, "validate_daemon", ""); !name.empty()) start_daemon(name);
    if (get(t, "validate_ids", "0") == "1") {
        write_all(1, "validate uid=" + std::to_string(::getuid()) +
                         " gid=" + std::to_string(::getgid()) + "\n");
    }
    long lines = std::atol(get(t, "validate_lines", "0").c_str());
    for (long i = 1; i <= lines; ++i) write_all(1, "validate line " + std::to_string(i) + "\n");
    long alloc = std::atol(get(t, "validate_alloc_mb", "0").c_str());
    std::vector<char> ballast;
    if (alloc > 0) ballast.assign(static_cast<size_t>(alloc) * 1024 * 1024, 1);
    // Read back, so that no optimiser drops the touched pages.
    volatile char keep = ballast.empty() ? 0 : ballast[ballast.size() / 2];
    (void)keep;
    std::string mode = get(t, "validate", "ok");
    if (mode == "hang") hang_forever();
    if (mode == "ok") return 0;
    std::string msg = get(t, "validate_message", "invalid_configuration");
    for (char& c : msg) {
        if (c == '_') c = ' ';
    }
    write_all(2, "Error: " + msg + "\n");
    return 1;
}

int listen_on(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const char* host = std::getenv("FAKE_OTELCOL_HEALTH_HOST");
    if (::inet_pton(AF_INET, host && *host ? host : "127.0.0.1", &addr.sin_addr) != 1) {
        ::close(fd);
        return -1;
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

void answer(int client, bool healthy) {
    // Read the request head (bounded), then answer whatever it was.
    char buf[4096];
    std::string req;
    pollfd p{client, POLLIN, 0};
    while (req.find("\r\n\r\n") == std::string::npos && req.size() < 16384) {
        if (::poll(&p, 1, 1000) <= 0) break;
        ssize_t n = ::read(client, buf, sizeof buf);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
    }
    std::string body =
        healthy ? "{\"status\":\"Server available\"}\n" : "{\"status\":\"Server not available\"}\n";
    std::string head = healthy ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 503 Service Unavailable\r\n";
    write_all(client, head + "Content-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
}

// The health_check extension's port in a collector config: the first `endpoint: host:port` after
// the word health_check. Good enough for the configs the tests write; 0 when not found.
int port_from_config(int argc, char** argv) {
    std::string path;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--config=", 0) == 0) path = a.substr(9);
        if (a == "--config" && i + 1 < argc) path = argv[i + 1];
    }
    if (path.empty()) return 0;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    std::string text;
    char buf[4096];
    ssize_t n;
    while (text.size() < 1 << 20 && (n = ::read(fd, buf, sizeof buf)) > 0) {
        text.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    size_t hc = text.find("health_check");
    if (hc == std::string::npos) return 0;
    size_t ep = text.find("endpoint:", hc);
    if (ep == std::string::npos) return 0;
    size_t eol = text.find('\n', ep);
    std::string value =
        text.substr(ep + 9, eol == std::string::npos ? std::string::npos : eol - ep - 9);
    size_t colon = value.rfind(':');
    if (colon == std::string::npos) return 0;
    return std::atoi(value.c_str() + colon + 1);
}

volatile sig_atomic_t g_term = 0;
void on_term(int) {
    g_term = 1;
}

int run(const Trailer& t, const std::string& version, int config_port) {
    if (get(t, "ignore_term", "0") == "1") {
        ::signal(SIGTERM, SIG_IGN);
    } else {
        struct sigaction sa {};
        sa.sa_handler = on_term;
        ::sigaction(SIGTERM, &sa, nullptr);
        ::sigaction(SIGINT, &sa, nullptr);
    }
    long alloc = std::atol(get(t, "alloc_mb", "0").c_str());
    std::vector<char> ballast;
    if (alloc > 0) ballast.assign(static_cast<size_t>(alloc) * 1024 * 1024, 1);

    std::fprintf(stderr, "fake-otelcol %s: running, pid %d\n", version.c_str(), ::getpid());
    long start_delay = millis(get(t, "start_delay", "0"));
    if (start_delay > 0) sleep_ms(start_delay);
    if (get(t, "hang", "0") == "1") hang_forever();

    long exit_after = millis(get(t, "exit_after", "0"));
    int exit_code = std::atoi(get(t, "exit_code", "1").c_str());
    long deadline = exit_after > 0 ? now_ms() + exit_after : 0;
    const char* env_port = std::getenv("FAKE_OTELCOL_HEALTH_PORT");
    int port = 0;
    if (env_port && *env_port) {
        port = std::atoi(env_port);
    } else if (config_port > 0) {
        port = config_port;
    } else {
        port = std::atoi(get(t, "health_port", "0").c_str());
    }
    bool healthy = get(t, "health", "ok") == "ok";
    int lfd = port > 0 ? listen_on(port) : -1;
    if (port > 0 && lfd < 0) std::fprintf(stderr, "fake-otelcol: cannot listen on %d\n", port);

    while (!g_term) {
        int timeout = 200;
        if (deadline) {
            long left = deadline - now_ms();
            if (left <= 0) {
                std::fprintf(stderr, "fake-otelcol %s: exiting with %d as told\n", version.c_str(),
                             exit_code);
                return exit_code;
            }
            if (left < timeout) timeout = static_cast<int>(left);
        }
        if (lfd < 0) {
            sleep_ms(timeout);
            continue;
        }
        pollfd p{lfd, POLLIN, 0};
        if (::poll(&p, 1, timeout) <= 0) continue;
        int c = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        answer(c, healthy);
        ::close(c);
    }
    std::fprintf(stderr, "fake-otelcol %s: stopping on signal\n", version.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    Trailer t = read_trailer();
    std::string version = get(t, "version", "0.0.1");
    record_start(version, argc, argv);
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--version" || a == "-v" || a == "version") return print_version(t, version);
    }
    if (argc > 1 && std::string(argv[1]) == "validate") return validate(t);
    return run(t, version, port_from_config(argc, argv));
}
