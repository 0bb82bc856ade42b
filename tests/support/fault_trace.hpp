// Reading a MYRIARCH_FAULT_TRACE file (src/core/fault.hpp): the product appends the name of every
// fault point it passes, one per line; a crash test turns that into the passes it can crash at.
#pragma once

#include <string>
#include <vector>

namespace myr::test {

// One pass of one fault point: `pass` counts the passes of `point` so far, from 1, as the `@N` of
// MYRIARCH_FAULT does.
struct FaultPass {
    std::string point;
    int pass = 0;
};

// Every pass in the file, in the order the product made them ({} when the file is missing).
std::vector<FaultPass> read_fault_trace(const std::string& path);

// `point@N`, for labels and messages.
std::string label(const FaultPass& p);

// The MYRIARCH_FAULT value that crashes the process at exactly this pass: `point:crash@N`.
std::string crash_at(const FaultPass& p);

}  // namespace myr::test
