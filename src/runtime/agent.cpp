#include "runtime/agent.hpp"

#include "opamp/ws_transport.hpp"

namespace myr::runtime {

Result<std::unique_ptr<opamp::Agent>> make_agent(
    uv_loop_t* loop, loop::Scheduler& sched, const config::Config& cfg,
    const statedir::StateDir& state, std::string service_version, std::string install_method,
    opamp::StatusProvider& status, opamp::PackageHandler& packages,
    std::shared_ptr<const net::ProxyPolicy> proxy) {
    if (!cfg.server.endpoint) return fail("opamp agent: server.endpoint is not set");
    opamp::AgentOptions o;
    o.state_dir = state;
    o.supervisor_storage_dir = cfg.supervisor.storage_dir;
    o.host_name = opamp::resolve_host_name(cfg.server.host_name);
    o.service_version = std::move(service_version);
    o.install_method = std::move(install_method);
    o.heartbeat_interval = cfg.server.heartbeat_interval;
    o.enrollment_token_file = cfg.server.enrollment_token_file;
    o.enrollment_token_env = cfg.server.enrollment_token_env;
    opamp::WsTransportOptions w;
    w.url = *cfg.server.endpoint;
    w.ca_file = cfg.server.ca_file;
    w.allow_insecure_transport = cfg.server.allow_insecure_transport;
    w.proxy = std::move(proxy);
    opamp::AgentDeps d;
    d.sched = &sched;
    d.status = &status;
    d.packages = &packages;
    d.transport = opamp::ws_transport_factory(loop, sched, std::move(w));
    return opamp::Agent::create(std::move(o), std::move(d));
}

}  // namespace myr::runtime
