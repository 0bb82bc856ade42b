// Version templates: a configured string in which `{version}` stands for the offered version
// (update.signerIdentity's certificate fields, e.g. `refs/tags/v{version}`). `{version}` is the
// only placeholder; any other `{...}` is refused when the configuration is validated, so a typo
// such as `{Version}` cannot silently compare against the literal text.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace myr::version {

// Ok when every `{` opens a `{version}`; otherwise names the first offending placeholder.
[[nodiscard]] Status check_template(std::string_view tmpl);

// `tmpl` with each `{version}` replaced by `version` (the caller passes a canonical version, which
// contains no braces, so the result is not expanded again).
[[nodiscard]] Result<std::string> expand_template(std::string_view tmpl, std::string_view version);

}  // namespace myr::version
