// libFuzzer target for the HTTP response path: llhttp through ResponseParser with small caps, the
// input split into reads by its first byte, then EOF; and Retry-After parsing of the same bytes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/http_response.hpp"

using namespace myr;
using namespace myr::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const uint8_t ctl = data[0];
    const size_t step = 1 + (ctl & 0x3F);
    const bool upgrade = (ctl & 0x40) != 0;
    const bool head_request = (ctl & 0x80) != 0;
    std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);

    HttpLimits limits;
    limits.max_head = 2048;
    limits.max_body = 4096;
    uint64_t body = 0;
    bool head_seen = false;
    ResponseParser::Handlers h;
    h.on_head = [&](const HttpHead& head) -> Status {
        if (head_seen) std::abort();  // one final head per response
        head_seen = true;
        if (head.status < 100 || head.status > 999) std::abort();
        return {};
    };
    h.on_body = [&](std::string_view piece) -> Status {
        body += piece.size();
        if (body > limits.max_body) std::abort();  // the cap holds before the handler runs
        return {};
    };
    ResponseParser parser(limits, h, upgrade, head_request);
    bool failed = false;
    while (!input.empty() && !parser.complete()) {
        std::string_view piece = input.substr(0, step);
        input.remove_prefix(piece.size());
        auto used = parser.feed(piece);
        if (!used) {
            failed = true;
            break;
        }
        if (*used > piece.size()) std::abort();
        if (*used < piece.size() && !parser.complete()) std::abort();
    }
    if (!failed) (void)parser.finish();
    if (parser.complete() && !parser.head_done()) std::abort();

    (void)parse_retry_after(std::string_view(reinterpret_cast<const char*>(data), size),
                            std::chrono::system_clock::from_time_t(1'800'000'000));
    return 0;
}
