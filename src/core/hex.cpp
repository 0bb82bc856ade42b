#include "core/hex.hpp"

namespace myr::hex {

void append(std::string& out, uint8_t byte) {
    static constexpr char kDigits[] = "0123456789abcdef";
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
}

std::string encode(const void* data, size_t len) {
    const auto* p = static_cast<const uint8_t*>(data);
    std::string out;
    out.reserve(2 * len);
    for (size_t i = 0; i < len; ++i) append(out, p[i]);
    return out;
}

int digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool decode(std::string_view text, uint8_t* out, size_t len) {
    if (text.size() != 2 * len) return false;
    for (size_t i = 0; i < len; ++i) {
        int hi = digit(text[2 * i]);
        int lo = digit(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return true;
}

}  // namespace myr::hex
