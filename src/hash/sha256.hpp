// SHA-256, incremental and over files: a primitive of its own, so that the store and the journal
// use it without depending on the Sigstore code in verify/. The file functions stream in
// fixed-size chunks, so memory stays flat whatever the size; they block, so callers on the event
// loop run them on the work queue.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace myr::hash {

using Digest = std::array<uint8_t, 32>;

// Who compresses the blocks. The fastest one the CPU has is picked once, at the first use: the x86
// SHA extensions or the ARMv8 SHA-2 instructions run at 1.5-2 GB/s where mbedTLS's portable C
// makes about 0.2 GB/s, and the start re-hashes a collector of a quarter gigabyte.
enum class Backend { mbedtls, x86_sha, arm_sha2 };
const char* to_string(Backend b);
// Compiled into this binary and supported by this CPU (mbedtls always is).
bool supported(Backend b);
// The one Sha256() uses.
Backend fastest_backend();

class Sha256 {
  public:
    Sha256();
    // For tests and benchmarks: a backend that is not supported() aborts.
    explicit Sha256(Backend b);

    void update(const void* data, size_t len);
    void update(std::string_view s) { update(s.data(), s.size()); }
    // Returns the digest; the object is then reset for a new message.
    Digest finish();

  private:
    void reset();
    void absorb(const uint8_t* p, size_t len);

    void (*compress_)(uint32_t state[8], const uint8_t* data, size_t blocks);
    uint32_t state_[8];
    uint64_t total_;  // bytes so far
    size_t buffered_;
    uint8_t buffer_[64];
};

Digest sha256(std::string_view data);

// Bytes fed to every Sha256 of this process so far: lets tests check that a start hashes each
// binary once (a relaxed counter; it costs one add per update).
uint64_t bytes_hashed();

// Reads `fd` from its current offset to the end. `size_out`, when given, receives the byte count.
Result<Digest> sha256_fd(int fd, uint64_t* size_out = nullptr);
// sha256_fd for a file expected to hold the same bytes as another: reads `twin_fd` (from its
// current offset) in the same pass and compares, so that two equal files cost one hash. `same`
// says whether `twin_fd` held exactly the bytes of `fd`; when false, its hash is still unknown.
Result<Digest> sha256_fd_twin(int fd, int twin_fd, bool* same, uint64_t* size_out = nullptr);
// Opens `path` (following symlinks; callers that must not follow open the fd themselves).
Result<Digest> sha256_file(const std::string& path, uint64_t* size_out = nullptr);

std::string to_hex(const Digest& d);
// Parses 64 hex digits (either case).
Result<Digest> digest_from_hex(std::string_view hex);

}  // namespace myr::hash
