#include "hash/sha256.hpp"

#include <fcntl.h>
#include <mbedtls/sha256.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/hex.hpp"
#include "hash/sha256_blocks.hpp"

namespace myr::hash {

namespace detail {

// mbedTLS 2.28 exposes its block function and the context's state (3.x makes the field private;
// then this fallback would keep a whole mbedtls_sha256_context instead).
void blocks_mbedtls(uint32_t state[8], const uint8_t* data, size_t blocks) {
    mbedtls_sha256_context c;
    mbedtls_sha256_init(&c);
    std::memcpy(c.state, state, sizeof c.state);
    for (; blocks > 0; --blocks, data += 64) (void)mbedtls_internal_sha256_process(&c, data);
    std::memcpy(state, c.state, sizeof c.state);
    mbedtls_sha256_free(&c);
}

#if !defined(__x86_64__)
bool cpu_has_x86_sha() {
    return false;
}
void blocks_x86_sha(uint32_t*, const uint8_t*, size_t) {
    std::abort();
}
#endif
#if !defined(__aarch64__)
bool cpu_has_arm_sha2() {
    return false;
}
void blocks_arm_sha2(uint32_t*, const uint8_t*, size_t) {
    std::abort();
}
#endif

}  // namespace detail

namespace {

std::atomic<uint64_t> g_bytes_hashed{0};

detail::BlockFn compress_fn(Backend b) {
    switch (b) {
        case Backend::mbedtls:
            return detail::blocks_mbedtls;
        case Backend::x86_sha:
            return detail::blocks_x86_sha;
        case Backend::arm_sha2:
            return detail::blocks_arm_sha2;
    }
    return detail::blocks_mbedtls;
}

}  // namespace

const char* to_string(Backend b) {
    switch (b) {
        case Backend::mbedtls:
            return "mbedtls";
        case Backend::x86_sha:
            return "x86-sha";
        case Backend::arm_sha2:
            return "armv8-sha2";
    }
    return "mbedtls";
}

bool supported(Backend b) {
    switch (b) {
        case Backend::mbedtls:
            return true;
        case Backend::x86_sha:
            return detail::cpu_has_x86_sha();
        case Backend::arm_sha2:
            return detail::cpu_has_arm_sha2();
    }
    return false;
}

Backend fastest_backend() {
    // Decided once; a function-local static is initialised thread-safely, and the work queue
    // hashes on several threads.
    static const Backend chosen = [] {
        for (Backend b : {Backend::x86_sha, Backend::arm_sha2}) {
            if (supported(b)) return b;
        }
        return Backend::mbedtls;
    }();
    return chosen;
}

Sha256::Sha256() : Sha256(fastest_backend()) {}

Sha256::Sha256(Backend b) : compress_(compress_fn(b)) {
    if (!supported(b)) {
        std::fprintf(stderr, "sha256: backend %s is not supported on this CPU\n", to_string(b));
        std::abort();
    }
    reset();
}

void Sha256::reset() {
    // FIPS 180-4, 5.3.3: the first 32 bits of the fractional parts of the square roots of the
    // first eight primes.
    static constexpr uint32_t kInit[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::memcpy(state_, kInit, sizeof state_);
    total_ = 0;
    buffered_ = 0;
}

void Sha256::update(const void* data, size_t len) {
    g_bytes_hashed.fetch_add(len, std::memory_order_relaxed);
    absorb(static_cast<const uint8_t*>(data), len);
}

void Sha256::absorb(const uint8_t* p, size_t len) {
    total_ += len;
    if (buffered_ > 0) {
        size_t take = len < 64 - buffered_ ? len : 64 - buffered_;
        std::memcpy(buffer_ + buffered_, p, take);
        buffered_ += take;
        p += take;
        len -= take;
        if (buffered_ < 64) return;
        compress_(state_, buffer_, 1);
        buffered_ = 0;
    }
    // Whole blocks straight from the caller's memory: no copy on the bulk path.
    if (len >= 64) {
        size_t blocks = len / 64;
        compress_(state_, p, blocks);
        p += blocks * 64;
        len -= blocks * 64;
    }
    if (len > 0) {
        std::memcpy(buffer_, p, len);
        buffered_ = len;
    }
}

Digest Sha256::finish() {
    // FIPS 180-4, 5.1.1: a 1 bit, zeros up to 56 mod 64 bytes, the message length in bits as a
    // 64-bit big-endian number.
    const uint64_t bits = total_ * 8;
    uint8_t pad[72] = {0x80};
    size_t zeros_to = buffered_ < 56 ? 56 : 120;
    size_t n = zeros_to - buffered_;
    for (int i = 0; i < 8; ++i) pad[n + i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    absorb(pad, n + 8);
    Digest d{};
    for (int i = 0; i < 8; ++i) {
        d[4 * i] = static_cast<uint8_t>(state_[i] >> 24);
        d[4 * i + 1] = static_cast<uint8_t>(state_[i] >> 16);
        d[4 * i + 2] = static_cast<uint8_t>(state_[i] >> 8);
        d[4 * i + 3] = static_cast<uint8_t>(state_[i]);
    }
    reset();
    return d;
}

uint64_t bytes_hashed() {
    return g_bytes_hashed.load(std::memory_order_relaxed);
}

Digest sha256(std::string_view data) {
    Sha256 h;
    h.update(data);
    return h.finish();
}

namespace {

// 256 KiB: large enough that syscall overhead is negligible next to hashing, small enough to keep
// the resident set flat (and the buffer in the L2 cache while it is hashed).
constexpr size_t kChunk = 256 * 1024;

ssize_t read_some(int fd, uint8_t* p, size_t n) {
    for (;;) {
        ssize_t r = ::read(fd, p, n);
        if (r >= 0 || errno != EINTR) return r;
    }
}

// Reads until `n` bytes or the end of the file; false on a read error.
bool read_full(int fd, uint8_t* p, size_t n, size_t* got) {
    *got = 0;
    while (*got < n) {
        ssize_t r = read_some(fd, p + *got, n - *got);
        if (r < 0) return false;
        if (r == 0) break;
        *got += static_cast<size_t>(r);
    }
    return true;
}

}  // namespace

Result<Digest> sha256_fd(int fd, uint64_t* size_out) {
    std::vector<uint8_t> buf(kChunk);
    // A larger read-ahead window when the file comes from disk; a hint only.
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    Sha256 h;
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read_some(fd, buf.data(), buf.size());
        if (n < 0) return fail_errno("read");
        if (n == 0) break;
        h.update(buf.data(), static_cast<size_t>(n));
        total += static_cast<uint64_t>(n);
    }
    if (size_out) *size_out = total;
    return h.finish();
}

Result<Digest> sha256_fd_twin(int fd, int twin_fd, bool* same, uint64_t* size_out) {
    std::vector<uint8_t> buf(2 * kChunk);
    uint8_t* mine = buf.data();
    uint8_t* theirs = buf.data() + kChunk;
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    (void)::posix_fadvise(twin_fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    Sha256 h;
    uint64_t total = 0;
    // Stays true while every byte of the twin so far matched; the twin is not read any further
    // once it did not (nor when reading it fails: the caller then hashes it on its own and meets
    // the error there, where it belongs).
    bool equal = true;
    for (;;) {
        ssize_t n = read_some(fd, mine, kChunk);
        if (n < 0) return fail_errno("read");
        if (n == 0) break;
        h.update(mine, static_cast<size_t>(n));
        total += static_cast<uint64_t>(n);
        if (equal) {
            size_t got = 0;
            equal = read_full(twin_fd, theirs, static_cast<size_t>(n), &got) &&
                    got == static_cast<size_t>(n) && std::memcmp(mine, theirs, got) == 0;
        }
    }
    if (equal) {
        size_t got = 0;
        equal = read_full(twin_fd, theirs, 1, &got) && got == 0;  // the twin ends here too
    }
    *same = equal;
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
    return hex::encode(d.data(), d.size());
}

Result<Digest> digest_from_hex(std::string_view s) {
    if (s.size() != 64)
        return fail("sha256 must be 64 hex digits, got " + std::to_string(s.size()));
    Digest d{};
    if (!hex::decode(s, d.data(), d.size())) return fail("sha256 has a non-hex character");
    return d;
}

}  // namespace myr::hash
