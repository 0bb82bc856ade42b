#include "core/text.hpp"

#include <algorithm>

namespace myr::text {

std::string trim(std::string_view s) {
    constexpr std::string_view kSpace = " \t\r\n";
    const size_t first = s.find_first_not_of(kSpace);
    if (first == std::string_view::npos) return "";
    const size_t last = s.find_last_not_of(kSpace);
    return std::string(s.substr(first, last - first + 1));
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

namespace {

// The length of the well-formed sequence at the start of `s`, or 0 with `*bad` set to the length
// of its maximal ill-formed subpart (at least 1). The table is Unicode's Table 3-7.
size_t utf8_sequence(std::string_view s, size_t* bad) {
    const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    const unsigned char lead = b(0);
    if (lead < 0x80) return 1;
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (lead >= 0xC2 && lead <= 0xDF) {
        need = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        need = 2;
        if (lead == 0xE0) lo = 0xA0;
        if (lead == 0xED) hi = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        need = 3;
        if (lead == 0xF0) lo = 0x90;
        if (lead == 0xF4) hi = 0x8F;
    } else {
        *bad = 1;
        return 0;
    }
    for (size_t i = 1; i <= need; ++i) {
        const bool ok =
            i < s.size() && (i == 1 ? b(i) >= lo && b(i) <= hi : b(i) >= 0x80 && b(i) <= 0xBF);
        if (!ok) {
            *bad = i;
            return 0;
        }
    }
    return need + 1;
}

}  // namespace

std::string valid_utf8(std::string_view s, size_t max_bytes) {
    constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
    constexpr std::string_view kEllipsis = "\xE2\x80\xA6";     // U+2026
    max_bytes = std::max(max_bytes, kEllipsis.size());
    std::string out;
    out.reserve(std::min(s.size(), max_bytes));
    // Where the text must be cut if what follows does not fit: the last boundary at which the
    // ellipsis still fits.
    size_t cut = 0;
    while (!s.empty()) {
        size_t bad = 0;
        const size_t n = utf8_sequence(s, &bad);
        const std::string_view piece = n ? s.substr(0, n) : kReplacement;
        if (out.size() + piece.size() > max_bytes) {
            out.resize(cut);
            out += kEllipsis;
            return out;
        }
        out += piece;
        if (out.size() + kEllipsis.size() <= max_bytes) cut = out.size();
        s.remove_prefix(n ? n : bad);
    }
    return out;
}

std::string escape_controls(std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    const std::string u = valid_utf8(s);
    std::string out;
    out.reserve(u.size());
    for (size_t i = 0; i < u.size(); ++i) {
        const auto c = static_cast<unsigned char>(u[i]);
        // In valid UTF-8, U+0080..U+009F are exactly the pairs C2 80..C2 9F.
        const bool c1 =
            c == 0xC2 && i + 1 < u.size() && static_cast<unsigned char>(u[i + 1]) <= 0x9F;
        if (c < 0x20 || c == 0x7F) {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0xF];
        } else if (c1) {
            const auto code = static_cast<unsigned char>(u[++i]);
            out += "\\u00";
            out += kHex[code >> 4];
            out += kHex[code & 0xF];
        } else if (c == '\\') {
            out += "\\\\";
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

std::string single_line(std::string s) {
    for (char& c : s) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    return s;
}

}  // namespace myr::text
