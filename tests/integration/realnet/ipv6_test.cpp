// IPv6 endpoints (issue 25, item 2; docs/net.md): the real binary as PID 1 with its OpAMP server
// on ws://[::1]:P, its probes on `container.healthListen: "[::1]:P"` and an artifact served by
// nginx on http://[::1]:P, nothing of it on 127.0.0.1. Skipped only where the machine has no ::1.
#include <doctest/doctest.h>

#include "../update/update_rig.hpp"
#include "realnet_support.hpp"

using namespace myr::test;
using namespace myr::test::upd;
using namespace myr::test::realnet;

namespace {

bool has_ipv6_loopback() {
    return read_file("/proc/net/if_inet6").find("00000000000000000000000000000001") !=
           std::string::npos;
}

int probe6(const Rig& rig, const std::string& path) {
    return http_get("::1", rig.health_port(), path, 2s).status;
}

}  // namespace

TEST_CASE("ipv6: OpAMP, probes and a download on [::1]") {
    if (!can_run_pid1()) return;
    if (!has_ipv6_loopback()) MYR_SKIP("this machine has no ::1 (/proc/net/if_inet6)");
    Rig rig;
    // The OpAMP server again, on ::1 only.
    rig.server.emplace(rig.dir,
                       std::vector<std::string>{"--commands", rig.commands, "--host", "::1"}, 0,
                       "server6");
    const int web = reserve_port();
    Nginx nginx(rig.dir / "nginx",
                "  server {\n    listen [::1]:" + std::to_string(web) + ";\n    root " +
                    rig.dir.path() + ";\n    location /artifacts/ { }\n  }\n",
                {-web});
    const std::string base = "http://[::1]:" + std::to_string(web) + "/artifacts/";
    rig.cfg.endpoint = "ws://[::1]:" + std::to_string(rig.server->port()) + "/v1/opamp";
    rig.cfg.health_listen = "[::1]:" + std::to_string(rig.health_port());
    rig.cfg.allowed_download_prefixes = {base};
    rig.configure(rig.release("0.116.0"));
    Updater u(rig.config());

    REQUIRE_MESSAGE(wait_until([&] { return probe6(rig, "/readyz") == 200; }, 40s, 50ms),
                    "never ready on [::1]; log:\n"
                        << u.log());
    CHECK(probe6(rig, "/healthz") == 200);
    CHECK(!listening("127.0.0.1", rig.health_port()));
    CHECK(u.log_has("msg=\"probe server listening\" address=[::1]:"));
    REQUIRE_MESSAGE(wait_until([&] { return rig.connected(); }, 20s, 20ms),
                    "no OpAMP message over [::1]; log:\n"
                        << u.log());
    REQUIRE(wait_until([&] { return exists(rig.storage + "/persistent_state.yaml"); }, 20s));

    const std::string v117 = rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz");
    Offer o{"0.117.0", v117};
    o.url = base + v117;
    Status st = final_status(rig, u, o);
    CHECK_MESSAGE(st.status == "Installed", st.error << "\nlog:\n" << u.log());
    CHECK(st.has == "0.117.0");
    std::vector<std::string> v;
    CHECK_MESSAGE(wait_until([&] { return (v = rig.violations("0.117.0")).empty(); }, 10s, 50ms),
                  joined(v));
    CHECK(wait_until([&] { return probe6(rig, "/readyz") == 200; }, 20s, 50ms));
    const std::string log = nginx.log_text();
    CHECK_MESSAGE(log.find("GET /artifacts/v117.tar.gz 200") != std::string::npos, log);
    CHECK(u.stop() == 0);
}
