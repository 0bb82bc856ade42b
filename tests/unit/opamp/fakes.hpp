// Test double for the agent's transport: a scripted connection the test plays the server on.
// Time comes from loop::FakeScheduler.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "opamp/messages.hpp"
#include "opamp/transport.hpp"

namespace myr::opamp::testing {

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
