// The composition root of both modes: everything the updater owns for the life of the process,
// and the order of events from start to exit. Container mode (`container`: PID 1 of a pod, spec
// "Process model"; docs/pid1.md) and host mode (`run`: a systemd service beside the supervisor's
// unit; docs/host-mode.md) differ in the service the installer stops and starts and in a few
// settings (Mode below); the pipeline, recovery, seeding, the agent and the Lifecycle are the same.
//
// Owned here, built in this order and torn down in reverse before the loop is closed: the
// scheduler, the signal watchers, the reaper, the heartbeat and the probe server, the service
// (our child, or the supervisor's systemd unit), the open volume and journal (kept after start-up:
// the installer works on them), the status the agent reports, the installer, the OpAMP agent, and
// the Lifecycle that runs them.
//
// The story, in the order the Lifecycle (runtime/lifecycle.hpp: the stages, the shutdown, the
// crash-loop exit) walks it:
//   1. install the signal watchers, start the reaper, start the probe server (host mode: start
//      reading the unit's state);
//   2. recovering: open the volume and the state directory, journal recovery (work queue);
//   3. probing_image: `seedBinary --version` through the reaper (a failure is an input too; host
//      mode without host.seedBinary: no probe, the volume's version stands);
//   4. seeding: the precedence decision, the copy when the image wins (work queue); host mode:
//      when recovery or seeding moved `current`, the supervisor's unit (which outlived the
//      updater and may run the version `current` named before) is stopped, to be started next;
//   5. running: build the installer on the seeded volume, start the service, start the agent
//      (host mode: READY=1 to systemd);
//   6. stopping (TERM/INT, a failed start; container mode also a crash loop): wait for the
//      install's critical section, stop the agent and (container mode) the child side by side,
//      end the loop; exit 0, or 1. Host mode leaves the supervisor's unit running.
// A failed recovery or seeding is exit 1. A completion that arrives after the runtime is gone (a
// seed still copying when a TERM ended the loop finishes while the loop is closed) touches nothing
// but its own job.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "download/http_downloader.hpp"
#include "health/probe_server.hpp"
#include "health/probes.hpp"
#include "journal/seed.hpp"
#include "loop/loop.hpp"
#include "loop/uv_scheduler.hpp"
#include "net/proxy.hpp"
#include "opamp/agent.hpp"
#include "opamp/providers.hpp"
#include "proc/reaper.hpp"
#include "runtime/lifecycle.hpp"
#include "runtime/metrics_feed.hpp"
#include "runtime/notify.hpp"
#include "runtime/package_adapter.hpp"
#include "runtime/root_watch.hpp"
#include "runtime/startup.hpp"
#include "runtime/status.hpp"
#include "runtime/unit_preflight.hpp"
#include "runtime/update_ports.hpp"
#include "runtime/update_seams.hpp"
#include "service/child_service.hpp"
#include "service/service_controller.hpp"
#include "service/systemd_unit.hpp"
#include "stage/preflight.hpp"
#include "update/installer.hpp"
#include "update/volume_ops.hpp"

namespace myr::runtime {

enum class Mode { container, host };
const char* to_string(Mode m);

class Runtime {
  public:
    // `cfg` has the section of `mode` (container or host), as config::load_file checked.
    Runtime(loop::Loop& loop, const config::Config& cfg, Mode mode, std::string version);
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    // Runs until the shutdown is complete; returns the exit code (0 after TERM or INT, 1 after a
    // failed start or, in container mode, a crash loop). An error: the process could not even be
    // set up (signals, reaper, probe listener, host mode's notify socket).
    [[nodiscard]] Result<int> run();
    // After run(): why it ended with a non-zero code, one line for the termination message ("" for
    // 0).
    std::string exit_reason() const;

  private:
    [[nodiscard]] Status start_trusted_root();
    [[nodiscard]] Status install_signals();
    [[nodiscard]] Status start_probes();
    [[nodiscard]] Status start_host();
    LifecycleSteps steps();
    void recovering(std::function<void(Status)> done);
    void probing_image(std::function<void()> done);
    void seeding(std::function<void(Status)> done);
    void stop_unit_if_moved(std::function<void(Status)> done);
    service::CriticalSection* start_installer();
    void start_agent();
    // The installer's view as the updater's own health (CollectorStatus::set_updater).
    void report_updater();
    std::string reported_image(const std::string& seed_version) const;

    loop::Loop& loop_;
    const config::Config& cfg_;
    const Mode mode_;
    std::string version_;
    loop::UvScheduler sched_;
    std::vector<std::unique_ptr<loop::SignalWatcher>> signals_;
    proc::Reaper reaper_;
    health::Heartbeat heartbeat_;
    // Our child (container mode) or the supervisor's unit (host mode; `unit_` points at it).
    std::unique_ptr<service::ServiceController> service_;
    service::SystemdUnit* unit_ = nullptr;
    std::optional<UnitNotifier> notifier_;  // host mode, once run() read $NOTIFY_SOCKET
    health::Readiness readiness_;
    MetricsFeed metrics_;
    RootWatch roots_;
    std::unique_ptr<health::ProbeServer> probes_;
    SharedVolume volume_;
    journal::SeedInput seed_input_;
    std::optional<journal::SeedOutcome> seeded_;
    CollectorStatus status_;
    // The installer's ports. The downloader and the stager work on the state directory and the
    // volume, so they are made with the installer.
    std::shared_ptr<const net::ProxyPolicy> proxy_;  // set by run(), before anything connects
    std::unique_ptr<download::HttpDownloader> downloader_;
    std::unique_ptr<ExtractStager> stager_;
    stage::ReaperPreflighter preflight_;
    std::unique_ptr<UnitPreflighter> unit_preflight_;  // host mode: preflight_ as the unit's user
    SigstoreVerifier verifier_;
    HttpHealthProbe health_probe_;
    // Built once the volume is recovered and seeded (they work on it).
    std::unique_ptr<update::StoreVolumeOps> volume_ops_;
    std::unique_ptr<update::Installer> installer_;
    std::unique_ptr<PackageAdapter> packages_;
    std::unique_ptr<opamp::Agent> agent_;
    Lifecycle lifecycle_;
    loop::Guard guard_;
};

// How a mode ended: the exit code and, when it is not 0, why.
struct Exit {
    int code = 0;
    std::string reason;
};

// Runs a mode on a fresh loop and returns how it ended (or why it could not start); the loop is
// closed (what is still on the work queue finishes first) before it returns.
[[nodiscard]] Result<Exit> run_mode(const config::Config& cfg, Mode mode,
                                    const std::string& version);

}  // namespace myr::runtime
