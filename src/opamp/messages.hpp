// The OpAMP messages the updater exchanges, as plain C++ values, and their wire form.
//
// The wire form comes from src/opamp/opamp.proto through protobuf-c (generated at build time); this
// file is the only place that touches the generated structs, so the rest of the module never sees a
// char* or a hand-counted array. Bytes fields (uids, hashes, signatures) are held in std::string.
// Both directions are encoded and decoded: the agent needs AgentToServer→bytes and
// bytes→ServerToAgent, the test OpAMP server and the fuzz targets need the other two.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace myr::opamp {

using Bytes = std::string;

// AgentCapabilities bits (docs/opamp.md).
namespace agent_cap {
constexpr uint64_t reports_status = 0x1;
constexpr uint64_t accepts_packages = 0x8;
constexpr uint64_t reports_package_statuses = 0x10;
constexpr uint64_t reports_health = 0x800;
constexpr uint64_t reports_heartbeat = 0x2000;
}  // namespace agent_cap

// ServerToAgent.flags bits.
namespace server_flag {
constexpr uint64_t report_full_state = 0x1;
constexpr uint64_t report_available_components = 0x2;
}  // namespace server_flag

// AgentToServer.flags bits.
namespace agent_flag {
constexpr uint64_t request_instance_uid = 0x1;
}

// A KeyValue whose AnyValue is a string: every attribute the updater reports is one. Decoding an
// attribute of another type yields its value in text form with `is_string = false`.
struct KeyValue {
    std::string key;
    std::string value;
    bool is_string = true;
    bool operator==(const KeyValue&) const = default;
};

struct AgentDescription {
    std::vector<KeyValue> identifying_attributes;
    std::vector<KeyValue> non_identifying_attributes;
    bool operator==(const AgentDescription&) const = default;
};

// A sub-component's health, one entry of ComponentHealth.component_health_map (one level deep:
// the updater reports itself beside the supervisor). `attributes` is ComponentHealth field 7
// (opamp-spec PR #334, Development); a server whose codec predates it skips the field.
struct SubHealth {
    bool healthy = false;
    uint64_t start_time_unix_nano = 0;
    std::string last_error;
    std::string status;
    uint64_t status_time_unix_nano = 0;
    std::vector<KeyValue> attributes;
    bool operator==(const SubHealth&) const = default;
};

struct ComponentHealth {
    bool healthy = false;
    uint64_t start_time_unix_nano = 0;
    std::string last_error;
    std::string status;
    uint64_t status_time_unix_nano = 0;
    std::vector<std::pair<std::string, SubHealth>> components;  // at most kMaxHealthComponents
    bool operator==(const ComponentHealth&) const = default;
};
inline constexpr size_t kMaxHealthComponents = 8;
inline constexpr size_t kMaxHealthAttributes = 16;

enum class PackageStatusCode : int {
    installed = 0,
    install_pending = 1,
    installing = 2,
    install_failed = 3,
    downloading = 4,
};
const char* to_string(PackageStatusCode code);

struct PackageDownloadDetails {
    double download_percent = 0;
    double download_bytes_per_second = 0;
    bool operator==(const PackageDownloadDetails&) const = default;
};

struct PackageStatus {
    std::string name;
    std::string agent_has_version;
    Bytes agent_has_hash;
    std::string server_offered_version;
    Bytes server_offered_hash;
    PackageStatusCode status = PackageStatusCode::installed;
    std::string error_message;
    std::optional<PackageDownloadDetails> download_details;
    bool operator==(const PackageStatus&) const = default;
};

struct PackageStatuses {
    std::vector<PackageStatus> packages;  // a map on the wire, keyed by name
    Bytes server_provided_all_packages_hash;
    std::string error_message;
    bool operator==(const PackageStatuses&) const = default;
};

struct AgentToServer {
    Bytes instance_uid;
    uint64_t sequence_num = 0;
    std::optional<AgentDescription> agent_description;
    uint64_t capabilities = 0;
    std::optional<ComponentHealth> health;
    std::optional<PackageStatuses> package_statuses;
    bool agent_disconnect = false;
    uint64_t flags = 0;
};

