#include "opamp/messages.hpp"

#include <doctest/doctest.h>

using namespace myr::opamp;

namespace {

// Hand-made protobuf: a varint field, for building messages with unknown fields.
std::string varint(uint64_t v) {
    std::string s;
    while (v >= 0x80) {
        s.push_back(static_cast<char>(v | 0x80));
        v >>= 7;
    }
    s.push_back(static_cast<char>(v));
    return s;
}
std::string field_varint(uint32_t num, uint64_t v) {
    return varint(num << 3 | 0) + varint(v);
}
std::string field_bytes(uint32_t num, std::string_view b) {
    return varint(num << 3 | 2) + varint(b.size()) + std::string(b);
}

}  // namespace

TEST_CASE("messages: AgentToServer survives encode and decode with every field") {
    AgentToServer m;
    m.instance_uid = std::string(16, '\x07');
    m.sequence_num = 42;
    m.capabilities = 0x2819;
    m.flags = agent_flag::request_instance_uid;
    m.agent_description = AgentDescription{{{"service.name", "myriarch-updater"}},
                                           {{"host.name", "pod-0"}, {"os.type", "linux"}}};
    m.health = ComponentHealth{true, 1700000000000000000ull, "", "running", 1700000000000000001ull};
    m.health->components.emplace_back(
        "myriarch-updater", SubHealth{true,
                                      1,
                                      "",
                                      "0.118.0 on trial until 2026-12-07T10:10:00Z",
                                      2,
                                      {{"myriarch.update.state", "trial"},
                                       {"myriarch.update.trial_until", "2026-12-07T10:10:00Z"}}});
    PackageStatus ps;
    ps.name = "otelcol-contrib";
    ps.agent_has_version = "0.116.0";
    ps.agent_has_hash = std::string("\x01\x02\x00\x03", 4);
    ps.server_offered_version = "0.117.0";
    ps.server_offered_hash = "abc";
    ps.status = PackageStatusCode::downloading;
    ps.download_details = PackageDownloadDetails{50.0, 1024.0};
    m.package_statuses = PackageStatuses{{ps}, "allhash", "one failed"};
    m.agent_disconnect = true;

    auto back = decode_agent_to_server(encode(m));
    REQUIRE(back);
    CHECK(back->instance_uid == m.instance_uid);
    CHECK(back->sequence_num == 42);
    CHECK(back->capabilities == 0x2819);
    CHECK(back->flags == 1);
    CHECK(back->agent_description == m.agent_description);
    CHECK(back->health == m.health);
    CHECK(back->package_statuses == m.package_statuses);
    CHECK(back->agent_disconnect);
}

