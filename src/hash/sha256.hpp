// SHA-256, incremental and over files: a primitive of its own, so that the store and the journal
// use it without depending on the Sigstore code in verify/. The file functions stream in
// fixed-size chunks, so memory stays flat whatever the size; they block, so callers on the event
// loop run them on the work queue.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace myr::hash {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
  public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    void update(const void* data, size_t len);
    void update(std::string_view s) { update(s.data(), s.size()); }
    // Returns the digest; the object is then reset for a new message.
    Digest finish();

  private:
    struct Ctx;
    std::unique_ptr<Ctx> ctx_;
};

Digest sha256(std::string_view data);

// Reads `fd` from its current offset to the end. `size_out`, when given, receives the byte count.
Result<Digest> sha256_fd(int fd, uint64_t* size_out = nullptr);
// Opens `path` (following symlinks; callers that must not follow open the fd themselves).
Result<Digest> sha256_file(const std::string& path, uint64_t* size_out = nullptr);

std::string to_hex(const Digest& d);
// Parses 64 hex digits (either case).
Result<Digest> digest_from_hex(std::string_view hex);

}  // namespace myr::hash
