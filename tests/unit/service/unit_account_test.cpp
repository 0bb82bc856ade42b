// The supervisor unit's account for host mode's preflight: systemctl's answer parsed, names
// resolved in passwd and group texts, and every way it cannot be resolved named.
#include "service/unit_account.hpp"

#include <doctest/doctest.h>

using namespace myr;
using service::UnitAccountSpec;

namespace {

const char* kPasswd =
    "root:x:0:0:root:/root:/bin/bash\n"
    "# a comment\n"
    "otelcol:x:998:997::/var/lib/otelcol:/usr/sbin/nologin\n"
    "broken:x:abc:1::/:/bin/false\n";
const char* kGroup =
    "root:x:0:\n"
    "otelcol:x:997:\n"
    "telemetry:x:1200:otelcol\n";

UnitAccountSpec spec(std::string user, std::string group = "") {
    UnitAccountSpec s;
    s.user = std::move(user);
    s.group = std::move(group);
    return s;
}

}  // namespace

TEST_CASE("unit account: systemctl show's answer, with systemd's quoting of Environment=") {
    auto s = service::parse_unit_account(
        "User=otelcol\nGroup=\nDynamicUser=no\n"
        "Environment=GOMAXPROCS=2 \"OTEL_RESOURCE_ATTRIBUTES=site=edge 7\" A=x\\\"y\n");
    REQUIRE(s);
    CHECK(s->user == "otelcol");
    CHECK(s->group.empty());
    CHECK_FALSE(s->dynamic_user);
    CHECK(s->environment == std::vector<std::string>{
                                "GOMAXPROCS=2", "OTEL_RESOURCE_ATTRIBUTES=site=edge 7", "A=x\"y"});
    auto none = service::parse_unit_account("User=\nGroup=\nDynamicUser=no\nEnvironment=\n");
    REQUIRE(none);
    CHECK(none->environment.empty());
}

TEST_CASE("unit account: an answer that is not systemctl's, or an entry that is no KEY=value") {
    auto empty = service::parse_unit_account("Failed to get properties\n");
    REQUIRE_FALSE(empty);
    CHECK(empty.error().message() == "systemctl show: no User= in its answer");
    auto bad = service::parse_unit_account("User=\nEnvironment=JUSTAWORD\n");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().message() ==
          "systemctl show: Environment= entry \"JUSTAWORD\" is not KEY=value");
}

TEST_CASE("unit account: names and numbers resolve; Group= overrides the primary group") {
    auto root = service::resolve_unit_account(spec(""), kPasswd, kGroup);
    REQUIRE(root);
    CHECK(root->uid == 0);
    CHECK(root->gid == 0);
    CHECK(root->describe() == "uid 0 gid 0 (root)");
    auto o = service::resolve_unit_account(spec("otelcol"), kPasswd, kGroup);
    REQUIRE(o);
    CHECK(o->uid == 998);
    CHECK(o->gid == 997);
    auto g = service::resolve_unit_account(spec("otelcol", "telemetry"), kPasswd, kGroup);
    REQUIRE(g);
    CHECK(g->gid == 1200);
    auto n = service::resolve_unit_account(spec("998", "1200"), kPasswd, kGroup);
    REQUIRE(n);
    CHECK(n->uid == 998);
    CHECK(n->gid == 1200);
}

TEST_CASE("unit account: what cannot be resolved is named, DynamicUser= included") {
    auto missing = service::resolve_unit_account(spec("collector"), kPasswd, kGroup);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message() == "User=collector is not in /etc/passwd");
    auto group = service::resolve_unit_account(spec("otelcol", "nogroup"), kPasswd, kGroup);
    REQUIRE_FALSE(group);
    CHECK(group.error().message() == "Group=nogroup is not in /etc/group");
    auto broken = service::resolve_unit_account(spec("broken"), kPasswd, kGroup);
    REQUIRE_FALSE(broken);
    CHECK(broken.error().message() == "User=broken: its /etc/passwd line has no ids");
    UnitAccountSpec dyn = spec("otelcol");
    dyn.dynamic_user = true;
    auto d = service::resolve_unit_account(dyn, kPasswd, kGroup);
    REQUIRE_FALSE(d);
    CHECK(d.error().message().find("DynamicUser=yes") != std::string::npos);
}
