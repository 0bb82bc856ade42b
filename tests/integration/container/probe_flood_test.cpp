// Clients that ask and never read, against the real binary as PID 1 (issue 43, item 1): 16
// keep-alive connections to container.healthListen, each sending one request every half
// millisecond and reading nothing. PID 1's resident memory must stay within 32 MB throughout and
// come back to where it was once they leave; a fresh client (the kubelet) must be answered all
// along (docs/pid1.md, "Probes").
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "hostile_support.hpp"
#include "pid1.hpp"
#include "updater_config.hpp"

using namespace myr::test;

namespace {

constexpr int kClients = 16;
constexpr long kLimitKib = 32 * 1024;  // PID 1's resident memory, at any time
// Back "near idle" once the clients have gone: the allocator may keep a little of what it used.
constexpr long kSlackKib = 2 * 1024;
// Each endpoint is flooded this long. The client sent every 8 ms for 40 s; these send
// every 0.5 ms, 16 times the rate, so 10 s carries more requests than its 40 s did.
constexpr auto kMetricsFlood = std::chrono::seconds(10);
constexpr auto kHealthzFlood = std::chrono::seconds(30);

// Clients with a small receive buffer: the kernel's share fills at once, and what the server
// keeps is what it holds itself.
int open_client(int port) {
    int fd = connect_loopback(port, 4096);
    int one = 1;
    if (fd >= 0) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

struct Flood {
    long peak_kib = 0;
    long sent = 0;        // requests the kernel took
    long refused = 0;     // sends that found the buffers full (EAGAIN)
    long reconnects = 0;  // connections the server closed, opened again
    double seconds = 0;   // how long it ran (less than asked when PID 1 went over the limit)
};

// Floods `path` from kClients connections for kFlood; stops early once PID 1 is over the limit,
// so a failing run does not take the machine's memory with it.
Flood flood(pid_t pid, int port, const std::string& path, std::chrono::seconds how_long) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: probe\r\n\r\n";
    std::vector<int> fds;
    for (int i = 0; i < kClients; ++i) fds.push_back(open_client(port));
    Flood f;
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + how_long;
    auto next_sample = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < end && f.peak_kib <= kLimitKib) {
        for (int& fd : fds) {
            if (fd < 0) fd = open_client(port);
            if (fd < 0) continue;
            ssize_t n = ::send(fd, request.data(), request.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) {
                ++f.sent;
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                ++f.refused;
            } else {
                ::close(fd);
                fd = -1;
                ++f.reconnects;
            }
        }
        if (std::chrono::steady_clock::now() >= next_sample) {
            f.peak_kib = std::max(f.peak_kib, status_kib(pid, "VmRSS"));
            next_sample += std::chrono::milliseconds(50);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    f.peak_kib = std::max(f.peak_kib, status_kib(pid, "VmRSS"));
    f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (int fd : fds) {
        if (fd >= 0) ::close(fd);
    }
    return f;
}

void flood_case(const std::string& path, std::chrono::seconds how_long) {
    if (!can_run_pid1()) return;
    TempDir dir;
    std::string seed = dir / "seed-otelcol";
    REQUIRE(run({"cp", env_path("MYRIARCH_FAKE_OTELCOL"), seed}).exit_code == 0);
    write_file(seed, read_file(seed) + "\n#MYRIARCH-FAKE version=0.116.0\n", 0755);
    UpdaterConfig s;
    s.install_dir = dir / "install";
    s.state_dir = dir / "state";
    s.storage_dir = dir / "supervisor";
    s.seed_binary = seed;
    s.supervisor_command = {env_path("MYRIARCH_FAKE_OPAMPSUPERVISOR")};
    s.health_port = reserve_port();
    Updater u(s.write(dir / "updater.yaml"));
    const int port = s.health_port;
    REQUIRE(wait_until([&] { return http_get("127.0.0.1", port, "/readyz").status == 200; }, 15s));
    // Idle: after one answer of each kind, so what a first answer sets up counts as idle.
    REQUIRE(http_get("127.0.0.1", port, "/metrics").status == 200);
    REQUIRE(http_get("127.0.0.1", port, "/healthz").status == 200);
    const long idle = status_kib(u.pid(), "VmRSS");
    REQUIRE(idle > 0);

    Prober kubelet(port);
    Flood f = flood(u.pid(), port, path, how_long);
    kubelet.stop();
    MESSAGE(path << ": idle " << idle << " KiB, peak " << f.peak_kib << " KiB in " << f.seconds
                 << " s; " << f.sent << " requests taken, " << f.refused
                 << " sends found the buffers full, " << f.reconnects << " reconnects; kubelet "
                 << kubelet.count() << " probes, " << kubelet.failures() << " failed, max "
                 << kubelet.max().count() << " ms");
    CHECK(f.peak_kib <= kLimitKib);
    CHECK(f.sent > 0);
    CHECK(kubelet.count() > 0);
    CHECK(kubelet.failures() == 0);

    // The clients are gone: the memory comes back (their connections close at once, or at the
    // request timeout of 5 s).
    long after = 0;
    CHECK(wait_until(
        [&] {
            after = status_kib(u.pid(), "VmRSS");
            return after <= idle + kSlackKib;
        },
        15s, 100ms));
    MESSAGE(path << ": after the clients left " << after << " KiB");
    CHECK(http_get("127.0.0.1", port, "/healthz").status == 200);
    CHECK(u.stop() == 0);
}

}  // namespace

TEST_CASE("probe flood: 16 clients that send GET /metrics and never read cannot grow PID 1") {
    flood_case("/metrics", kMetricsFlood);
}

TEST_CASE("probe flood: 16 clients that send GET /healthz and never read cannot grow PID 1") {
    flood_case("/healthz", kHealthzFlood);
}
