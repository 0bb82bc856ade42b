#include "hash/sha512.hpp"

#include <fcntl.h>
#include <mbedtls/sha512.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace myr::hash {

Result<Digest512> sha512_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail_errno("sha512: open " + path);
    std::vector<uint8_t> buf(256 * 1024);
    mbedtls_sha512_context ctx;
    mbedtls_sha512_init(&ctx);
    mbedtls_sha512_starts_ret(&ctx, 0);
    ssize_t n;
    while ((n = ::read(fd, buf.data(), buf.size())) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        mbedtls_sha512_update_ret(&ctx, buf.data(), static_cast<size_t>(n));
    }
    int saved = errno;
    ::close(fd);
    Digest512 d{};
    mbedtls_sha512_finish_ret(&ctx, d.data());
    mbedtls_sha512_free(&ctx);
    if (n < 0) {
        errno = saved;
        return fail_errno("sha512: read " + path);
    }
    return d;
}

}  // namespace myr::hash
