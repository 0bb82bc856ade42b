#include "core/random.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace myr {

void random_bytes(void* buf, size_t len) {
    auto* p = static_cast<unsigned char*>(buf);
    while (len > 0) {
        ssize_t n = ::getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            std::perror("myriarch-updater: getrandom");
            std::abort();
        }
        p += n;
        len -= static_cast<size_t>(n);
    }
}

double random_unit() {
    uint64_t x = 0;
    random_bytes(&x, sizeof x);
    return static_cast<double>(x >> 11) * 0x1.0p-53;
}

}  // namespace myr
