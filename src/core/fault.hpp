// Fault injection for crash and failure tests.
//
// MYRIARCH_FAULT=<point>:<action>[,<point>:<action>…] names points in the code where a test wants
// the process to die (`crash`: _exit(137), as after SIGKILL), a step to fail (`fail`: the call
// returns an injected error, as an I/O error would), or a SIGTERM to arrive right there (`term`:
// sent to the process itself, taken by the loop once the current step returns, as a kubelet's
// TERM at that instant would be), or the process to stop right there (`hold`: it creates the file
// named by MYRIARCH_FAULT_HOLD and waits, doing nothing else, until a test removes it; a test
// looks at the files of a step from outside while the step is held). `<point>:<action>@N` acts on
// the N-th pass
// only (1-based). Compiled in only when the build option fault_injection is on (test builds);
// release builds read no environment variable and every check is a no-op returning success.
// MYRIARCH_FAULT_TRACE=<file> appends the name of every point passed to <file>, one per line, so a
// crash matrix can enumerate the points (and their pass numbers) an operation goes through.
#pragma once

#include <string_view>

#include "core/result.hpp"

namespace myr::fault {

// A point where a test may crash the process or make the step fail.
[[nodiscard]] Status point(std::string_view name);

// Re-reads MYRIARCH_FAULT (tests change it within one process).
void reload();

}  // namespace myr::fault
