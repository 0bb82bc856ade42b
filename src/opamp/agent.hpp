// The updater's own OpAMP agent: one WebSocket connection to the server, reports, heartbeats,
// reconnects, and the hand-over of package offers to the PackageHandler.
//
// Connection states and what moves between them (everything runs on the one loop):
//
// clang-format off
//   state        event                          next         action
//   idle         start()                        connecting   read token, open transport
//   connecting   transport open                 connected    full report, heartbeat timer
//   connecting   transport closed               waiting      delay (HTTP status, backoff)
//   connected    ServerToAgent                  connected    apply; report only what changed
//   connected    error_response Unavailable     closing      close 1000; delay = retry_after
//   connected    heartbeat timer                connected    send instance_uid + sequence_num
//   connected    state_changed()                connected    report only what changed
//   connected    transport closed               waiting      once at once, then backoff
//   closing      transport closed               waiting      delay chosen when closing began
//   waiting      reconnect timer                connecting   open a new transport
//   any          stop(done)                     stopping     agent_disconnect + close 1000
//   stopping     transport closed / 3 s         stopped      done()
// clang-format on
//
// Invariants: sequence_num grows by one for every message sent in this process; the first message
// of every connection is a full report; a message is sent only for a change, a heartbeat, a
// ReportFullState, or the disconnect. The backoff (and the one immediate reconnect) are reset only
// after a connection has stayed up for kStableConnection, so a server that accepts and drops at
// once still sees growing delays. The instance UID lives in stateDir and survives restarts; a
// server-assigned one replaces it durably before it is used.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/time.hpp"
#include "loop/scheduler.hpp"
#include "opamp/messages.hpp"
#include "opamp/persistent_state.hpp"
#include "opamp/providers.hpp"
#include "opamp/transport.hpp"
#include "opamp/uid.hpp"

namespace myr::opamp {

inline constexpr uint64_t kAgentCapabilities =
    agent_cap::reports_status | agent_cap::accepts_packages | agent_cap::reports_package_statuses |
    agent_cap::reports_health | agent_cap::reports_heartbeat;

inline constexpr Duration kStableConnection = std::chrono::seconds(30);
inline constexpr Duration kDefaultRetryAfter = std::chrono::seconds(30);
inline constexpr Duration kStopTimeout = std::chrono::seconds(3);
// Bounds on what a server may ask for (Retry-After, retry_after, heartbeat interval). A delay the
// server chooses is clamped to [kMinRetryAfter, kMaxRetryAfter] and is never shorter than the
// backoff, which every refusal advances: "retry now" from a broken server is not a tight loop.
inline constexpr Duration kMinRetryAfter = std::chrono::seconds(1);
inline constexpr Duration kMaxRetryAfter = std::chrono::hours(1);
inline constexpr Duration kMaxHeartbeat = std::chrono::hours(24);

struct AgentOptions {
    statedir::StateDir state_dir;        // holds instance_uid (the one the runtime opened)
    std::string supervisor_storage_dir;  // holds persistent_state.yaml ("" = not watched)
    std::string host_name;               // already resolved (resolve_host_name)
    std::string service_version;         // the updater's version
    // dev.myriarch.updater.install_method: "container" (PID 1 of a pod) or "host" (`run`).
    std::string install_method = "container";
    Duration heartbeat_interval = std::chrono::seconds(30);  // 0 = off
    std::string enrollment_token_file;  // "Authorization: Bearer <token>" from here,
    std::string enrollment_token_env;   // or from this environment variable
    Duration persistent_state_poll = std::chrono::seconds(1);
};

// Everything the agent uses from outside; the references must outlive the agent.
struct AgentDeps {
    loop::Scheduler* sched = nullptr;  // time, timers (also the persistent_state watcher's)
    StatusProvider* status = nullptr;
    PackageHandler* packages = nullptr;
    TransportFactory transport;
    std::function<double()> random01;  // jitter; default_random01() when empty
    // Optional observer of every decoded ServerToAgent (the driver program prints them).
    std::function<void(const ServerToAgent&)> on_server_message;
};

class Agent {
  public:
    enum class State { idle, connecting, connected, closing, waiting, stopping, stopped };

    // Loads (or creates) the instance UID from options.state_dir.
    [[nodiscard]] static Result<std::unique_ptr<Agent>> create(AgentOptions options,
                                                               AgentDeps deps);
    ~Agent();
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    void start();
    // Sends agent_disconnect and a Close (1000) when connected, then calls `done` once the
    // connection is closed (or after kStopTimeout). Safe to call in any state; every caller's
    // `done` runs once the stop completes (at once when it already has).
    void stop(std::function<void()> done);
    // Something behind StatusProvider or PackageHandler changed: report it if it differs from what
    // the server last got.
    void state_changed();

    State state() const { return state_; }
    const Uid& instance_uid() const { return uid_; }
    Duration heartbeat_interval() const { return heartbeat_; }
    const std::string& collector_uid() const;
    // The description reported now (for logs and tests).
    AgentDescription description() const;

  private:
    Agent(AgentOptions options, AgentDeps deps, Uid uid);

    void connect_now();
    void on_open();
    void on_message(std::string_view data);
    void on_closed(TransportClosed info);
    void apply(const ServerToAgent& msg);
    // Sends what changed (all of it with `full`); with `force` sends even when nothing changed.
    void report(bool full, bool force);
    bool send(AgentToServer& msg);
    void arm_heartbeat();
    void adopt_uid(const Uid& nu);
    void schedule_reconnect(Duration delay, const std::string& why);
    // The wait after a refusal that named (or implied) a delay; advances the backoff.
    Duration refusal_delay(Duration asked);
    void finish_stop();
    std::string read_token() const;

    AgentOptions opt_;
    AgentDeps deps_;
    Uid uid_;
    State state_ = State::idle;
    std::unique_ptr<Transport> transport_;
    std::unique_ptr<loop::Timer> heartbeat_timer_;
    std::unique_ptr<loop::Timer> reconnect_timer_;
    std::unique_ptr<loop::Timer> stop_timer_;
    std::unique_ptr<PersistentStateWatcher> watcher_;
    Backoff backoff_;
    bool immediate_used_ = false;
    uint64_t seq_ = 1;
    Duration heartbeat_;
    MonoTime opened_at_{};
    MonoTime last_sent_at_{};
    std::optional<Duration> closing_delay_;  // chosen when we close on Unavailable
    std::vector<std::function<void()>> stop_waiters_;
    // What the server got last on this connection; cleared on connect.
    std::optional<AgentDescription> sent_desc_;
    std::optional<ComponentHealth> sent_health_;
    std::optional<PackageStatuses> sent_packages_;
    // Budgets against a server that repeats itself: ReportFullState flags coalesce into one
    // report on the next turn; one new instance uid per connection, stored off the loop.
    bool full_report_posted_ = false;
    bool uid_change_this_connection_ = false;
    // While a new uid is being stored, reports wait: the next message the server sees must carry
    // the uid it assigned (OpAMP), and the old one may no longer be used.
    bool uid_adopting_ = false;
    bool held_full_ = false;  // a full report was asked for meanwhile
    // Callbacks posted to the scheduler are bound to it: none runs after the agent is gone.
    loop::Guard guard_;
};

const char* to_string(Agent::State s);

// config server.hostName, else $HOSTNAME, else gethostname().
std::string resolve_host_name(const std::string& configured);
// The OpenTelemetry host.arch value for this machine ("amd64", "arm64", ...).
std::string host_arch();

}  // namespace myr::opamp
