#include "version/template.hpp"

namespace myr::version {

namespace {

constexpr std::string_view kPlaceholder = "{version}";

}  // namespace

Status check_template(std::string_view tmpl) {
    for (size_t i = 0; i < tmpl.size(); ++i) {
        if (tmpl[i] == '}') {
            return fail("a '}' at offset " + std::to_string(i) + " closes no placeholder");
        }
        if (tmpl[i] != '{') continue;
        if (tmpl.substr(i, kPlaceholder.size()) == kPlaceholder) {
            i += kPlaceholder.size() - 1;
            continue;
        }
        size_t close = tmpl.find('}', i);
        std::string what = close == std::string_view::npos
                               ? std::string(tmpl.substr(i)) + " (unclosed)"
                               : std::string(tmpl.substr(i, close - i + 1));
        return fail("unknown placeholder " + what + ": only {version} is replaced");
    }
    return {};
}

Result<std::string> expand_template(std::string_view tmpl, std::string_view version) {
    if (auto ok = check_template(tmpl); !ok) return ok.fail();
    std::string out;
    out.reserve(tmpl.size() + version.size());
    for (size_t i = 0; i < tmpl.size();) {
        if (tmpl.substr(i, kPlaceholder.size()) == kPlaceholder) {
            out.append(version);
            i += kPlaceholder.size();
        } else {
            out.push_back(tmpl[i++]);
        }
    }
    return out;
}

}  // namespace myr::version
