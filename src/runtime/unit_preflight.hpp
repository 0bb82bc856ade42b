// Host mode's preflight port: the staged collector runs as the supervisor's unit runs it. Before
// each preflight the unit's account is read (`systemctl show`, service/unit_account.hpp), its
// names resolved in /etc/passwd and /etc/group on the work queue, and the request handed to the
// real preflighter with that uid, gid and environment. A unit whose account cannot be resolved
// fails the preflight, naming why: the install stops before anything was touched.
#pragma once

#include <memory>
#include <string>

#include "loop/scheduler.hpp"
#include "service/systemd_unit.hpp"
#include "service/unit_account.hpp"
#include "stage/preflight.hpp"

namespace myr::runtime {

struct UnitPreflightSettings {
    std::string unit;  // host.serviceName
    std::string passwd_file = "/etc/passwd";
    std::string group_file = "/etc/group";
};

class UnitPreflighter final : public stage::Preflighter {
  public:
    UnitPreflighter(service::SystemctlRunner systemctl, loop::Scheduler& sched,
                    stage::Preflighter& inner, UnitPreflightSettings settings);
    [[nodiscard]] std::unique_ptr<loop::Step> run(stage::PreflightRequest request,
                                                  stage::PreflightDone done) override;

  private:
    service::SystemctlRunner systemctl_;
    loop::Scheduler& sched_;
    stage::Preflighter& inner_;
    UnitPreflightSettings settings_;
};

}  // namespace myr::runtime
