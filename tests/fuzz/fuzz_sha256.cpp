// Differential libFuzzer target for SHA-256: every backend this CPU has, fed the input in pieces
// whose sizes come from the input itself, must give the digest of mbedTLS's one-shot API (its own
// padding and streaming, independent of ours). The first two bytes pick the piece sizes, so
// libFuzzer explores the buffering edge cases (pieces that end just before, on and after a block
// boundary) as well as the data.
#include <mbedtls/sha256.h>

#include <cstdint>
#include <cstdlib>

#include "hash/sha256.hpp"

using namespace myr::hash;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const size_t a = 1 + data[0];      // 1..256 bytes
    const size_t b = 1 + data[1] * 3;  // 1..766 bytes
    const uint8_t* msg = data + 2;
    const size_t len = size - 2;

    Digest want{};
    if (mbedtls_sha256_ret(msg, len, want.data(), 0) != 0) std::abort();
    for (Backend backend : {Backend::mbedtls, Backend::x86_sha, Backend::arm_sha2}) {
        if (!supported(backend)) continue;
        Sha256 h(backend);
        size_t off = 0;
        for (int turn = 0; off < len; ++turn) {
            size_t n = turn % 2 == 0 ? a : b;
            if (n > len - off) n = len - off;
            h.update(msg + off, n);
            off += n;
        }
        if (h.finish() != want) std::abort();
        // One piece, and the object reused after finish().
        h.update(msg, len);
        if (h.finish() != want) std::abort();
    }
    return 0;
}
