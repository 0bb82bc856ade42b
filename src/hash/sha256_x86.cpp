// SHA-256 with the x86 SHA extensions (Intel SHA-NI, also on AMD since Zen). Only this function is
// compiled for them (a target attribute, not a file-wide -msha), so the rest of the binary still
// runs on any x86-64 and the caller picks this path after checking cpuid.
//
// The instructions keep the eight working variables in two registers in the order the hardware
// wants: "ABEF" holds f e b a and "CDGH" holds h g d c (lane 0 first). One sha256rnds2 does two
// rounds with message word plus round constant from the low two lanes of its third operand, and
// returns the new ABEF; after two rounds the old ABEF is the new CDGH, so the two registers swap
// roles each call and are back in place after every four rounds. sha256msg1 and sha256msg2
// compute the message schedule four words at a time. Lanes in the comments are listed lane 0
// first.
#include "hash/sha256_blocks.hpp"

#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>

namespace myr::hash::detail {

bool cpu_has_x86_sha() {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    // pshufb (SSSE3) swaps the message to big-endian words, pblendw (SSE4.1) packs the state.
    const bool ssse3 = (c & (1u << 9)) != 0;
    const bool sse41 = (c & (1u << 19)) != 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool sha = (b & (1u << 29)) != 0;
    return ssse3 && sse41 && sha;
}

__attribute__((target("sha,sse4.1,ssse3"))) void blocks_x86_sha(uint32_t state[8],
                                                                const uint8_t* data,
                                                                size_t blocks) {
    // Byte order within each 32-bit lane reversed: the message is big-endian.
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);

    // state[0..3] = a b c d and state[4..7] = e f g h, lane 0 first. Repack into ABEF / CDGH.
    __m128i abcd = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[0]));
    __m128i efgh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&state[4]));
    const __m128i badc = _mm_shuffle_epi32(abcd, 0xB1);  // b a d c
    const __m128i hgfe = _mm_shuffle_epi32(efgh, 0x1B);  // h g f e
    __m128i abef = _mm_alignr_epi8(badc, hgfe, 8);       // f e b a
    __m128i cdgh = _mm_blend_epi16(hgfe, badc, 0xF0);    // h g d c

    for (; blocks > 0; --blocks, data += 64) {
        const __m128i abef_in = abef;
        const __m128i cdgh_in = cdgh;
        // w[j % 4] holds the schedule words 4j .. 4j+3 of the group being worked on.
        __m128i w[4];
        for (int j = 0; j < 4; ++j) {
            w[j] = _mm_shuffle_epi8(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * j)), bswap);
        }
#pragma GCC unroll 16
        for (int g = 0; g < 16; ++g) {
            if (g >= 4) {
                // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] for t = 4g .. 4g+3:
                // msg1 adds s0 to the oldest group, alignr supplies W[t-7], msg2 adds s1 (it
                // needs the new words themselves for the upper two lanes, hence the instruction).
                __m128i t = _mm_sha256msg1_epu32(w[g % 4], w[(g + 1) % 4]);
                t = _mm_add_epi32(t, _mm_alignr_epi8(w[(g + 3) % 4], w[(g + 2) % 4], 4));
                w[g % 4] = _mm_sha256msg2_epu32(t, w[(g + 3) % 4]);
            }
            __m128i wk = _mm_add_epi32(
                w[g % 4], _mm_load_si128(reinterpret_cast<const __m128i*>(&kRound[4 * g])));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            // The next two words move into the low lanes for the second pair of rounds.
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef_in);
        cdgh = _mm_add_epi32(cdgh, cdgh_in);
    }

    // Back to a b c d / e f g h.
    const __m128i abef_r = _mm_shuffle_epi32(abef, 0x1B);  // a b e f
    const __m128i ghcd = _mm_shuffle_epi32(cdgh, 0xB1);    // g h c d
    abcd = _mm_blend_epi16(abef_r, ghcd, 0xF0);            // a b c d
    efgh = _mm_alignr_epi8(ghcd, abef_r, 8);               // e f g h
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[0]), abcd);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(&state[4]), efgh);
}

}  // namespace myr::hash::detail

#endif  // __x86_64__
