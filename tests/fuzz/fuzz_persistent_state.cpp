// The supervisor's persistent_state.yaml parser: any bytes (up to the reader's size cap) give a
// canonical UUID or an error, never a crash, a leak or a hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "opamp/persistent_state.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > myr::opamp::kMaxPersistentStateSize) return 0;
    auto r = myr::opamp::parse_persistent_state(
        std::string_view(reinterpret_cast<const char*>(data), size));
    if (r && r->size() != 36) __builtin_trap();
    return 0;
}
