// libFuzzer target for stage::extract_binary: arbitrary bytes as a release archive, read from a
// memfd into a scratch staging directory. Besides the sanitizers, the invariants of
// stage_fuzz.hpp are checked on every input. The seed corpus (corpus/archive/) holds small good
// and hostile archives of every kind. fuzz_stage_archive.cpp builds structured archives instead.
#include <unistd.h>

#include <cstdint>

#include "stage_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const int dir = myr::fuzz::staging_fd();
    const int fd = myr::fuzz::memfd_of(data, size);
    myr::stage::ExtractLimits limits;
    limits.max_binary_size = 1 << 20;
    limits.max_unpacked = 8 << 20;
    limits.max_members = 1000;
    auto r = myr::stage::extract_binary(fd, myr::fuzz::kBinary, dir, limits);
    ::close(fd);
    myr::fuzz::check_outcome(r, dir, limits);
    return 0;
}
