// The cost of one /metrics render on the loop (docs/metrics.md, "Budgets"): the registry's text
// with the scrape-time readings the runtime makes (/proc/self, statvfs of a directory), timed
// RENDERS times. Prints the median, p99 and maximum in microseconds, of the wall clock and of the
// thread's CPU time (which a busy machine's preemption does not inflate), and the text's size.
//
// Usage: metrics_bench [DIR [RENDERS]]     (DIR: the directory statvfs reads, default /tmp)
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "runtime/metrics_feed.hpp"

namespace {

double cpu_us() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

void print(const char* what, std::vector<double>& us) {
    std::sort(us.begin(), us.end());
    std::printf("%s: median %.1f us, p99 %.1f us, max %.1f us\n", what, us[us.size() / 2],
                us[us.size() * 99 / 100], us.back());
}

}  // namespace

int main(int argc, char** argv) {
    const std::string dir = argc > 1 ? argv[1] : "/tmp";
    const int renders = argc > 2 ? std::atoi(argv[2]) : 1000;
    myr::FakeClock clock;
    myr::runtime::MetricsFeed feed(clock, dir);
    feed.collector_version("0.117.0");
    feed.set_sources([] { return uint64_t{3}; }, [] { return true; });
    std::vector<double> wall, cpu;
    wall.reserve(static_cast<size_t>(renders));
    cpu.reserve(static_cast<size_t>(renders));
    size_t bytes = 0;
    for (int i = 0; i < renders; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = cpu_us();
        bytes = feed.render().size();
        cpu.push_back(cpu_us() - c0);
        wall.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
    }
    std::printf("renders %d, text %zu bytes\n", renders, bytes);
    print("wall", wall);
    print("cpu", cpu);
    return 0;
}
