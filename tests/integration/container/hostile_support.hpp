// Shared by the hostile tests (hostile_test.cpp, hostile_archive_test.cpp): the updater's memory
// as the kernel counts it, and /healthz probed from a thread of the test while an attack runs.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace myr::test {

// A field of /proc/<pid>/status in KiB (VmRSS, VmHWM: the lifetime peak); -1 when absent.
inline long status_kib(pid_t pid, const char* field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    const std::string key = std::string(field) + ":";
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
    }
    return -1;
}

// /healthz probed every 20 ms from a thread of the test, for as long as it lives.
class Prober {
  public:
    using Millis = std::chrono::milliseconds;
    explicit Prober(int port) : port_(port), thread_([this] { loop(); }) {}
    ~Prober() { stop(); }
    Prober(const Prober&) = delete;
    Prober& operator=(const Prober&) = delete;
    void stop() {
        done_ = true;
        if (thread_.joinable()) thread_.join();
    }
    // Probes answered or failed so far; safe while the thread runs.
    size_t count() const { return count_.load(); }
    int failures() const { return failures_.load(); }
    // The times, read after stop(): the thread owns the list while it runs.
    Millis max() const {
        return times_.empty() ? Millis(0) : *std::max_element(times_.begin(), times_.end());
    }
    Millis p99() const {
        if (times_.empty()) return Millis(0);
        std::vector<Millis> t = times_;
        std::sort(t.begin(), t.end());
        return t[std::min(t.size() - 1, t.size() * 99 / 100)];
    }

  private:
    void loop() {
        using Clock = std::chrono::steady_clock;
        while (!done_) {
            auto t0 = Clock::now();
            int status = http_get("127.0.0.1", port_, "/healthz", std::chrono::seconds(2)).status;
            times_.push_back(std::chrono::duration_cast<Millis>(Clock::now() - t0));
            if (status != 200) ++failures_;
            ++count_;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    int port_;
    std::atomic<bool> done_{false};
    std::vector<Millis> times_;
    std::atomic<int> failures_{0};
    std::atomic<size_t> count_{0};
    std::thread thread_;
};

}  // namespace myr::test
