// ServerToAgent decoding as the agent does it: the WebSocket header, then protobuf-c. Whatever
// decodes must also re-encode and decode to the same fields (our own encoder must accept what our
// decoder produced).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "opamp/messages.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace myr::opamp;
    std::string_view in(reinterpret_cast<const char*>(data), size);
    auto body = unframe_message(in);
    if (!body) return 0;
    auto msg = decode_server_to_agent(*body);
    if (!msg) return 0;
    auto again = decode_server_to_agent(encode(*msg));
    if (!again) __builtin_trap();
    if (again->flags != msg->flags || again->instance_uid != msg->instance_uid ||
        again->new_instance_uid != msg->new_instance_uid ||
        again->heartbeat_interval_seconds != msg->heartbeat_interval_seconds ||
        again->packages_available.has_value() != msg->packages_available.has_value()) {
        __builtin_trap();
    }
    // The other direction is decoded by the test server; it must not crash either.
    (void)decode_agent_to_server(*body);
    return 0;
}
