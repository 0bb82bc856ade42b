// SHA-512 of a file, for the one place that needs it: an in-toto subject that names an artifact
// by SHA-512 only (npm's provenance statements). Everything else in the updater is SHA-256.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/result.hpp"

namespace myr::hash {

using Digest512 = std::array<uint8_t, 64>;

// Streams `path` in 256 KiB chunks (flat memory).
[[nodiscard]] Result<Digest512> sha512_file(const std::string& path);

}  // namespace myr::hash
