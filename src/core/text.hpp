// Small text helpers, ASCII only (configuration keys, URLs, tokens, header names).
#pragma once

#include <string>
#include <string_view>

namespace myr::text {

// Without leading and trailing spaces, tabs, CR and LF.
std::string trim(std::string_view s);
// A-Z mapped to a-z; everything else unchanged.
std::string lower(std::string_view s);
// Equal but for the case of A-Z (header names, schemes).
bool iequals(std::string_view a, std::string_view b);

}  // namespace myr::text
