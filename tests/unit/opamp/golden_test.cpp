// Our OpAMP codec against bytes made by a codec we did not write. The files under golden/ were
// made once by tests/interop/make-golden.mjs with the protobuf-es code that
// @elastic/opamp-client-node generated from the upstream opamp.proto, and are checked in, so these
// tests need no node. A round trip through our own encoder and decoder cannot notice a wrong field
// number, wire type or enum value (both sides would agree on the mistake); these can.
//
// Byte equality is a fair test: both serializers write fields in field-number order, map entries
// in insertion order (protobuf-es) or array order (protobuf-c), and leave out proto3 defaults, so
// the same content gives the same bytes. Should a case ever differ, the failure message shows both
// messages read by the independent field walker below, field by field.
#include <doctest/doctest.h>

#include <cstdio>
#include <optional>
#include <sstream>
#include <string>

#include "harness.hpp"
#include "opamp/agent.hpp"
#include "opamp/messages.hpp"

using namespace myr::opamp;

namespace {

std::string golden(const std::string& name) {
    const std::string path = myr::test::source_dir() + "/tests/unit/opamp/golden/" + name + ".bin";
    REQUIRE_MESSAGE(myr::test::exists(path),
                    path << " is missing (tests/interop/make-golden.mjs writes it)");
    return myr::test::read_file(path);
}

std::string unhex(std::string_view h) {
    std::string out;
    for (size_t i = 0; i + 1 < h.size(); i += 2) {
        out.push_back(static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
    }
    return out;
}

std::string hex(std::string_view b) {
    std::string out;
    char buf[3];
    for (unsigned char c : b) {
        std::snprintf(buf, sizeof buf, "%02x", c);
        out += buf;
    }
    return out;
}

// ---- an independent reading of protobuf bytes, for failure messages -------------------------

bool read_varint(std::string_view& b, uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b.empty()) return false;
        const auto c = static_cast<uint8_t>(b.front());
        b.remove_prefix(1);
        v |= static_cast<uint64_t>(c & 0x7f) << shift;
        if (!(c & 0x80)) return true;
    }
    return false;
}

bool printable(std::string_view s) {
    for (unsigned char c : s) {
        if (c < 0x20 || c == 0x7f) return false;
    }
    return true;
}

// One line per field, "<path>: <value>", nested messages as paths like "5.1.2". A length-delimited
// field is shown as text when printable, else as a message when it parses as one, else in hex.
// Returns false when `b` is not a well-formed message.
bool walk(std::string_view b, const std::string& prefix, std::string& out, int depth = 0) {
    while (!b.empty()) {
        uint64_t key = 0;
        if (!read_varint(b, key) || (key >> 3) == 0) return false;
        const std::string path = prefix + std::to_string(key >> 3);
        switch (key & 7) {
            case 0: {
                uint64_t v = 0;
                if (!read_varint(b, v)) return false;
                out += path + ": " + std::to_string(v) + "\n";
                break;
            }
            case 1:
            case 5: {
                const size_t n = (key & 7) == 1 ? 8 : 4;
                if (b.size() < n) return false;
                out += path + ": fixed " + hex(b.substr(0, n)) + "\n";
                b.remove_prefix(n);
                break;
            }
            case 2: {
                uint64_t n = 0;
                if (!read_varint(b, n) || n > b.size()) return false;
                const std::string_view body = b.substr(0, n);
                b.remove_prefix(n);
                std::string nested;
                if (!body.empty() && printable(body)) {
                    out += path + ": \"" + std::string(body) + "\"\n";
                } else if (!body.empty() && depth < 8 &&
                           walk(body, path + ".", nested, depth + 1)) {
                    out += nested;
                } else {
                    out += path + ": bytes " + hex(body) + "\n";
                }
                break;
            }
            default:
                return false;
        }
    }
    return true;
}

std::string fields(std::string_view b) {
    std::string out;
    if (!walk(b, "", out)) out += "(not a well-formed message from here on)\n";
    return out;
}

void check_bytes(const std::string& ours, const std::string& name) {
    const std::string want = golden(name);
    // A bool, so that doctest does not print the raw bytes of both sides.
    const bool same_bytes = ours == want;
    CHECK_MESSAGE(same_bytes, name << ": our encoding differs from the upstream one\nours:\n"
                                   << fields(ours) << "upstream:\n"
                                   << fields(want));
}

// ---- our values as text, so one CHECK shows every field of both sides -----------------------