enum class ServerErrorType : int { unknown = 0, bad_request = 1, unavailable = 2 };

struct ServerErrorResponse {
    ServerErrorType type = ServerErrorType::unknown;
    std::string error_message;
    std::optional<uint64_t> retry_after_nanoseconds;
};

struct Header {
    std::string key;
    std::string value;
};

struct DownloadableFile {
    std::string download_url;
    Bytes content_hash;  // SHA-256 of the file
    Bytes signature;     // the Sigstore bundle JSON of the file
    std::vector<Header> headers;
};

enum class PackageType : int { top_level = 0, addon = 1 };

struct PackageAvailable {
    std::string name;                           // the map key on the wire
    PackageType type = PackageType::top_level;  // may hold a value outside the enum
    std::string version;
    std::optional<DownloadableFile> file;
    Bytes hash;
    // Why the codec refused this entry (it breaks a budget of its own, such as kMaxFileHeaders),
    // or "": the rest of the message is decoded as usual, and the entry is answered InstallFailed
    // with this reason instead of being installed.
    std::string refusal;
};

struct PackagesAvailable {
    std::vector<PackageAvailable> packages;  // in wire order, at most kMaxOfferedPackages
    Bytes all_packages_hash;
    // Entries past kMaxOfferedPackages: dropped from the wire bytes before anything was decoded,
    // so they cost neither memory nor a status each; the installer answers them with one error.
    size_t refused = 0;
};

struct ServerToAgent {
    Bytes instance_uid;
    std::optional<ServerErrorResponse> error_response;
    // Present when the message carries ConnectionSettingsOffers.opamp; 0 turns heartbeats off.
    std::optional<uint64_t> heartbeat_interval_seconds;
    std::optional<PackagesAvailable> packages_available;
    uint64_t flags = 0;
    uint64_t capabilities = 0;
    std::optional<Bytes> new_instance_uid;  // AgentIdentification.new_instance_uid
    std::optional<int> command;             // ServerToAgentCommand.type
};

// Budgets for what one ServerToAgent may cost. Its wire size is at most kMaxServerMessage (the
// agent's WebSocket max_message; larger closes with 1009): the agent accepts no remote
// configuration, so the largest message it has a use for is an offer, whose biggest field is a
// Sigstore bundle (verify/ refuses one over 1 MiB; real ones are a few KiB). Every byte of a
// message costs loop time in one turn (decoding cannot be split across turns): a 14 MiB offer of
// empty entries held the loop for 86 ms under net's general 16 MiB cap. An offer holds a handful
// of packages; 2-byte map entries once made a 2 MiB message cost 1.3 GB. Entries past
// kMaxOfferedPackages are dropped before decoding; protobuf-c may allocate at most
// kMaxDecodedBytes for the rest (a message needing more is refused whole); a downloadable file may
// name at most kMaxFileHeaders headers.
inline constexpr size_t kMaxServerMessage = size_t{4} << 20;
inline constexpr size_t kMaxOfferedPackages = 32;
inline constexpr size_t kMaxDecodedBytes = size_t{32} << 20;
inline constexpr size_t kMaxFileHeaders = 32;

// What the agent writes into an AgentToServer: every string is made valid UTF-8 by the encoder
// (proto3 requires it; opamp-go drops a message that breaks it, whole), and its own free text —
// error messages, health text, attribute values — is cut at kMaxReportText bytes on a code point
// boundary. The server's names and versions it echoes are only made valid, never cut.
inline constexpr size_t kMaxReportText = 1024;

// Protobuf bytes, without the WebSocket header.
std::string encode(const AgentToServer& msg);
std::string encode(const ServerToAgent& msg);
[[nodiscard]] Result<AgentToServer> decode_agent_to_server(std::string_view bytes);
[[nodiscard]] Result<ServerToAgent> decode_server_to_agent(std::string_view bytes);

// The WebSocket message: varint header 0 followed by the protobuf bytes.
std::string frame_message(std::string_view protobuf);
// The protobuf bytes of a WebSocket message; a missing, overlong or non-zero header is an error.
[[nodiscard]] Result<std::string_view> unframe_message(std::string_view message);

}  // namespace myr::opamp
