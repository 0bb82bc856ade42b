// Random bytes from the kernel (getrandom(2)): the one source of randomness of the project, for
// TLS, WebSocket masks and keys, UUIDs, staging ids and backoff jitter.
//
// One failure policy for every caller: the process aborts with a message. Without the kernel's
// random source nothing here is safe to go on with (a TLS key, a mask), and on the kernels the
// updater supports (Linux 3.17 and later) getrandom without flags only blocks until the pool is
// first initialised and never fails.
#pragma once

#include <cstddef>

namespace myr {

void random_bytes(void* buf, size_t len);
// Uniform in [0, 1), from 53 random bits.
double random_unit();

}  // namespace myr
