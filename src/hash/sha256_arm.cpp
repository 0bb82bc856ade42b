// SHA-256 with the ARMv8 SHA-2 instructions (the Cryptography Extension; on nearly every 64-bit Arm
// server and board, but optional, so the caller checks AT_HWCAP first). Only this function is
// compiled for them (a target attribute), so the binary still runs on cores without them.
//
// sha256h/sha256h2 do four rounds on the state halves abcd and efgh (lane 0 = a, resp. e), which
// is also how FIPS 180-4 orders the state: no repacking. sha256su0/sha256su1 compute the message
// schedule four words at a time.
#include "hash/sha256_blocks.hpp"

#if defined(__aarch64__)

#include <arm_neon.h>
#include <sys/auxv.h>

#ifndef HWCAP_SHA2
#define HWCAP_SHA2 (1 << 6)  // arch/arm64/include/uapi/asm/hwcap.h
#endif

#if defined(__clang__)
#define MYR_TARGET_SHA2 __attribute__((target("sha2")))
#else
#define MYR_TARGET_SHA2 __attribute__((target("+crypto")))
#endif

namespace myr::hash::detail {

bool cpu_has_arm_sha2() {
    return (::getauxval(AT_HWCAP) & HWCAP_SHA2) != 0;
}

MYR_TARGET_SHA2 void blocks_arm_sha2(uint32_t state[8], const uint8_t* data, size_t blocks) {
    uint32x4_t abcd = vld1q_u32(&state[0]);
    uint32x4_t efgh = vld1q_u32(&state[4]);

    for (; blocks > 0; --blocks, data += 64) {
        const uint32x4_t abcd_in = abcd;
        const uint32x4_t efgh_in = efgh;
        // w[j % 4] holds the schedule words 4j .. 4j+3 of the group being worked on; the message
        // is big-endian, the lanes little-endian.
        uint32x4_t w[4];
        for (int j = 0; j < 4; ++j) {
            w[j] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(data + 16 * j)));
        }
#pragma GCC unroll 16
        for (int g = 0; g < 16; ++g) {
            if (g >= 4) {
                // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] for t = 4g .. 4g+3: su0 adds
                // s0 to the oldest group, su1 adds W[t-7] and s1.
                w[g % 4] = vsha256su1q_u32(vsha256su0q_u32(w[g % 4], w[(g + 1) % 4]),
                                           w[(g + 2) % 4], w[(g + 3) % 4]);
            }
            const uint32x4_t wk = vaddq_u32(w[g % 4], vld1q_u32(&kRound[4 * g]));
            // sha256h2 needs abcd from before the four rounds.
            const uint32x4_t abcd_before = abcd;
            abcd = vsha256hq_u32(abcd, efgh, wk);
            efgh = vsha256h2q_u32(efgh, abcd_before, wk);
        }
        abcd = vaddq_u32(abcd, abcd_in);
        efgh = vaddq_u32(efgh, efgh_in);
    }
    vst1q_u32(&state[0], abcd);
    vst1q_u32(&state[4], efgh);
}

}  // namespace myr::hash::detail

#endif  // __aarch64__
