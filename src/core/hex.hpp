// Hex text of bytes, the one encoder and decoder of the project (digests, ids, UUIDs, escapes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace myr::hex {

// Lower-case hex of `len` bytes.
std::string encode(const void* data, size_t len);
inline std::string encode(std::string_view bytes) {
    return encode(bytes.data(), bytes.size());
}
// Appends the two lower-case hex digits of one byte.
void append(std::string& out, uint8_t byte);
// The value of one hex digit (either case), -1 for anything else.
int digit(char c);
// Decodes exactly 2 × `len` hex digits (either case) into `out`; false on anything else.
[[nodiscard]] bool decode(std::string_view text, uint8_t* out, size_t len);

}  // namespace myr::hex
