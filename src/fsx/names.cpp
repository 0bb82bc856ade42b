#include "fsx/names.hpp"

#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "fsx/file.hpp"

namespace myr::fsx::detail {

Status check_name(const std::string& name) {
    if (name.empty()) return fail("empty file name");
    if (name == "." || name == "..") return fail("invalid file name \"" + name + "\"");
    if (name.find('/') != std::string::npos) {
        return fail("file name \"" + name + "\" has more than one path component");
    }
    return {};
}

namespace {

// splitmix64: spreads a counter, the time and the pid over 64 bits. Unpredictability is not needed
// for safety (O_EXCL refuses an existing name and the caller retries); it only avoids collisions.
uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

}  // namespace

std::string temp_name_for(const std::string& name) {
    static std::atomic<uint64_t> counter{0};
    struct timespec ts {};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t r = mix(counter.fetch_add(1) ^ (static_cast<uint64_t>(ts.tv_nsec) << 20) ^
                     static_cast<uint64_t>(ts.tv_sec) ^ (static_cast<uint64_t>(::getpid()) << 40));
    static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string suffix;
    for (int i = 0; i < 6; ++i) {
        suffix += kChars[r % 62];
        r /= 62;
    }
    // 255 (NAME_MAX) minus ".", ".tmp-" and the suffix.
    constexpr size_t kMaxBase = 255 - 1 - 5 - 6;
    return "." + name.substr(0, kMaxBase) + ".tmp-" + suffix;
}

}  // namespace myr::fsx::detail

namespace myr::fsx {

// The rule that goes with temp_name_for: "." + a name of at least one character + ".tmp-" + six
// characters.
bool is_temp_name(std::string_view name) {
    constexpr std::string_view kMark = ".tmp-";
    if (name.size() < 1 + 1 + kMark.size() + 6 || name[0] != '.') return false;
    return name.substr(name.size() - 6 - kMark.size(), kMark.size()) == kMark;
}

}  // namespace myr::fsx