std::string quoted(std::string_view s) {
    return printable(s) ? "\"" + std::string(s) + "\"" : "hex:" + hex(s);
}

std::string describe(const AgentToServer& m) {
    std::ostringstream o;
    o << "instance_uid=" << hex(m.instance_uid) << "\nsequence_num=" << m.sequence_num
      << "\ncapabilities=" << m.capabilities << "\nflags=" << m.flags
      << "\nagent_disconnect=" << m.agent_disconnect << "\n";
    if (m.agent_description) {
        for (const auto& kv : m.agent_description->identifying_attributes) {
            o << "identifying " << kv.key << "=" << quoted(kv.value)
              << (kv.is_string ? "" : " (not a string)") << "\n";
        }
        for (const auto& kv : m.agent_description->non_identifying_attributes) {
            o << "non_identifying " << kv.key << "=" << quoted(kv.value)
              << (kv.is_string ? "" : " (not a string)") << "\n";
        }
    }
    if (m.health) {
        const ComponentHealth& h = *m.health;
        o << "health healthy=" << h.healthy << " start=" << h.start_time_unix_nano
          << " last_error=" << quoted(h.last_error) << " status=" << quoted(h.status)
          << " status_time=" << h.status_time_unix_nano << "\n";
    }
    if (m.package_statuses) {
        const PackageStatuses& s = *m.package_statuses;
        o << "package_statuses all_hash=" << hex(s.server_provided_all_packages_hash)
          << " error=" << quoted(s.error_message) << "\n";
        for (const PackageStatus& p : s.packages) {
            o << " package " << p.name << " has=" << quoted(p.agent_has_version) << "/"
              << hex(p.agent_has_hash) << " offered=" << quoted(p.server_offered_version) << "/"
              << hex(p.server_offered_hash) << " status=" << to_string(p.status)
              << " error=" << quoted(p.error_message);
            if (p.download_details) {
                o << " download=" << p.download_details->download_percent << "%,"
                  << p.download_details->download_bytes_per_second << "B/s";
            }
            o << "\n";
        }
    }
    return o.str();
}

std::string describe(const ServerToAgent& m) {
    std::ostringstream o;
    o << "instance_uid=" << hex(m.instance_uid) << "\nflags=" << m.flags
      << "\ncapabilities=" << m.capabilities << "\n";
    if (m.error_response) {
        o << "error type=" << static_cast<int>(m.error_response->type)
          << " message=" << quoted(m.error_response->error_message) << " retry_after_ns=";
        if (m.error_response->retry_after_nanoseconds) {
            o << *m.error_response->retry_after_nanoseconds;
        } else {
            o << "absent";
        }
        o << "\n";
    }
    if (m.heartbeat_interval_seconds) o << "heartbeat=" << *m.heartbeat_interval_seconds << "\n";
    if (m.packages_available) {
        o << "packages_available all_hash=" << quoted(m.packages_available->all_packages_hash)
          << "\n";
        for (const PackageAvailable& p : m.packages_available->packages) {
            o << " package " << p.name << " type=" << static_cast<int>(p.type)
              << " version=" << quoted(p.version) << " hash=" << quoted(p.hash) << "\n";
            if (p.file) {
                o << "  url=" << p.file->download_url
                  << " content_hash=" << hex(p.file->content_hash)
                  << " signature=" << hex(p.file->signature) << "\n";
                for (const Header& h : p.file->headers) {
                    o << "  header " << h.key << ": " << h.value << "\n";
                }
            }
        }
    }
    if (m.new_instance_uid) o << "new_instance_uid=" << hex(*m.new_instance_uid) << "\n";
    if (m.command) o << "command=" << *m.command << "\n";
    return o.str();
}

// ---- the expected values: the same as in tests/interop/make-golden.mjs ----------------------

const std::string kUid = unhex("0190a6f46c1e7a3b9c2d0123456789ab");
const std::string kAgentHasHash =
    unhex("a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0");
const std::string kOfferedHash = "package-hash-0.117.0";
const std::string kAddonHash = "addon-hash-1.0";
const std::string kAllHash = "all-packages-hash-1";
const std::string kContentHash =
    unhex("00ff5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a80ff");
const std::string kSignature =
    "{\"mediaType\":\"application/vnd.dev.sigstore.bundle.v0.3+json\",\"note\":\"\xc3\xa9\xe2\x9c"
    "\x93\"}";
// AcceptsStatus | OffersPackages | AcceptsPackagesStatus.
constexpr uint64_t kServerCaps = 0x1 | 0x8 | 0x10;

