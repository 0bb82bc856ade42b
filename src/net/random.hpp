// Cryptographically secure random bytes from the kernel (getrandom(2)), for WebSocket masks and
// keys and as the TLS random source. Blocks only before the kernel pool is first initialised.
#pragma once

#include <cstddef>

namespace myr::net {

void random_bytes(void* buf, size_t len);

// The mbedTLS f_rng signature over random_bytes; `ctx` is unused.
int random_for_mbedtls(void* ctx, unsigned char* buf, size_t len);

}  // namespace myr::net
