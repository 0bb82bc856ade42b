// The real Transport: net::WebSocketClient on the loop, and the wiring of an Agent from
// updater.yaml for the container command.
#pragma once

#include <uv.h>

#include <memory>
#include <string>

#include "config/config.hpp"
#include "opamp/agent.hpp"
#include "opamp/transport.hpp"

namespace myr::opamp {

struct WsTransportOptions {
    config::Url url;
    std::string ca_file;  // "" = the system store
    bool allow_insecure_transport = false;
    size_t max_message = 16u << 20;
};

TransportFactory ws_transport_factory(uv_loop_t* loop, loop::Scheduler& sched,
                                      WsTransportOptions options);

// An Agent for `cfg` (server.*, collector.stateDir, supervisor.storageDir) on `loop` and `sched`,
// with the WebSocket transport. `status` and `installer` must outlive it. Fails when
// server.endpoint is missing or the instance uid cannot be loaded or created.
[[nodiscard]] Result<std::unique_ptr<Agent>> make_agent(uv_loop_t* loop, loop::Scheduler& sched,
                                                        const config::Config& cfg,
                                                        std::string service_version,
                                                        StatusProvider& status,
                                                        Installer& installer);

}  // namespace myr::opamp