AgentDescription updater_description() {
    return AgentDescription{
        {{"service.name", "myriarch-updater"},
         {"service.instance.id", "0190a6f4-6c1e-7a3b-9c2d-0123456789ab"},
         {"service.version", "0.1.0"}},
        {{"host.name", "pod-7"},
         {"os.type", "linux"},
         {"host.arch", "amd64"},
         {"dev.myriarch.updater.install_method", "container"},
         {"dev.myriarch.updater.image_collector_version", "0.115.0"},
         {"dev.myriarch.collector.instance_uid", "0190a6f3-1111-7222-8333-444455556666"},
         {"dev.myriarch.collector.version", "0.116.0"}}};
}

AgentToServer full_report() {
    AgentToServer m;
    m.instance_uid = kUid;
    m.sequence_num = 300;
    m.agent_description = updater_description();
    m.capabilities = kAgentCapabilities;
    m.health = ComponentHealth{true, 1767225600000000000ull, "", "running", 1767225601500000000ull};
    PackageStatus collector;
    collector.name = "otelcol-contrib";
    collector.agent_has_version = "0.116.0";
    collector.agent_has_hash = kAgentHasHash;
    collector.server_offered_version = "0.117.0";
    collector.server_offered_hash = kOfferedHash;
    collector.status = PackageStatusCode::downloading;
    collector.download_details = PackageDownloadDetails{42.5, 1048576.25};
    PackageStatus addon;
    addon.name = "addon-x";
    addon.server_offered_version = "1.0";
    addon.server_offered_hash = kAddonHash;
    addon.status = PackageStatusCode::install_failed;
    addon.error_message = "unsupported package type";
    m.package_statuses = PackageStatuses{{collector, addon}, kAllHash, ""};
    m.flags = agent_flag::request_instance_uid;
    return m;
}

AgentToServer unhealthy_failed() {
    AgentToServer m;
    m.instance_uid = kUid;
    m.sequence_num = 7;
    m.capabilities = kAgentCapabilities;
    m.health = ComponentHealth{false, 1767225600000000000ull,
                               "health check: GET http://127.0.0.1:13133/ answered 503",
                               "collector unhealthy", 1767225700000000000ull};
    PackageStatus p;
    p.name = "otelcol-contrib";
    p.agent_has_version = "0.116.0";
    p.agent_has_hash = kAgentHasHash;
    p.server_offered_version = "0.117.0";
    p.server_offered_hash = kOfferedHash;
    p.status = PackageStatusCode::install_failed;
    p.error_message = "verify: not verified: identity: certificate subject differs";
    m.package_statuses = PackageStatuses{{p}, kAllHash, "one package failed"};
    return m;
}

AgentToServer heartbeat() {
    AgentToServer m;
    m.instance_uid = kUid;
    m.sequence_num = 12;
    m.capabilities = kAgentCapabilities;
    return m;
}

AgentToServer disconnect() {
    AgentToServer m;
    m.instance_uid = kUid;
    m.sequence_num = 13;
    m.capabilities = kAgentCapabilities;
    m.agent_disconnect = true;
    return m;
}

ServerToAgent packages_available() {
    ServerToAgent m;
    m.instance_uid = kUid;
    m.capabilities = kServerCaps;
    PackageAvailable collector;
    collector.name = "otelcol-contrib";
    collector.type = PackageType::top_level;
    collector.version = "0.117.0";
    collector.file =
        DownloadableFile{"https://artifacts.example/otelcol-contrib_0.117.0_linux_amd64.tar.gz",
                         kContentHash,
                         kSignature,
                         {{"Authorization", "Bearer artifact-token"}, {"X-Trace", "abc"}}};
    collector.hash = kOfferedHash;
    PackageAvailable addon;
    addon.name = "addon-x";
    addon.type = PackageType::addon;
    addon.version = "1.0";
    addon.file = DownloadableFile{"https://artifacts.example/addon-x-1.0.tar.gz", "", "", {}};
    addon.hash = kAddonHash;
    m.packages_available = PackagesAvailable{{collector, addon}, kAllHash};
    return m;
}

ServerToAgent new_instance_uid() {
    ServerToAgent m;
    m.instance_uid = kUid;
    m.new_instance_uid = unhex("0190a6f5000070008000feedfacecafe");
    return m;
}

ServerToAgent report_full_state() {
    ServerToAgent m;
    m.instance_uid = kUid;
    m.flags = server_flag::report_full_state;
    m.capabilities = kServerCaps;
    return m;
}

