// libFuzzer target for the probe listener's request reader (health/request_reader.*), driven as
// the probe server drives it: reads of at most the read-ahead budget, one answer in flight at a
// time, taken by the client or left unread as the input's control bytes say. After every step the
// bytes the connection holds (the reader's target and read-ahead, the answer in flight) must stay
// within connection_budget(), and the reader's share within its own budget.
//
// Input: byte 0 picks the read size (1..64) and whether the client reads its answers; otherwise
// the top bit of the next read's first byte says whether the answer in flight is taken first.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "health/probe_server.hpp"
#include "health/request_reader.hpp"

using namespace myr::health;

namespace {

// The largest answer the server renders: a metrics text at the registry's 8 KiB reservation.
const std::string& metrics_text() {
    static const std::string text = [] {
        std::string t;
        while (t.size() < 8 * 1024 - 32) t += "# TYPE myriarch_x counter\nmyriarch_x 1\n";
        return t;
    }();
    return text;
}

Probes probes() {
    return Probes{[] {
                      return Answer{true, "ok"};
                  },
                  [] {
                      return Answer{false, "child not running: restarting in 4s"};
                  },
                  []() -> const std::string& { return metrics_text(); }};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const uint8_t ctl = data[0];
    ServerLimits limits;
    // Small caps, so that inputs of a few hundred bytes reach every bound.
    limits.reader.max_header_bytes = 256;
    limits.reader.max_input_bytes = 512;
    const size_t step = 1 + (ctl & 0x3F);
    const bool reads = (ctl & 0x40) != 0;
    static const Probes kProbes = probes();

    RequestReader reader(limits.reader);
    std::string answer;  // in flight
    auto check = [&] {
        if (reader.held_bytes() > RequestReader::budget(limits.reader)) std::abort();
        if (reader.held_bytes() + answer.size() > connection_budget(limits)) std::abort();
    };
    // What the server does with a step; false once the connection would close.
    auto act = [&](RequestReader::Step s) {
        if (s != RequestReader::Step::request) return s == RequestReader::Step::more;
        if (!reader.holding() || !answer.empty()) std::abort();  // one answer at a time
        Response r = route(reader.method(), reader.target(), kProbes);
        answer = render(r, reader.method() == "HEAD", reader.keep_alive());
        if (answer.size() > limits.max_answer_bytes) std::abort();
        check();
        return reader.keep_alive();
    };

    std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    bool open = true;
    for (size_t i = 0; open && !input.empty(); ++i) {
        // The client takes the answer in flight: the server goes on with what was read ahead,
        // answering each request in turn as long as the client keeps reading.
        const bool take = reads || (static_cast<uint8_t>(input[0]) & 0x80) != 0;
        while (open && !answer.empty() && take) {
            answer.clear();
            open = act(reader.next());
        }
        if (!open) break;
        std::string_view piece = input.substr(0, step);
        input.remove_prefix(piece.size());
        // The server reads only with no answer in flight; the reader must hold its budget even so.
        RequestReader::Step s = reader.feed(piece.data(), piece.size());
        if (!answer.empty() && s != RequestReader::Step::more &&
            s != RequestReader::Step::over_budget) {
            std::abort();  // nothing but read-ahead while a request is held
        }
        open = act(s);
        check();
    }
    return 0;
}
