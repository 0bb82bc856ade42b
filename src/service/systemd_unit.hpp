// SystemdUnit: the supervisor as a systemd unit (host mode), behind ServiceController.
//
// systemd owns the process: it starts, stops and restarts the unit per the unit's own Restart= and
// StartLimitBurst=, so there is no restart policy here. This class asks systemd (`systemctl
// start|stop|show`) and maps what it answers onto service::State:
// clang-format off
//   ActiveState    SubState       State
//   active         (any)          running
//   reloading      (any)          running
//   activating     auto-restart   waiting_to_restart   (Restart= delay running)
//   activating     (other)        running              (being started: the process is exec'd)
//   deactivating   (any)          stopping
//   maintenance    (any)          stopping             (ExecClean= running)
//   inactive       (any)          stopped
//   failed         (any)          stopped
// clang-format on
// Crash loop: the unit is `failed` (not in auto-restart) while we want it running. That is what
// systemd leaves behind when its restart policy gave up (StartLimitBurst starts within
// StartLimitIntervalSec: systemd 252 then keeps the last process's Result, e.g. exit-code, and
// NRestarts counts the refused restart too; checked under a real systemd by integration-host) or
// when the unit has no Restart= and its process failed. Either way nothing will start it again,
// so Desired becomes gave_up with the unit's Result and NRestarts. Result is not the test:
// start-limit-hit is what a refused *manual* start leaves.
//
// Events: systemctl has no "watch", and no static D-Bus client exists in Debian (libsystemd-dev
// ships no libsystemd.a), so the unit's state is read by `systemctl show` every poll interval (1 s
// by default, one call in flight at most) and at once after each start and stop. A change between
// two polls that leaves the same state behind (a restart within a second) is seen through
// NRestarts. See docs/host-mode.md for the cost.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loop/scheduler.hpp"
#include "proc/reaper.hpp"
#include "service/announcer.hpp"
#include "service/service_controller.hpp"

namespace myr::service {

// What `systemctl show -p ...` says of a unit.
struct UnitStatus {
    std::string load_state;    // loaded, not-found, masked, ...
    std::string active_state;  // active, activating, deactivating, inactive, failed, ...
    std::string sub_state;     // running, auto-restart, dead, ...
    std::string result;        // success, exit-code, signal, start-limit-hit, ...
    uint64_t n_restarts = 0;   // automatic restarts since the unit was last started by hand
    pid_t main_pid = 0;        // 0 when no main process runs
};

// The properties parse_unit_status reads, for `systemctl show -p`.
const char* unit_status_properties();
// Calls `fn(key, value)` for each `KEY=value` line of a `systemctl show` answer.
void for_each_property(std::string_view text,
                       const std::function<void(std::string_view, std::string_view)>& fn);
// Parses `KEY=value` lines; fails when ActiveState is missing (not a `systemctl show` answer).
[[nodiscard]] Result<UnitStatus> parse_unit_status(std::string_view text);
State to_state(const UnitStatus& st);
// True when the unit is failed and nothing will restart it (see the top of this file).
bool gave_up(const UnitStatus& st);
// "unit x failed and will not be restarted (Result=exit-code, 5 restarts)"
std::string describe_gave_up(const std::string& name, const UnitStatus& st);

// Runs `systemctl <args>` and answers on the loop, never from inside the call. The product runs
// systemctl through the reaper (systemctl_runner); unit tests answer with canned text.
using SystemctlRunner = std::function<void(const std::vector<std::string>& args, Duration timeout,
                                           std::function<void(Result<proc::Captured>)> done)>;
// systemctl's arguments for one unit: `verb_and_options`, then `--`, then `unit`. Every call names
// its unit this way, so a name from the configuration is never read as an option (`--host=…`
// would run systemctl over ssh), whatever `validate` let through.
std::vector<std::string> unit_args(std::vector<std::string> verb_and_options,
                                   const std::string& unit);
// `systemctl`: the command to run it by (tests: nsenter into a booted machine, then systemctl).
[[nodiscard]] SystemctlRunner systemctl_runner(
    proc::Reaper& reaper, loop::Scheduler& sched,
    std::vector<std::string> systemctl = std::vector<std::string>{"systemctl"});

struct UnitSettings {
    std::string name;  // e.g. opampsupervisor.service
    Duration poll_interval = std::chrono::seconds(1);
    // How long a `systemctl stop` may take before we call it failed: the unit's own
    // TimeoutStopSec bounds the stop itself, this bounds our wait for systemctl.
    Duration stop_timeout = std::chrono::seconds(90);
    Duration start_timeout = std::chrono::seconds(90);
};

class SystemdUnit : public ServiceController {
  public:
    SystemdUnit(SystemctlRunner systemctl, loop::Scheduler& sched, UnitSettings settings);
    ~SystemdUnit() override;

    State state() const override { return state_; }
    Desired desired() const override { return desired_; }
    void on_change(std::function<void()> listener) override;
    void stop(Done done) override;
    void start(Done done) override;
    // Through `systemctl kill --kill-whom=main`; the pid is the MainPID last read.
    std::optional<pid_t> forward(int sig) override;

    // Starts polling the unit's state (the first read happens at once).
    void watch();
    const UnitStatus& status() const { return status_; }
    // "unit opampsupervisor.service running (pid 42)", "unit opampsupervisor.service failed and
    // will not be restarted (Result=exit-code, 3 restarts)".
    std::string describe() const override;
    pid_t pid() const override { return status_.main_pid > 0 ? status_.main_pid : -1; }
    // systemd's NRestarts: its automatic restarts since the unit was last started by hand.
    uint64_t restarts() const override { return status_.n_restarts; }
    std::string give_up_reason() const override;

  private:
    void poll();
    void refresh(std::function<void()> then);
    void apply(const UnitStatus& st);
    void run_job(const char* verb, Duration timeout, Done done);

    SystemctlRunner systemctl_;
    UnitSettings settings_;
    UnitStatus status_;
    State state_ = State::stopped;
    Desired desired_ = Desired::not_started;
    bool seen_ = false;
    bool polling_ = false;
    std::vector<std::function<void()>> after_refresh_;
    std::unique_ptr<loop::Timer> poll_timer_;
    Announcer announcer_;
    loop::Guard guard_;
};

}  // namespace myr::service
