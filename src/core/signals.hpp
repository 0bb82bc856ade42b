// The signal state a program gets from us at exec.
#pragma once

namespace myr::sigstate {

// Sets every catchable signal to its default action, then unblocks all. Async-signal-safe: meant
// for a forked child before exec, which would otherwise keep what it inherited ignored (our own
// handlers are reset by exec, ignored signals and the mask are not). Dispositions first, so a
// pending signal meets the default action rather than our handler.
void restore_defaults();

}  // namespace myr::sigstate
