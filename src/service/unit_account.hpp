// Who the supervisor's unit runs as, for host mode's preflight: the staged collector's `--version`
// and `validate` must run as the unit's User= and Group= with its Environment=, as the supervisor
// will run it, not as the updater (root). Read from `systemctl show -p User,Group,DynamicUser,
// Environment` before each preflight (a daemon-reload may have changed them), the names resolved
// in the host's /etc/passwd and /etc/group. The files are read, not getpwnam(3): a static binary
// cannot load glibc's NSS modules, and a service user is a local one (LDAP users are not a
// supervisor's). EnvironmentFile= is not read: its files may be the operator's secrets, and
// systemctl does not expand them.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace myr::service {

// What `systemctl show` says of the unit's account.
struct UnitAccountSpec {
    std::string user;   // User=, "" = root
    std::string group;  // Group=, "" = the user's primary group
    bool dynamic_user = false;
    std::vector<std::string> environment;  // Environment=, each "KEY=value"
};

// The properties parse_unit_account reads, for `systemctl show -p`.
const char* unit_account_properties();

// Parses `KEY=value` lines. Environment= is systemd's list: words separated by spaces, a word in
// double quotes may hold spaces, and a backslash escapes the next character.
[[nodiscard]] Result<UnitAccountSpec> parse_unit_account(std::string_view text);

// The account resolved.
struct UnitAccount {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<std::string> environment;
    std::string describe() const;  // "uid 998 gid 998 (otelcol)"
    std::string name;
};

// Resolves names (or numbers, as systemd takes them) against the texts of /etc/passwd and
// /etc/group. Fails naming what is missing: "User=otelcol is not in /etc/passwd"; DynamicUser=
// has no account until the unit runs, so it is refused by name.
[[nodiscard]] Result<UnitAccount> resolve_unit_account(const UnitAccountSpec& spec,
                                                       std::string_view passwd,
                                                       std::string_view group);

}  // namespace myr::service