ServerToAgent error_unavailable() {
    ServerToAgent m;
    m.instance_uid = kUid;
    m.error_response = ServerErrorResponse{ServerErrorType::unavailable, "server is overloaded",
                                           30'000'000'000ull};
    return m;
}

ServerToAgent error_bad_request() {
    ServerToAgent m;
    m.error_response =
        ServerErrorResponse{ServerErrorType::bad_request, "sequence_num out of order", {}};
    return m;
}

ServerToAgent heartbeat_setting() {
    ServerToAgent m;
    m.instance_uid = kUid;
    m.heartbeat_interval_seconds = 45;
    return m;
}

ServerToAgent command_restart() {
    ServerToAgent m;
    m.instance_uid = kUid;
    m.command = 0;  // Restart
    return m;
}

void check_agent_to_server(const std::string& name, const AgentToServer& want) {
    CAPTURE(name);
    check_bytes(encode(want), name);
    auto got = decode_agent_to_server(golden(name));
    REQUIRE_MESSAGE(got, got.error().message());
    CHECK(describe(*got) == describe(want));
}

void check_server_to_agent(const std::string& name, const ServerToAgent& want) {
    CAPTURE(name);
    auto got = decode_server_to_agent(golden(name));
    REQUIRE_MESSAGE(got, got.error().message());
    CHECK(describe(*got) == describe(want));
    // The test OpAMP server encodes with the same code; it must speak upstream's bytes too.
    check_bytes(encode(want), name);
}

}  // namespace

TEST_CASE("golden: the agent's capabilities are the upstream bits the golden report carries") {
    // make-golden.mjs builds them from the upstream enum names; a wrong bit value here would
    // make every byte comparison below fail for a less obvious reason.
    CHECK(kAgentCapabilities == 0x2819);
}

TEST_CASE("golden: AgentToServer full report equals the upstream encoding") {
    check_agent_to_server("a2s-full-report", full_report());
}

TEST_CASE("golden: AgentToServer unhealthy report with a failed package equals upstream") {
    check_agent_to_server("a2s-unhealthy-failed", unhealthy_failed());
}

TEST_CASE("golden: AgentToServer heartbeat and agent_disconnect equal upstream") {
    check_agent_to_server("a2s-heartbeat", heartbeat());
    check_agent_to_server("a2s-disconnect", disconnect());
}

TEST_CASE("golden: attributes of every AnyValue type decode to their text form") {
    // Our encoder writes string values only, so this case is decoded, not re-encoded.
    auto got = decode_agent_to_server(golden("a2s-attribute-types"));
    REQUIRE_MESSAGE(got, got.error().message());
    AgentToServer want;
    want.instance_uid = kUid;
    want.sequence_num = 1;
    want.agent_description = AgentDescription{{{"service.name", "other-agent"}},
                                              {{"a.bool", "true", false},
                                               {"a.int", "-42", false},
                                               {"a.double", std::to_string(0.5), false},
                                               {"a.bytes", unhex("00ff10"), false},
                                               {"a.array", "[array]", false},
                                               {"a.kvlist", "[kvlist]", false},
                                               {"a.string", "apr\xc3\xa8s", true}}};
    CHECK(describe(*got) == describe(want));
}

TEST_CASE("golden: ServerToAgent packages_available decodes to the offer") {
    check_server_to_agent("s2a-packages-available", packages_available());
}

TEST_CASE("golden: ServerToAgent new_instance_uid, ReportFullState and command decode") {
    check_server_to_agent("s2a-new-instance-uid", new_instance_uid());
    check_server_to_agent("s2a-report-full-state", report_full_state());
    check_server_to_agent("s2a-command-restart", command_restart());
}

TEST_CASE("golden: ServerToAgent error_response with and without retry_info decodes") {
    check_server_to_agent("s2a-error-unavailable", error_unavailable());
    check_server_to_agent("s2a-error-bad-request", error_bad_request());
}

TEST_CASE("golden: ServerToAgent heartbeat setting decodes") {
    check_server_to_agent("s2a-heartbeat-setting", heartbeat_setting());
}

TEST_CASE("golden: upstream fields our .proto leaves out are skipped, also inside known ones") {
    auto got = decode_server_to_agent(golden("s2a-unknown-fields"));
    REQUIRE_MESSAGE(got, got.error().message());
    ServerToAgent want;
    want.instance_uid = kUid;
    want.flags = server_flag::report_full_state | server_flag::report_available_components;
    want.heartbeat_interval_seconds = 60;
    CHECK(describe(*got) == describe(want));
}
