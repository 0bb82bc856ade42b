// libFuzzer target for the WebSocket frame decoder. The first byte picks the role and how the
// input is split into reads; every decoded message must survive an encode/decode round trip.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "net/ws_frame.hpp"

using namespace myr::net::ws;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const uint8_t ctl = data[0];
    const Role role = (ctl & 1) ? Role::server : Role::client;
    const size_t step = 1 + (ctl >> 1);  // 1..128 bytes per read
    std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    Decoder dec(role, 1 << 16);
    while (!input.empty()) {
        std::string_view piece = input.substr(0, step);
        input.remove_prefix(piece.size());
        for (;;) {
            Event e = dec.next(piece);
            if (e.kind == Event::Kind::none) {
                if (!piece.empty()) std::abort();  // none must mean "all consumed"
                break;
            }
            if (e.kind == Event::Kind::error) {
                if (e.code != 1002 && e.code != 1007 && e.code != 1009) std::abort();
                return 0;
            }
            if (e.kind == Event::Kind::close) {
                if (e.code != 1005 && !valid_close_code(e.code)) std::abort();
                if (!valid_utf8(e.data)) std::abort();
            }
            if ((e.kind == Event::Kind::ping || e.kind == Event::Kind::pong) &&
                e.data.size() > 125) {
                std::abort();
            }
            if (e.kind == Event::Kind::message) {
                if (e.data.size() > (1 << 16)) std::abort();
                // Round trip through the other role.
                std::string frame;
                encode_frame(frame, e.opcode, e.data, true,
                             role == Role::client ? std::optional<std::array<uint8_t, 4>>(
                                                        std::array<uint8_t, 4>{ctl, 9, 8, 7})
                                                  : std::nullopt);
                Decoder back(role == Role::client ? Role::server : Role::client, 1 << 16);
                std::string_view fv(frame);
                Event r = back.next(fv);
                if (r.kind != Event::Kind::message || r.data != e.data || !fv.empty()) std::abort();
            }
        }
    }
    return 0;
}
