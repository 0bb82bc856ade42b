// The updater.yaml → OpAMP agent wiring: the runtime decides what the agent is told, so opamp/
// needs nothing of the configuration model.
#pragma once

#include <uv.h>

#include <memory>
#include <string>

#include "config/config.hpp"
#include "loop/scheduler.hpp"
#include "net/proxy.hpp"
#include "opamp/agent.hpp"
#include "statedir/state_dir.hpp"

namespace myr::runtime {

// An Agent for `cfg` (server.*, supervisor.storageDir) on `loop` and `sched`, with the WebSocket
// transport, keeping its instance uid in `state` (collector.stateDir, opened at recovery).
// The connection goes through `proxy` (null = direct). `status` and `packages` must outlive it.
// Fails when server.endpoint is missing or the instance uid cannot be loaded or created.
[[nodiscard]] Result<std::unique_ptr<opamp::Agent>> make_agent(
    uv_loop_t* loop, loop::Scheduler& sched, const config::Config& cfg,
    const statedir::StateDir& state, std::string service_version, std::string install_method,
    opamp::StatusProvider& status, opamp::PackageHandler& packages,
    std::shared_ptr<const net::ProxyPolicy> proxy);

}  // namespace myr::runtime
