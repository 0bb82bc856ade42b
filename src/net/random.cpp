#include "net/random.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace myr::net {

void random_bytes(void* buf, size_t len) {
    auto* p = static_cast<unsigned char*>(buf);
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            // Without a random source no mask or TLS key is safe; there is nothing sane to go on
            // with.
            std::perror("myriarch-updater: getrandom");
            std::abort();
        }
        p += n;
        len -= static_cast<size_t>(n);
    }
}

int random_for_mbedtls(void*, unsigned char* buf, size_t len) {
    random_bytes(buf, len);
    return 0;
}

}  // namespace myr::net
