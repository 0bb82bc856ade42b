#include "update/retry.hpp"

#include <algorithm>
#include <cerrno>

namespace myr::update {

FailureClass classify(const Error& e) {
    switch (e.code()) {
        case Errc::network:
        case Errc::timeout:
            return FailureClass::transient;
        case Errc::system:
            return e.sys_errno() == ENOSPC || e.sys_errno() == EDQUOT ? FailureClass::transient
                                                                      : FailureClass::refused;
        case Errc::refused:
            return FailureClass::refused;
        case Errc::unknown:
        case Errc::invalid:
        case Errc::integrity:
        case Errc::process:
        case Errc::cancelled:
        case Errc::injected:
            return FailureClass::deterministic;
    }
    return FailureClass::deterministic;
}

Duration retry_delay(int retry, double unit) {
    const int shift = std::clamp(retry - 1, 0, 20);
    Duration d = kRetryBase * (int64_t{1} << shift);
    if (d > kRetryCap) d = kRetryCap;
    const double scale = 0.5 + 0.5 * std::clamp(unit, 0.0, 1.0);
    return std::chrono::duration_cast<Duration>(d * scale);
}

std::optional<Duration> next_retry(int retry, Duration elapsed, Duration budget, double unit) {
    if (elapsed >= budget) return std::nullopt;
    return std::min(retry_delay(retry, unit), budget - elapsed);
}

}  // namespace myr::update
