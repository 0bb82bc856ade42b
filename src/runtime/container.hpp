// Container mode's composition root (spec "Process model"; docs/pid1.md): everything PID 1 owns
// for the life of the process, and the order of events from start to exit.
//
// Owned here, built in this order and torn down in reverse before the loop is closed: the
// scheduler, the signal watchers, the reaper, the heartbeat and the probe server, the child
// service, the open volume and journal (kept after start-up: the installer works on them), the
// status the agent reports, the installer, the OpAMP agent, and the Lifecycle that runs them.
//
// The story, in the order the Lifecycle (runtime/lifecycle.hpp: the stages, the shutdown, the
// crash-loop exit) walks it:
//   1. install the signal watchers, start the reaper, start the probe server;
//   2. recovering: open the volume and the state directory, journal recovery (work queue);
//   3. probing_image: `seedBinary --version` through the reaper (a failure is an input too);
//   4. seeding: the precedence decision, the copy when the image wins (work queue);
//   5. running: build the installer on the seeded volume, start the child, start the agent;
//   6. stopping (TERM/INT, a failed start, a crash loop): wait for the install's critical
//      section, stop the child and the agent side by side, end the loop; exit 0, or 1.
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
#include "runtime/package_adapter.hpp"
#include "runtime/root_watch.hpp"
#include "runtime/startup.hpp"
#include "runtime/status.hpp"
#include "runtime/update_ports.hpp"
#include "runtime/update_seams.hpp"
#include "service/child_service.hpp"
#include "service/service_controller.hpp"
#include "stage/preflight.hpp"
#include "update/installer.hpp"
#include "update/volume_ops.hpp"

namespace myr::runtime {

class ContainerRuntime {
  public:
    ContainerRuntime(loop::Loop& loop, const config::Config& cfg, std::string version);
    ~ContainerRuntime();
    ContainerRuntime(const ContainerRuntime&) = delete;
    ContainerRuntime& operator=(const ContainerRuntime&) = delete;

    // Runs the container until the shutdown is complete; returns the exit code (0 after TERM or
    // INT, 1 after a failed start or a crash loop). An error: the process could not even be set
    // up (signals, reaper, probe listener).
    [[nodiscard]] Result<int> run();
    // After run(): why it ended with a non-zero code, one line for the termination message ("" for
    // 0).
    std::string exit_reason() const;

  private:
    [[nodiscard]] Status start_trusted_root();
    [[nodiscard]] Status install_signals();
    [[nodiscard]] Status start_probes();
    LifecycleSteps steps();
    void recovering(std::function<void(Status)> done);
    void probing_image(std::function<void()> done);
    void seeding(std::function<void(Status)> done);
    service::CriticalSection* start_installer();
    void start_agent();

    loop::Loop& loop_;
    const config::Config& cfg_;
    std::string version_;
    loop::UvScheduler sched_;
    std::vector<std::unique_ptr<loop::SignalWatcher>> signals_;
    proc::Reaper reaper_;
    health::Heartbeat heartbeat_;
    service::ChildService child_;
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

// How container mode ended: the exit code and, when it is not 0, why.
struct Exit {
    int code = 0;
    std::string reason;
};

// Runs container mode on a fresh loop and returns how it ended (or why it could not start); the
// loop is closed (what is still on the work queue finishes first) before it returns.
[[nodiscard]] Result<Exit> run_container(const config::Config& cfg, const std::string& version);

}  // namespace myr::runtime
