#include "core/result.hpp"

#include <cstring>

namespace myr {

Error Error::from_errno(const std::string& what, int err) {
    return Error(what + ": " + std::strerror(err), err);
}

}  // namespace myr
