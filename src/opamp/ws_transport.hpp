// The real Transport: net::WebSocketClient on the loop.
#pragma once

#include <uv.h>

#include <memory>
#include <string>

#include "core/url.hpp"
#include "loop/scheduler.hpp"
#include "net/proxy.hpp"
#include "opamp/messages.hpp"
#include "opamp/transport.hpp"

namespace myr::opamp {

struct WsTransportOptions {
    Url url;
    std::string ca_file;  // "" = the system store
    bool allow_insecure_transport = false;
    size_t max_message = kMaxServerMessage;         // opamp/messages.hpp
    std::shared_ptr<const net::ProxyPolicy> proxy;  // null = direct
};

TransportFactory ws_transport_factory(uv_loop_t* loop, loop::Scheduler& sched,
                                      WsTransportOptions options);

}  // namespace myr::opamp
