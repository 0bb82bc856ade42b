// libFuzzer target for the updater.yaml loader: any input must end in a Config or in problems,
// never a crash, hang or sanitizer report. On success the rendered effective configuration must
// load again to an equal Config (render_effective is what `validate` prints for people to reuse).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/config.hpp"

namespace {

void check(std::string_view text, myr::config::Mode mode) {
    myr::config::LoadResult r = myr::config::load_string(text, "fuzz.yaml", mode);
    if (!r.config) {
        if (r.problems.empty()) std::abort();  // a failed load must say why
        for (const auto& p : r.problems) (void)p.str();
        return;
    }
    if (!r.problems.empty()) std::abort();
    (void)myr::config::recommended_grace_period(*r.config);
    std::string rendered = myr::config::render_effective(*r.config);
    myr::config::LoadResult again = myr::config::load_string(rendered, "fuzz.yaml", mode);
    if (!again.config || !(*again.config == *r.config)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    check(text, myr::config::Mode::any);
    check(text, myr::config::Mode::container);
    return 0;
}
