#include "opamp/transport.hpp"

#include <algorithm>
#include <cmath>

#include "core/random.hpp"

namespace myr::opamp {

Backoff::Backoff(std::function<double()> random01) : Backoff(Params{}, std::move(random01)) {}

Backoff::Backoff(Params p, std::function<double()> random01)
    : p_(p), random01_(std::move(random01)) {}

double Backoff::base_ms(unsigned n) const {
    double b =
        static_cast<double>(p_.initial.count()) * std::pow(p_.factor, static_cast<double>(n));
    return std::min(b, static_cast<double>(p_.max.count()));
}

Duration Backoff::next() {
    const double b = base_ms(attempt_);
    if (attempt_ < 1000) ++attempt_;
    const double r = random01_ ? random01_() : 0.5;
    const double d = b * (1 + p_.jitter * (2 * r - 1));
    return Duration(static_cast<int64_t>(std::min(d, static_cast<double>(p_.max.count()))));
}

std::function<double()> default_random01() {
    return [] { return random_unit(); };
}

}  // namespace myr::opamp
