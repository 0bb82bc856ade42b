#include "service/unit_account.hpp"

#include <charconv>
#include <optional>

#include "service/systemd_unit.hpp"

namespace myr::service {

namespace {

std::vector<std::string_view> lines_of(std::string_view text) {
    std::vector<std::string_view> out;
    while (!text.empty()) {
        auto nl = text.find('\n');
        out.push_back(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    }
    return out;
}

std::vector<std::string_view> fields_of(std::string_view line) {
    std::vector<std::string_view> out;
    while (true) {
        auto c = line.find(':');
        out.push_back(line.substr(0, c));
        if (c == std::string_view::npos) return out;
        line = line.substr(c + 1);
    }
}

std::optional<uint32_t> number(std::string_view s) {
    uint32_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
}

// The line of a passwd or group file whose name (or, for a number, id) is `key`: its fields.
std::optional<std::vector<std::string_view>> find_entry(std::string_view file, std::string_view key,
                                                        size_t min_fields) {
    auto id = number(key);
    for (std::string_view line : lines_of(file)) {
        if (line.empty() || line[0] == '#') continue;
        auto f = fields_of(line);
        if (f.size() < min_fields) continue;
        if (f[0] == key || (id && number(f[2]) == id)) return f;
    }
    return std::nullopt;
}

// systemd's Environment= list as `systemctl show` prints it.
std::vector<std::string> split_words(std::string_view s) {
    std::vector<std::string> out;
    std::string word;
    bool in_word = false, quoted = false;
    for (size_t i = 0; i < s.size(); i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < s.size()) {
            word += s[++i];
            in_word = true;
        } else if (c == '"') {
            quoted = !quoted;
            in_word = true;
        } else if (c == ' ' && !quoted) {
            if (in_word) out.push_back(std::move(word));
            word.clear();
            in_word = false;
        } else {
            word += c;
            in_word = true;
        }
    }
    if (in_word) out.push_back(std::move(word));
    return out;
}

}  // namespace

const char* unit_account_properties() {
    return "User,Group,DynamicUser,Environment";
}

Result<UnitAccountSpec> parse_unit_account(std::string_view text) {
    UnitAccountSpec spec;
    bool seen = false;
    for_each_property(text, [&](std::string_view key, std::string_view value) {
        if (key == "User") spec.user = value, seen = true;
        if (key == "Group") spec.group = value;
        if (key == "DynamicUser") spec.dynamic_user = value == "yes";
        if (key == "Environment") spec.environment = split_words(value);
    });
    if (!seen) return fail(Errc::invalid, "systemctl show: no User= in its answer");
    for (const std::string& e : spec.environment) {
        if (e.find('=') == std::string::npos || e.front() == '=') {
            return fail(Errc::invalid,
                        "systemctl show: Environment= entry \"" + e + "\" is not KEY=value");
        }
    }
    return spec;
}

Result<UnitAccount> resolve_unit_account(const UnitAccountSpec& spec, std::string_view passwd,
                                         std::string_view group) {
    if (spec.dynamic_user) {
        return fail(Errc::invalid,
                    "the unit has DynamicUser=yes: its account exists only while it runs, so the "
                    "preflight cannot run as it; give the unit a fixed User=");
    }
    UnitAccount a;
    a.environment = spec.environment;
    a.name = spec.user.empty() ? "root" : spec.user;
    if (!spec.user.empty()) {
        auto u = find_entry(passwd, spec.user, 4);
        if (!u) return fail(Errc::invalid, "User=" + spec.user + " is not in /etc/passwd");
        auto uid = number((*u)[2]), gid = number((*u)[3]);
        if (!uid || !gid) {
            return fail(Errc::invalid, "User=" + spec.user + ": its /etc/passwd line has no ids");
        }
        a.uid = *uid;
        a.gid = *gid;
    }
    if (!spec.group.empty()) {
        auto g = find_entry(group, spec.group, 3);
        if (!g) return fail(Errc::invalid, "Group=" + spec.group + " is not in /etc/group");
        auto gid = number((*g)[2]);
        if (!gid) {
            return fail(Errc::invalid, "Group=" + spec.group + ": its /etc/group line has no id");
        }
        a.gid = *gid;
    }
    return a;
}

std::string UnitAccount::describe() const {
    return "uid " + std::to_string(uid) + " gid " + std::to_string(gid) + " (" + name + ")";
}

}  // namespace myr::service
