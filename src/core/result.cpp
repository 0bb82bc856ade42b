#include "core/result.hpp"

#include <cstring>

namespace myr {

const char* to_string(Errc c) {
    switch (c) {
        case Errc::unknown:
            return "unknown";
        case Errc::system:
            return "system";
        case Errc::invalid:
            return "invalid";
        case Errc::network:
            return "network";
        case Errc::integrity:
            return "integrity";
        case Errc::process:
            return "process";
        case Errc::timeout:
            return "timeout";
        case Errc::cancelled:
            return "cancelled";
        case Errc::injected:
            return "injected";
        case Errc::refused:
            return "refused";
    }
    return "unknown";
}

Error Error::from_errno(const std::string& what, int err) {
    return Error(Errc::system, what + ": " + std::strerror(err), err);
}

}  // namespace myr
