#include "fsx/fd.hpp"

#include <unistd.h>

namespace myr::fsx {

void UniqueFd::reset(int fd) {
    if (fd_ >= 0 && fd_ != fd) ::close(fd_);
    fd_ = fd;
}

}  // namespace myr::fsx
