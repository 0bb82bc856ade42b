// The typed model of updater.yaml (contract: docs/config.md, from ../shared/design/config.md).
//
// The loader turns every duration, size, URL, address, path and version into a type here, so no
// other module ever parses a configuration string. Defaults live in the member initialisers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.hpp"
#include "core/result.hpp"
#include "core/time.hpp"
#include "core/url.hpp"

namespace myr::config {

// A semantic version as written ("v0.116.0" stays as written; comparison lives in version/).
struct VersionText {
    std::string text;
    friend bool operator==(const VersionText&, const VersionText&) = default;
};

struct Server {
    std::optional<Url> endpoint;  // required by container and run
    bool allow_insecure_transport = false;
    std::string ca_file;  // "" = the system store
    std::string enrollment_token_file;
    std::string enrollment_token_env;
    std::string host_name;  // "" = $HOSTNAME, else gethostname()
    Duration heartbeat_interval = std::chrono::seconds(30);
    friend bool operator==(const Server&, const Server&) = default;
};

// network.proxy: the HTTP proxy for OpAMP and downloads (docs/net.md, "Proxies"). An empty url
// leaves the choice to the environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY).
struct Proxy {
    std::string url;  // http://[user:password@]host:port; "" = from the environment
    std::vector<std::string> no_proxy;
    std::string credentials_file;  // "user:password"
    std::string credentials_env;   // the name of a variable holding "user:password"
    friend bool operator==(const Proxy&, const Proxy&) = default;
};

struct Network {
    Proxy proxy;
    friend bool operator==(const Network&, const Network&) = default;
};

struct SignerIdentity {
    std::string subject;
    std::string subject_regexp;
    std::string issuer = "https://token.actions.githubusercontent.com";
    // Facts of the certificate's Fulcio extensions, each an exact-match template where
    // `{version}` is the offered version; "" = not checked (verify/identity_policy.hpp).
    std::string source_repository_ref;
    std::string build_config_uri;
    std::string source_repository_uri;
    std::string github_workflow_name;
    std::string github_workflow_ref;
    std::string github_workflow_repository;
    friend bool operator==(const SignerIdentity&, const SignerIdentity&) = default;
};

// update.signature: what a signature must show beyond its identity (docs/sigstore.md).
struct Signature {
    // Verified time sources required (Rekor v1 SETs and RFC 3161 timestamps each count one).
    int min_timestamps = 1;
    friend bool operator==(const Signature&, const Signature&) = default;
};
inline constexpr int kMaxMinTimestamps = 32;

// The largest value of each duration and count (docs/config.md, "Maxima"), enforced by the decoder
// so that `validate` names the key. Each is far above any sensible setting and small enough that
// no deadline or buffer formed from it can overflow: time arithmetic holds int64 nanoseconds,
// about 2.5 million hours.
namespace limits {
using std::chrono::hours;
using std::chrono::minutes;
inline constexpr Duration kHeartbeatInterval = hours(24);
// The jitter holds every update of the fleet back by up to its length: spreading a rollout over
// hours is the server's job (offer it to part of the fleet), not a sleep in each pod.
inline constexpr Duration kStartJitter = hours(1);
inline constexpr Duration kDownloadTimeout = hours(24 * 7);
inline constexpr Duration kRetryFor = hours(24 * 30);
inline constexpr Duration kQuarantineFor = hours(24 * 365);
inline constexpr Duration kHealthTimeout = hours(1);
inline constexpr Duration kHealthInterval = minutes(10);
inline constexpr Duration kTrialPeriod = hours(24 * 30);
inline constexpr Duration kStopTimeout = hours(1);
inline constexpr Duration kRestartDelay = hours(1);
inline constexpr Duration kRestartWindow = hours(24);
inline constexpr uint32_t kHealthSuccesses = 1000;
inline constexpr uint32_t kTrialMaxRestarts = 1000;
inline constexpr uint32_t kTrialMaxBoots = 1000;
inline constexpr uint32_t kKeepVersions = 100;
// The restart policy keeps the time of each end within its window: this many at most.
inline constexpr uint32_t kMaxRestarts = 1000;
// 16 GiB: its derived download deadline (effective_download_timeout) is about 73 hours, within
// kDownloadTimeout.
inline constexpr uint64_t kMaxArtifactSize = 16ULL << 30;
}  // namespace limits

struct Update {
    bool require_signature = true;
    std::string trusted_root_file = "/etc/myriarch/trusted_root.json";
    SignerIdentity signer_identity;
    Signature signature;
    std::vector<Url> allowed_download_prefixes;  // empty = derived from server.endpoint
    std::optional<VersionText> minimum_version;
    bool allow_downgrade = false;
    // How many minor versions an offer may be from the supervisor's (the image's version); -1:
    // not checked.
    int max_minor_skew = 1;
    uint64_t max_artifact_size = 1ULL << 30;
    // One fetch of an offer, the downloader's tries and backoff included (the installer's retries
    // start a new one); unset = derived from max_artifact_size (effective_download_timeout).
    std::optional<Duration> download_timeout;
    // A download starts after a random delay in [0, start_jitter], so that a fleet offered one
    // release does not reach the artifact server in the same second; zero: at once.
    Duration start_jitter = std::chrono::seconds(30);
    // A transient download failure (docs/update.md, failure classes) is tried again within the
    // same install until this long after its first try; zero: never.
    Duration retry_for = std::chrono::hours(6);
    // How long a deterministic failure keeps the same package hash out; zero: until the offer
    // changes (or `myriarch-updater forget`).
    Duration quarantine_for = std::chrono::hours(24);
    Duration health_timeout = std::chrono::minutes(2);
    uint32_t health_successes = 3;
    Duration health_interval = std::chrono::seconds(2);
    std::vector<std::string> validate_args{"validate", "--config={config}"};
    // After its health check a new version is on trial this long (0: no trial); within it,
    // trial_max_restarts unexpected ends of the supervisor, or trial_max_boots starts of the
    // container, roll it back (docs/update.md, "The trial").
    Duration trial_period = std::chrono::minutes(10);
    uint32_t trial_max_restarts = 3;
    uint32_t trial_max_boots = 3;
    friend bool operator==(const Update&, const Update&) = default;
};

enum class Activation { symlink, copy };

struct Collector {
    std::string binary = "otelcol-contrib";
    std::string install_dir = "/var/lib/myriarch/collector";
    std::string state_dir = "/var/lib/myriarch/state";
    Activation activation = Activation::symlink;
    uint32_t keep_versions = 1;  // besides the active one; previousVersion always among them
    std::optional<Url> health_url = Url{"http", "127.0.0.1", 13133, "/"};
    // Left out of the file: `<supervisor.storageDir>/effective.yaml`, where the supervisor writes
    // the config it runs the collector with (load_string resolves it; "" only before that).
    std::string config_file;
    friend bool operator==(const Collector&, const Collector&) = default;
};

struct Supervisor {
    std::optional<Url> health_url =
        Url{"http", "127.0.0.1", 23233, "/health"};  // nullopt = unchecked
    std::string storage_dir = "/var/lib/otelcol/supervisor";
    friend bool operator==(const Supervisor&, const Supervisor&) = default;
};

enum class SeedPolicy { newest, image };
// The signal the supervisor's process group gets at shutdown (docs/real-peers.md: the upstream
// supervisor shuts down in order on INT only; TERM kills it at once).
enum class StopSignal { term, interrupt };

struct Container {
    std::vector<std::string> supervisor_command;  // required, non-empty
    std::string seed_binary;                      // required, absolute
    SeedPolicy seed_policy = SeedPolicy::newest;
    StopSignal stop_signal = StopSignal::term;
    Duration stop_timeout = std::chrono::seconds(30);
    Duration restart_delay = std::chrono::seconds(2);
    uint32_t max_restarts = 5;
    Duration restart_window = std::chrono::minutes(10);
    // Where a fatal exit leaves its reason when the file exists; "" = never written.
    std::string termination_message_path = "/dev/termination-log";
    std::optional<HostPort> health_listen = HostPort{"0.0.0.0", 13135};  // nullopt = disabled
    bool metrics = true;  // /metrics on the health listener (docs/metrics.md)
    friend bool operator==(const Container&, const Container&) = default;
};

// Host mode (`run`): the supervisor is a systemd unit (docs/host-mode.md).
struct Host {
    std::string
        service_name;  // required by `run`: the supervisor's unit, e.g. opampsupervisor.service
    // How often the unit's state is read (`systemctl show`): systemctl has no watch.
    Duration poll_interval = std::chrono::seconds(1);
    // A collector binary shipped with the host (e.g. by its package) that seeds an empty volume
    // and competes by version as container.seedBinary does; "" = none: the volume's version
    // stands, and `run` refuses an empty volume.
    std::string seed_binary;
    // The probe server: off by default on a host (no kubelet asks, and a port is the host's).
    std::optional<HostPort> health_listen;
    bool metrics = true;  // /metrics on the health listener (docs/metrics.md)
    friend bool operator==(const Host&, const Host&) = default;
};

struct Log {
    log::Level level = log::Level::info;
    log::Format format = log::Format::text;
    friend bool operator==(const Log&, const Log&) = default;
};

struct Config {
    std::string path;  // the file it was loaded from
    Server server;
    Network network;
    Update update;
    Collector collector;
    Supervisor supervisor;
    std::optional<Container> container;  // present when the file has a container section
    std::optional<Host> host;            // present when the file has a host section
    Log log;
    friend bool operator==(const Config&, const Config&) = default;
};

// Which rules to apply beyond the common ones.
// `run` is host mode (`validate --mode host` or `--mode run`).
enum class Mode { any, container, run };

// One problem in a configuration file, with its position (1-based; 0 when not known).
struct Problem {
    std::string file;
    unsigned line = 0;
    unsigned column = 0;
    std::string key;  // full key path, e.g. "container.maxRestarts"
    std::string message;
    std::string str() const;  // "F:12:3: container.maxRestarts: must be at least 1"
};

// The outcome of loading: a Config when there are no problems, else every problem found.
struct LoadResult {
    std::optional<Config> config;
    std::vector<Problem> problems;
};

LoadResult load_file(const std::string& path, Mode mode);
LoadResult load_string(std::string_view yaml, const std::string& name, Mode mode);

// Host mode's bound on one `systemctl stop|start` of the supervisor's unit (its own
// TimeoutStopSec= bounds the stop itself; this bounds the updater's wait for systemctl).
inline constexpr Duration kHostUnitJobTimeout = std::chrono::seconds(90);

// How long a shutdown may wait for an install's critical section, plus a margin: 2 × the stop
// bound (container.stopTimeout, or kHostUnitJobTimeout in host mode) + 2 × healthTimeout + 60 s.
// Container mode: the pod's terminationGracePeriodSeconds; host mode: the updater unit's
// TimeoutStopSec=.
Duration recommended_grace_period(const Config& cfg);

// update.signerIdentity's certificate-field templates with their updater.yaml key names, in the
// order the documentation lists them (render and the template rule walk the same list).
struct SignerField {
    const char* key;  // "sourceRepositoryRef"
    const std::string* value;
};
std::vector<SignerField> signer_fields(const SignerIdentity& si);

// The effective configuration as YAML (every default filled in), for `validate`.
std::string render_effective(const Config& cfg);

// Convenience for commands: load, and turn problems into one Error listing them all.
Result<Config> load_or_error(const std::string& path, Mode mode);

// update.maxMinorSkew's upper bound: more would be the same as -1, said less clearly.
inline constexpr int kMaxMinorSkew = 1000;

// Files larger than this are refused before parsing (the example is about 2 KiB).
inline constexpr size_t kMaxFileSize = 1024 * 1024;

// The download prefixes in effect: update.allowedDownloadPrefixes, or when that is empty the
// artifact path on the endpoint's host (wss -> https, ws -> http, same host and port, /artifacts/).
// Empty when neither is configured.
std::vector<Url> effective_download_prefixes(const Config& cfg);

// The download deadline in effect: update.downloadTimeout, or when unset 5 min plus the time
// update.maxArtifactSize takes at 64 KiB/s (1 GiB: 16684 s, 4 h 38 min), so that only a link slower
// than that (or a server that drips on purpose) is cut off.
inline constexpr Duration kDownloadTimeoutBase = std::chrono::minutes(5);
inline constexpr uint64_t kDownloadMinRate = 64 * 1024;  // bytes per second
Duration effective_download_timeout(const Update& u);

}  // namespace myr::config
