#include "store/precedence.hpp"

#include <vector>

#include "version/version.hpp"

namespace myr::store {

const char* to_string(Rule r) {
    switch (r) {
        case Rule::nothing_active:
            return "no version active yet";
        case Rule::active_broken:
            return "active version broken";
        case Rule::image_policy:
            return "policy image";
        case Rule::image_policy_current:
            return "policy image, image binary already active";
        case Rule::newest_active_newer:
            return "policy newest, active newer than image";
        case Rule::newest_tie:
            return "policy newest, active equal to image";
        case Rule::newest_active_older:
            return "policy newest, active older than image";
        case Rule::not_comparable:
            return "versions not comparable";
        case Rule::image_version_unknown:
            return "image version unknown, active kept";
    }
    return "unknown";
}

namespace {

bool is_image_binary_of(const Active& a, const std::string& image_version) {
    return a.state == Active::State::intact && a.marker && a.version == image_version &&
           a.marker->source == Source::image;
}

}  // namespace

bool needs_image_hash(SeedPolicy policy, const std::string& image_version, const Active& active) {
    return policy == SeedPolicy::image && is_image_binary_of(active, image_version);
}

Decision decide(SeedPolicy policy, const std::string& image_version, const Active& active,
                const std::string& image_sha256) {
    if (active.state == Active::State::none) return {true, Rule::nothing_active};
    if (active.state == Active::State::broken) return {true, Rule::active_broken};
    if (policy == SeedPolicy::image) {
        if (is_image_binary_of(active, image_version) &&
            (image_sha256.empty() || image_sha256 == active.marker->sha256)) {
            return {false, Rule::image_policy_current};
        }
        return {true, Rule::image_policy};
    }
    switch (version::compare(active.version, image_version)) {
        case version::Order::greater:
            return {false, Rule::newest_active_newer};
        case version::Order::equal:
            return {false, Rule::newest_tie};
        case version::Order::less:
            return {true, Rule::newest_active_older};
        case version::Order::not_comparable:
            return {true, Rule::not_comparable};
    }
    return {true, Rule::not_comparable};
}

std::optional<std::string> version_from_output(std::string_view output) {
    if (output.size() > 64 * 1024) output = output.substr(0, 64 * 1024);
    std::vector<std::string_view> tokens;
    size_t i = 0;
    while (i < output.size()) {
        while (i < output.size() &&
               (output[i] == ' ' || output[i] == '\t' || output[i] == '\n' || output[i] == '\r')) {
            ++i;
        }
        size_t start = i;
        while (i < output.size() &&
               !(output[i] == ' ' || output[i] == '\t' || output[i] == '\n' || output[i] == '\r')) {
            ++i;
        }
        if (i > start) tokens.push_back(output.substr(start, i - start));
    }
    auto canonical = [](std::string_view t) -> std::optional<std::string> {
        auto v = version::parse(t);
        if (!v) return std::nullopt;
        return version::to_string(*v);
    };
    // "<name> version <v>": the token after the first "version" decides.
    for (size_t k = 0; k + 1 < tokens.size(); ++k) {
        if (tokens[k] == "version") return canonical(tokens[k + 1]);
    }
    // A bare version is accepted too.
    if (tokens.size() == 1) return canonical(tokens[0]);
    return std::nullopt;
}

}  // namespace myr::store
