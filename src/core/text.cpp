#include "core/text.hpp"

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

}  // namespace myr::text
