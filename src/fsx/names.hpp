// Internal helpers shared by the fsx sources: name checks and temp names.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace myr::fsx::detail {

// A single path component: not empty, no '/', not "." or "..".
[[nodiscard]] Status check_name(const std::string& name);

// ".<name>.tmp-XXXXXX" with six fresh random characters (the name part shortened to fit NAME_MAX).
std::string temp_name_for(const std::string& name);

}  // namespace myr::fsx::detail
