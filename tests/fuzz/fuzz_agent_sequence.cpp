// The OpAMP agent fed a *sequence* of server messages, as a hostile server would send them, on the
// fake scheduler. Besides crashes and undefined behaviour it asserts the budgets of docs/opamp.md:
// the heap may not grow past a fixed ceiling whatever the server sends, and what the agent sends
// back may not be an amplification of what it received.
//
// Input: a list of records `op len_hi len_lo bytes[len]`:
//   'm'  deliver bytes as one WebSocket message (header varint + ServerToAgent, or garbage)
//   'r'  deliver a large message described small: a 3-byte repeat count, then a fragment whose
//        first byte is the message header and whose rest is repeated, up to the 4 MiB message cap
//        (an offer of millions of map entries, say)
//   't'  advance time by the first byte × 250 ms
//   'c'  the connection closes; the agent reconnects when its timer says so
//   's'  something the agent reports changed (state_changed)
#include <sanitizer/allocator_interface.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "loop/fake_scheduler.hpp"
#include "opamp/agent.hpp"
#include "opamp/providers.hpp"
// A relative path: the fuzz targets do not take the test support library.
#include "../support/opamp_stand_ins.hpp"

using namespace myr;
using namespace myr::opamp;
using namespace myr::opamp::testing;

namespace {

// The agent's cap on one WebSocket message: nothing larger reaches it.
constexpr size_t kMaxMessage = kMaxServerMessage;
// The agent's heap budget for anything a server can send (docs/opamp.md: protobuf-c may allocate
// 32 MiB for one message; offers are capped at 32 packages), with room for the fuzzer's own copies.
constexpr size_t kHeapBudget = 96u << 20;
// What one step may make the agent send: a report echoes at most the offered packages' names,
// versions and hashes (bounded by the message that carried them) plus a description and health.
constexpr size_t kReportOverhead = 64u << 10;

// A transport that only counts: keeping the messages would be the fuzzer's memory, not the agent's.
// Each connection attempt gets a generation; only the newest one's events reach the agent, and a
// close() the agent asks for is answered on a later turn, as the real transport does.
struct Counting {
    loop::Scheduler* sched = nullptr;
    Transport::Handlers handlers;
    size_t sent_bytes = 0;
    unsigned generation = 0;
    bool connecting = false;  // connect() called, on_open not yet delivered
    bool open = false;
};

class CountingTransport final : public Transport {
  public:
    explicit CountingTransport(Counting* c) : c_(c), gen_(++c->generation) {}
    void connect() override {
        c_->connecting = true;
        c_->open = false;
    }
    Status send(std::string_view m) override {
        c_->sent_bytes += m.size();
        return {};
    }
    void close(uint16_t code, std::string_view) override {
        Counting* c = c_;
        unsigned gen = gen_;
        c->sched->post([c, gen, code] {
            if (c->generation != gen || !c->open) return;
            c->open = false;
            c->handlers.on_closed({code, "", 0, std::nullopt, ""});
        });
    }

  private:
    Counting* c_;
    unsigned gen_;
};

statedir::StateDir state_dir() {
    static statedir::StateDir dir = [] {
        char tmpl[] = "/tmp/fuzz-agent-XXXXXX";
        const char* d = mkdtemp(tmpl);
        if (d == nullptr) __builtin_trap();
        auto opened = statedir::StateDir::open(d);
        if (!opened) __builtin_trap();
        return *opened;
    }();
    return dir;
}

std::string repeat_message(std::string_view rec) {
    if (rec.size() < 4) return std::string(rec);
    size_t count = (static_cast<size_t>(static_cast<unsigned char>(rec[0])) << 16) |
                   (static_cast<size_t>(static_cast<unsigned char>(rec[1])) << 8) |
                   static_cast<unsigned char>(rec[2]);
    std::string_view frag = rec.substr(3);
    std::string out;
    // The first byte of the fragment stays the message header (0) and is not repeated.
    out.push_back('\0');
    frag = frag.substr(1);
    if (frag.empty()) return out;
    count = std::min(count, (kMaxMessage - 1) / frag.size());
    out.reserve(1 + count * frag.size());
    for (size_t i = 0; i < count; ++i) out.append(frag);
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const size_t heap_at_start = __sanitizer_get_current_allocated_bytes();
    loop::FakeScheduler sched;
    FixedStatusProvider status;
    status.image_version = "0.115.0";
    status.active_version = "0.116.0";
    status.health_value = ComponentHealth{true, 1000, "", "running", 2000};
    UnavailablePackageHandler packages;
    Counting conn;
    conn.sched = &sched;
    AgentOptions opt;
    opt.state_dir = state_dir();
    opt.host_name = "fuzz";
    opt.service_version = "0.0.0";
    AgentDeps deps;
    deps.sched = &sched;
    deps.status = &status;
    deps.packages = &packages;
    deps.random01 = [] { return 0.5; };
    deps.transport = [&conn](HttpHeaders, Transport::Handlers h) {
        conn.handlers = std::move(h);
        return std::unique_ptr<Transport>(new CountingTransport(&conn));
    };
    auto created = Agent::create(opt, std::move(deps));
    if (!created) __builtin_trap();
    std::unique_ptr<Agent> agent = std::move(*created);
    // Delivers the open of a connection attempt the agent has started.
    auto open_if_connecting = [&conn] {
        if (!conn.connecting) return;
        conn.connecting = false;
        conn.open = true;
        conn.handlers.on_open();
    };
    agent->start();
    open_if_connecting();

    std::string_view in(reinterpret_cast<const char*>(data), size);
    size_t largest = 0;
    while (in.size() >= 3) {
        const char op = in[0];
        size_t len = (static_cast<size_t>(static_cast<unsigned char>(in[1])) << 8) |
                     static_cast<unsigned char>(in[2]);
        in.remove_prefix(3);
        len = std::min(len, in.size());
        std::string_view rec = in.substr(0, len);
        in.remove_prefix(len);

        const size_t sent_before = conn.sent_bytes;
        size_t delivered = 0;
        if (op == 'm' || op == 'r') {
            if (!conn.open) continue;
            std::string msg = op == 'm' ? std::string(rec) : repeat_message(rec);
            delivered = msg.size();
            largest = std::max(largest, delivered);
            conn.handlers.on_message(msg);
        } else if (op == 't') {
            unsigned steps = rec.empty() ? 1 : static_cast<unsigned char>(rec[0]);
            sched.advance(std::chrono::milliseconds(250) * steps);
            open_if_connecting();  // a reconnect the timer started
        } else if (op == 'c') {
            if (!conn.open) continue;
            conn.open = false;
            conn.handlers.on_closed({1006, "", 0, std::nullopt, "fuzz: connection lost"});
        } else if (op == 's') {
            agent->state_changed();
        }
        sched.run_pending();

        const size_t heap = __sanitizer_get_current_allocated_bytes();
        if (heap > heap_at_start + kHeapBudget + 2 * largest) {
            std::fprintf(stderr, "heap grew by %zu bytes (budget %zu)\n", heap - heap_at_start,
                         kHeapBudget);
            __builtin_trap();
        }
        const size_t sent = conn.sent_bytes - sent_before;
        if (sent > 2 * std::max(delivered, largest) + kReportOverhead) {
            std::fprintf(stderr, "sent %zu bytes after a message of %zu (largest %zu)\n", sent,
                         delivered, largest);
            __builtin_trap();
        }
    }
    agent.reset();
    sched.run_pending();
    return 0;
}
