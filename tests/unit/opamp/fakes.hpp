// Test doubles for the agent's seams: a scripted transport and timers driven by a FakeClock.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "opamp/messages.hpp"
#include "opamp/transport.hpp"

namespace myr::opamp::testing {

class FakeTimers : public TimerFactory {
  public:
    struct Slot {
        std::optional<MonoTime> due;
        std::function<void()> cb;
        bool alive = true;
    };
    class T : public Timer {
      public:
        T(FakeTimers* f, std::shared_ptr<Slot> s) : f_(f), s_(std::move(s)) {}
        ~T() override { s_->alive = false; }
        void start(Duration after, std::function<void()> cb) override {
            s_->due = f_->clock.now() + after;
            s_->cb = std::move(cb);
        }
        void stop() override { s_->due.reset(); }

      private:
        FakeTimers* f_;
        std::shared_ptr<Slot> s_;
    };

    std::unique_ptr<Timer> create() override {
        auto s = std::make_shared<Slot>();
        slots_.push_back(s);
        return std::make_unique<T>(this, s);
    }

    // Moves time forward by `d`, firing due timers in order at their due time.
    void advance(Duration d) {
        const MonoTime target = clock.now() + d;
        for (;;) {
            std::shared_ptr<Slot> next;
            for (auto& s : slots_) {
                if (s->alive && s->due && *s->due <= target && (!next || *s->due < *next->due)) {
                    next = s;
                }
            }
            if (!next) break;
            if (*next->due > clock.now())
                clock.advance(std::chrono::duration_cast<Duration>(*next->due - clock.now()));
            next->due.reset();
            auto cb = std::move(next->cb);
            if (cb) cb();
        }
        if (target > clock.now())
            clock.advance(std::chrono::duration_cast<Duration>(target - clock.now()));
    }
    // The time until the earliest pending timer, if any.
    std::optional<Duration> next_due() const {
        std::optional<Duration> best;
        for (auto& s : slots_) {
            if (s->alive && s->due) {
                auto d = std::chrono::duration_cast<Duration>(*s->due - clock.now());
                if (!best || d < *best) best = d;
            }
        }
        return best;
    }

    FakeClock clock;

  private:
    std::vector<std::shared_ptr<Slot>> slots_;
};

// One scripted connection. The test plays the server through the Net that made it.
struct FakeConn {
    HttpHeaders headers;
    Transport::Handlers handlers;
    bool connect_called = false;
    std::vector<AgentToServer> sent;
    std::optional<uint16_t> close_code;
    bool fail_sends = false;
};

class FakeNet {
  public:
    TransportFactory factory() {
        return [this](HttpHeaders h, Transport::Handlers hs) {
            auto c = std::make_shared<FakeConn>();
            c->headers = std::move(h);
            c->handlers = std::move(hs);
            conns.push_back(c);
            return std::unique_ptr<Transport>(new T(c));
        };
    }
    FakeConn& last() { return *conns.back(); }
    // Every message sent over every connection, in order.
    std::vector<AgentToServer> all_sent() const {
        std::vector<AgentToServer> out;
        for (auto& c : conns) out.insert(out.end(), c->sent.begin(), c->sent.end());
        return out;
    }
    void open() { last().handlers.on_open(); }
    void deliver(const ServerToAgent& m) { last().handlers.on_message(frame_message(encode(m))); }
    void deliver_raw(std::string_view raw) { last().handlers.on_message(raw); }
    void closed(TransportClosed c = {1006, "", 0, std::nullopt, "connection lost"}) {
        last().handlers.on_closed(std::move(c));
    }

    std::vector<std::shared_ptr<FakeConn>> conns;

  private:
    class T : public Transport {
      public:
        explicit T(std::shared_ptr<FakeConn> c) : c_(std::move(c)) {}
        void connect() override { c_->connect_called = true; }
        Status send(std::string_view m) override {
            if (c_->fail_sends) return fail("send: not open");
            auto body = unframe_message(m);
            if (!body) return body.fail();
            auto msg = decode_agent_to_server(*body);
            if (!msg) return msg.fail();
            c_->sent.push_back(*msg);
            return {};
        }
        void close(uint16_t code, std::string_view) override { c_->close_code = code; }

      private:
        std::shared_ptr<FakeConn> c_;
    };
};

}  // namespace myr::opamp::testing