TEST_CASE("messages: ServerToAgent survives encode and decode with every field") {
    ServerToAgent m;
    m.instance_uid = std::string(16, '\x01');
    m.error_response = ServerErrorResponse{ServerErrorType::unavailable, "busy", 5'000'000'000ull};
    m.heartbeat_interval_seconds = 7;
    PackageAvailable p;
    p.name = "otelcol-contrib";
    p.type = PackageType::top_level;
    p.version = "0.117.0";
    p.hash = "h1";
    p.file = DownloadableFile{"https://x/y.tar.gz",
                              std::string(32, '\xaa'),
                              "{\"bundle\":1}",
                              {{"Authorization", "Bearer t"}, {"X-A", "b"}}};
    m.packages_available = PackagesAvailable{{p}, "all"};
    m.flags = server_flag::report_full_state;
    m.capabilities = 0x1f;
    m.new_instance_uid = std::string(16, '\x02');
    m.command = 0;

    auto back = decode_server_to_agent(encode(m));
    REQUIRE(back);
    CHECK(back->instance_uid == m.instance_uid);
    REQUIRE(back->error_response);
    CHECK(back->error_response->type == ServerErrorType::unavailable);
    CHECK(back->error_response->error_message == "busy");
    CHECK(back->error_response->retry_after_nanoseconds == 5'000'000'000ull);
    CHECK(back->heartbeat_interval_seconds == 7u);
    REQUIRE(back->packages_available);
    REQUIRE(back->packages_available->packages.size() == 1);
    const auto& q = back->packages_available->packages[0];
    CHECK(q.name == "otelcol-contrib");
    CHECK(q.version == "0.117.0");
    CHECK(q.hash == "h1");
    REQUIRE(q.file);
    CHECK(q.file->download_url == "https://x/y.tar.gz");
    CHECK(q.file->content_hash == std::string(32, '\xaa'));
    CHECK(q.file->signature == "{\"bundle\":1}");
    REQUIRE(q.file->headers.size() == 2);
    CHECK(q.file->headers[0].key == "Authorization");
    CHECK(q.file->headers[1].value == "b");
    CHECK(back->packages_available->all_packages_hash == "all");
    CHECK(back->flags == 1);
    CHECK(back->capabilities == 0x1f);
    CHECK(back->new_instance_uid == std::string(16, '\x02'));
    CHECK(back->command == 0);
}

TEST_CASE("messages: unknown fields in a ServerToAgent are skipped") {
    // flags=1, then field 3 (remote_config, not in our .proto) and field 99 (unknown varint).
    std::string raw = field_varint(6, 1) + field_bytes(3, field_bytes(1, "cfg")) +
                      field_varint(99, 12345) + field_varint(7, 0x8);
    auto m = decode_server_to_agent(raw);
    REQUIRE(m);
    CHECK(m->flags == 1);
    CHECK(m->capabilities == 0x8);
    CHECK_FALSE(m->packages_available);
}

TEST_CASE("messages: an enum value the .proto does not name is kept as a number, not undefined") {
    // packages_available (5) { packages (1) { key "p", value { type (1) = -1 } } }: protobuf-c
    // stores -1 in a C enum field; reading it through the enum type was undefined behaviour
    // (found by fuzz_opamp once UBSan stopped the run on it).
    std::string pkg = field_varint(1, ~uint64_t{0}) + field_bytes(2, "1.0");
    std::string raw = field_bytes(5, field_bytes(1, field_bytes(1, "p") + field_bytes(2, pkg)));
    auto m = decode_server_to_agent(raw);
    REQUIRE(m);
    REQUIRE(m->packages_available);
    REQUIRE(m->packages_available->packages.size() == 1);
    CHECK(static_cast<int>(m->packages_available->packages[0].type) == -1);
    CHECK(m->packages_available->packages[0].type != PackageType::top_level);
}

TEST_CASE(
    "messages: a ConnectionSettingsOffers without opamp settings leaves the heartbeat alone") {
    std::string raw = field_bytes(4, field_bytes(1, "hash"));
    auto m = decode_server_to_agent(raw);
    REQUIRE(m);
    CHECK_FALSE(m->heartbeat_interval_seconds);
    auto z = decode_server_to_agent(field_bytes(4, field_bytes(2, "")));
    REQUIRE(z);
    CHECK(z->heartbeat_interval_seconds == 0u);
}

TEST_CASE("messages: truncated protobuf is an error, not a crash") {
    ServerToAgent m;
    m.packages_available = PackagesAvailable{{{"p", PackageType::top_level, "1", {}, "h"}}, "a"};
    std::string raw = encode(m);
    auto bad = decode_server_to_agent(raw.substr(0, raw.size() - 2));
    CHECK_FALSE(bad);
    CHECK(bad.error().message().find("ServerToAgent") != std::string::npos);
}

TEST_CASE("messages: the WebSocket header is a zero varint") {
    CHECK(frame_message("abc") == std::string("\0abc", 4));
    const std::string framed("\0xyz", 4);
    auto ok = unframe_message(framed);
    REQUIRE(ok);
    CHECK(*ok == "xyz");
    auto empty = unframe_message(std::string("\0", 1));
    REQUIRE(empty);
    CHECK(empty->empty());
    CHECK_FALSE(unframe_message(""));
    auto nonzero = unframe_message("\x01xyz");
    REQUIRE_FALSE(nonzero);
    CHECK(nonzero.error().message().find("header 1") != std::string::npos);
    // An overlong encoding of zero is still zero.
    const std::string overlong_zero("\x80\x00z", 3);
    auto overlong = unframe_message(overlong_zero);
    REQUIRE(overlong);
    CHECK(*overlong == "z");
    CHECK_FALSE(unframe_message("\x80\x80"));
    CHECK_FALSE(unframe_message(std::string(11, '\x80') + "\x00"));
}

namespace {

// A PackagesAvailable of `n` empty map entries (2 bytes each), after `prefix`.
std::string offer_of_empty_entries(size_t n, std::string_view prefix = "") {
    std::string entries(prefix);
    for (size_t i = 0; i < n; ++i) entries += field_bytes(1, "");
    return entries;
}

}  // namespace

TEST_CASE("messages: packages past the per-offer cap are dropped before decoding and counted") {
    const std::string named = field_bytes(1, field_bytes(1, "otelcol-contrib"));
    const std::string raw =
        field_bytes(5, offer_of_empty_entries(1'000'000, named) + field_bytes(2, "all-hash")) +
        field_varint(6, 1);
    auto m = decode_server_to_agent(raw);
    REQUIRE(m);
    REQUIRE(m->packages_available);
    CHECK(m->packages_available->packages.size() == kMaxOfferedPackages);
    CHECK(m->packages_available->packages[0].name == "otelcol-contrib");  // wire order kept
    CHECK(m->packages_available->refused == 1'000'001 - kMaxOfferedPackages);
    CHECK(m->packages_available->all_packages_hash == "all-hash");
    CHECK(m->flags == 1);  // the rest of the message is intact
}

TEST_CASE(
    "messages: the cap counts every occurrence of packages_available (protobuf merges them)") {
    std::string raw;
    for (int i = 0; i < 10; ++i) raw += field_bytes(5, offer_of_empty_entries(20));
    auto m = decode_server_to_agent(raw);
    REQUIRE(m);
    CHECK(m->packages_available->packages.size() == kMaxOfferedPackages);
    CHECK(m->packages_available->refused == 200 - kMaxOfferedPackages);
}

TEST_CASE("messages: a million one-entry occurrences decode as one offer, the last hash wins") {
    // How a hostile server makes protobuf-c merge a million times (integration-hostile): the
    // occurrences are merged before decoding, as protobuf would merge them.
    std::string raw;
    raw.reserve(8u << 20);
    for (int i = 0; i < 1'000'000; ++i) {
        raw += field_bytes(5, field_bytes(1, "") + field_bytes(2, i == 999'999 ? "last" : "h"));
    }
    raw += field_varint(6, 1);
    auto m = decode_server_to_agent(raw);
    REQUIRE(m);
    REQUIRE(m->packages_available);
    CHECK(m->packages_available->packages.size() == kMaxOfferedPackages);
    CHECK(m->packages_available->refused == 1'000'000 - kMaxOfferedPackages);
    CHECK(m->packages_available->all_packages_hash == "last");
    CHECK(m->flags == 1);
}

TEST_CASE("messages: an offer within the cap refuses nothing") {
    auto m = decode_server_to_agent(field_bytes(5, offer_of_empty_entries(kMaxOfferedPackages)));
    REQUIRE(m);
    CHECK(m->packages_available->packages.size() == kMaxOfferedPackages);
    CHECK(m->packages_available->refused == 0);
}

TEST_CASE("messages: a message that would decode to more than the budget is refused whole") {
    // 4 M unknown 2-byte fields: protobuf-c keeps a record of each, far more than 32 MiB.
    std::string raw;
    raw.reserve(8u << 20);
    for (int i = 0; i < 4'000'000; ++i) raw += field_varint(15, 0);
    auto m = decode_server_to_agent(raw);
    REQUIRE_FALSE(m);
    CHECK(m.error().message().find("more than 32 MiB") != std::string::npos);
}

TEST_CASE("messages: a downloadable file with too many headers refuses its package only") {
    std::string headers;
    for (size_t i = 0; i <= kMaxFileHeaders; ++i) headers += field_bytes(1, "");  // Headers.headers
    // PackageAvailable.file (3) → DownloadableFile.headers (4)
    const std::string pkg = field_bytes(3, field_bytes(4, headers));
    const std::string entry = field_bytes(1, "p") + field_bytes(2, pkg);
    const std::string other = field_bytes(1, "q") + field_bytes(2, field_bytes(2, "1.0.0"));
    // ServerToAgent.packages_available (5), then connection_settings (4 → opamp 2 → heartbeat 4).
    const std::string msg = field_bytes(5, field_bytes(1, entry) + field_bytes(1, other)) +
                            field_bytes(4, field_bytes(2, field_varint(4, 42)));
    auto m = decode_server_to_agent(msg);
    REQUIRE(m);
    REQUIRE(m->packages_available);
    REQUIRE(m->packages_available->packages.size() == 2);
    const PackageAvailable& p = m->packages_available->packages[0];
    CHECK(p.name == "p");
    CHECK(p.refusal == "33 download headers, at most 32");
    REQUIRE(p.file);
    CHECK(p.file->headers.empty());
    CHECK(m->packages_available->packages[1].name == "q");
    CHECK(m->packages_available->packages[1].version == "1.0.0");
    CHECK(m->packages_available->packages[1].refusal.empty());
    // The rest of the message is decoded too.
    CHECK(m->heartbeat_interval_seconds == 42u);
}

TEST_CASE("messages: every string of an AgentToServer is valid UTF-8 and free text is bounded") {
    AgentToServer a;
    a.instance_uid = std::string(16, '\x01');
    PackageStatuses s;
    PackageStatus p;
    p.name = "otelcol\xFF";
    p.server_offered_version = "0.117.0";
    p.status = PackageStatusCode::install_failed;
    p.error_message = "download: HTTP 404 Not Found\xA0" + std::string(5000, 'x');
    s.packages.push_back(p);
    s.error_message = "\xC3";
    a.package_statuses = s;
    ComponentHealth h;
    h.last_error = "validate said \xFE";
    a.health = h;
    AgentDescription d;
    d.non_identifying_attributes.push_back({"host.name", "pod\x80", true});
    a.agent_description = d;
    auto back = decode_agent_to_server(encode(a));
    REQUIRE(back);
    const std::string fffd = "\xEF\xBF\xBD";
    const PackageStatus& q = back->package_statuses->packages.at(0);
    CHECK(q.name == "otelcol" + fffd);
    CHECK(q.error_message.rfind("download: HTTP 404 Not Found" + fffd + "x", 0) == 0);
    CHECK(q.error_message.size() <= kMaxReportText);
    CHECK(back->package_statuses->error_message == fffd);
    CHECK(back->health->last_error == "validate said " + fffd);
    CHECK(back->agent_description->non_identifying_attributes.at(0).value == "pod" + fffd);
}

TEST_CASE("messages: the updater's health attributes are ComponentHealth field 7 of a map entry") {
    AgentToServer m;
    m.instance_uid = std::string(16, '\x07');
    ComponentHealth h;
    h.components.emplace_back("u", SubHealth{true, 0, "", "", 0, {{"k", "v"}}});
    m.health = h;
    const std::string bytes = encode(m);
    // KeyValue{key "k", value AnyValue{string_value "v"}} = 0a 01 6b 12 03 0a 01 76, under field 7
    // (tag 0x3a) of the map entry's value, with its length 8.
    CHECK(bytes.find(std::string("\x3a\x08\x0a\x01\x6b\x12\x03\x0a\x01\x76", 10)) !=
          std::string::npos);
    // More components and attributes than the bounds: cut, never more.
    ComponentHealth many;
    for (int i = 0; i < 20; ++i) {
        SubHealth sub;
        for (int j = 0; j < 40; ++j) sub.attributes.push_back({"k" + std::to_string(j), "v"});
        many.components.emplace_back("c" + std::to_string(i), sub);
    }
    m.health = many;
    auto back = decode_agent_to_server(encode(m));
    REQUIRE(back);
    REQUIRE(back->health);
    CHECK(back->health->components.size() == kMaxHealthComponents);
    CHECK(back->health->components[0].second.attributes.size() == kMaxHealthAttributes);
}
