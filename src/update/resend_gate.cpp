#include "update/resend_gate.hpp"

#include "update/retry.hpp"

namespace myr::update {

void ResendGate::failed(const std::string& key, MonoTime now, double unit) {
    if (key != key_) {
        key_ = key;
        failures_ = 0;
    }
    ++failures_;
    not_before_ = saturating_add(now, retry_delay(failures_, unit));
}

std::optional<Duration> ResendGate::wait(const std::string& key, MonoTime now) const {
    if (key.empty() || key != key_ || now >= not_before_) return std::nullopt;
    return std::chrono::duration_cast<Duration>(not_before_ - now);
}

}  // namespace myr::update
