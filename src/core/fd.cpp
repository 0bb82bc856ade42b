#include "core/fd.hpp"

#include <unistd.h>

namespace myr {

void UniqueFd::reset(int fd) {
    if (fd_ >= 0 && fd_ != fd) ::close(fd_);
    fd_ = fd;
}

}  // namespace myr
