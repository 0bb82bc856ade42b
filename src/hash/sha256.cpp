#include "hash/sha256.hpp"

#include <fcntl.h>
#include <mbedtls/sha256.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace myr::hash {

struct Sha256::Ctx {
    mbedtls_sha256_context c;
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
    mbedtls_sha256_init(&ctx_->c);
    mbedtls_sha256_starts_ret(&ctx_->c, 0);
}

Sha256::~Sha256() {
    mbedtls_sha256_free(&ctx_->c);
}

void Sha256::update(const void* data, size_t len) {
    mbedtls_sha256_update_ret(&ctx_->c, static_cast<const unsigned char*>(data), len);
}

Digest Sha256::finish() {
    Digest d{};
    mbedtls_sha256_finish_ret(&ctx_->c, d.data());
    mbedtls_sha256_starts_ret(&ctx_->c, 0);
    return d;
}

Digest sha256(std::string_view data) {
    Sha256 h;
    h.update(data);
    return h.finish();
}

Result<Digest> sha256_fd(int fd, uint64_t* size_out) {
    // 256 KiB: large enough that syscall overhead is negligible next to hashing, small enough
    // to keep the resident set flat.
    constexpr size_t kChunk = 256 * 1024;
    std::vector<unsigned char> buf(kChunk);
    Sha256 h;
    uint64_t total = 0;
    for (;;) {
        ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail_errno("read");
        }
        if (n == 0) break;
        h.update(buf.data(), static_cast<size_t>(n));
        total += static_cast<uint64_t>(n);
    }
    if (size_out) *size_out = total;
    return h.finish();
}

Result<Digest> sha256_file(const std::string& path, uint64_t* size_out) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail_errno("sha256: open " + path);
    auto r = sha256_fd(fd, size_out);
    ::close(fd);
    if (!r) return r.fail("sha256: " + path);
    return r;
}

std::string to_hex(const Digest& d) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    out.reserve(64);
    for (uint8_t b : d) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

Result<Digest> digest_from_hex(std::string_view s) {
    if (s.size() != 64)
        return fail("sha256 must be 64 hex digits, got " + std::to_string(s.size()));
    Digest d{};
    auto nib = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (size_t i = 0; i < 32; ++i) {
        int hi = nib(s[2 * i]), lo = nib(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return fail("sha256 has a non-hex character");
        d[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return d;
}

}  // namespace myr::hash
