// The two renderings of a StatusView: text for a terminal and the JSON of docs/status.schema.json.
// Every string that comes from a file on the volume or in the state directory may be hostile: it
// is made valid UTF-8 (JSON), and for a terminal its control characters are written out
// (text::escape_controls), so no escape sequence or carriage return reaches the terminal.
#include <json-c/json.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "core/hex.hpp"
#include "core/json.hpp"
#include "core/text.hpp"
#include "update/state_files.hpp"
#include "update/status_view.hpp"

namespace myr::update {
namespace {

constexpr size_t kWidth = 100;
constexpr size_t kLabel = 14;  // the label column of the text form

std::string clean(const std::string& s) {
    return text::escape_controls(s);
}

std::string iso(int64_t unix_s) {
    return format_rfc3339(from_unix_seconds(unix_s));
}

// "3d4h", "12m5s": the largest two units.
std::string span(int64_t s) {
    const char* sign = s < 0 ? "-" : "";
    s = s < 0 ? -s : s;
    const int64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    if (d > 0) return sign + std::to_string(d) + "d" + std::to_string(h) + "h";
    if (h > 0) return sign + std::to_string(h) + "h" + std::to_string(m) + "m";
    if (m > 0) return sign + std::to_string(m) + "m" + std::to_string(sec) + "s";
    return sign + std::to_string(sec) + "s";
}

std::string size_text(uint64_t b) {
    char buf[32];
    if (b >= (1ULL << 20)) {
        std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
    } else if (b >= 1024) {
        std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
    } else {
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
    }
    return buf;
}

// `label` in its column, then `body` wrapped at word boundaries to kWidth columns, continuation
// lines indented under the body (a word longer than a line is cut).
void line(std::string& out, const std::string& label, const std::string& body) {
    std::string head = label;
    head.resize(std::max(kLabel, label.size() + 1), ' ');
    std::string rest = clean(body);
    const size_t room = kWidth - kLabel;
    bool first = true;
    do {
        std::string piece;
        if (rest.size() <= room) {
            piece = rest;
            rest.clear();
        } else {
            size_t cut = rest.rfind(' ', room);
            if (cut == std::string::npos || cut == 0) cut = room;
            piece = rest.substr(0, cut);
            rest = text::trim(rest.substr(cut));
        }
        out += (first ? head : std::string(kLabel, ' ')) + piece + "\n";
        first = false;
    } while (!rest.empty());
}

void text_versions(std::string& out, const StatusView& v) {
    if (v.versions.empty())
        line(out, "versions", "none (the updater seeds one at its first start)");
    for (const VersionFacts& f : v.versions) {
        const bool cur = f.name == v.current;
        std::string body = (cur ? "* " : "  ") + f.name + "  ";
        if (f.marker) {
            const store::Marker& m = *f.marker;
            body += size_text(m.size) + ", " + store::to_string(m.source) + ", installed " +
                    m.installed_at +
                    (m.previous_version.empty() ? "" : ", previous " + m.previous_version);
        } else {
            body += "NOT INTACT: " + f.problem;
        }
        line(out, f.name == v.versions.front().name ? "versions" : "", body);
    }
}

void text_volume(std::string& out, const StatusView& v) {
    line(out, "volume", v.in.install_dir + " (binary " + v.in.binary + ")");
    if (!v.volume_problem.empty()) {
        line(out, "", "unreadable: " + v.volume_problem);
        return;
    }
    switch (v.current_state) {
        case store::Active::State::none:
            line(out, "current", "none");
            break;
        case store::Active::State::intact:
            line(out, "current", v.current);
            break;
        case store::Active::State::broken:
            line(out, "current", "BROKEN: " + v.current_problem);
            break;
    }
    line(out, "previous", v.previous.empty() ? "none" : v.previous);
    text_versions(out, v);
}

void text_trial(std::string& out, const StatusView& v) {
    if (!v.on_trial()) return;
    const journal::Record& r = v.journal.record;
    const int64_t left = r.trial_until - unix_seconds(v.in.now);
    std::string restarts;
    if (v.last_attempt && v.last_attempt->version == r.to) {
        restarts = ", restarts before it " + std::to_string(v.last_attempt->restarts);
    }
    line(out, "trial",
         r.to + " (from " + r.from + ") until " + iso(r.trial_until) +
             (left > 0 ? " (" + span(left) + " left)" : " (over: ends at the next start)") +
             ", boots " + std::to_string(r.boots) + " of " + std::to_string(v.in.trial_max_boots) +
             restarts);
}

void text_state(std::string& out, const StatusView& v) {
    line(out, "state dir", v.in.state_dir);
    if (!v.state_problem.empty()) {
        line(out, "", "unreadable: " + v.state_problem);
        return;
    }
    text_trial(out, v);
    if (v.journal.kind == journal::Loaded::Kind::ok && !v.on_trial()) {
        const journal::Record& r = v.journal.record;
        line(out, "in flight",
             std::string(journal::to_string(r.op)) + " " + (r.from.empty() ? "none" : r.from) +
                 " -> " + r.to + ", phase " + r.phase + ", since " + r.started_at);
    } else if (v.journal.kind == journal::Loaded::Kind::corrupt) {
        line(out, "in flight", "journal unreadable: " + v.journal.reason);
    }
    if (v.last_attempt) {
        const Attempt& a = *v.last_attempt;
        std::string body = a.version + " " + to_string(a.outcome) + " at " + a.at;
        const bool failure = a.outcome == Outcome::failed || a.outcome == Outcome::rolled_back;
        if (failure && a.cls != FailureClass::deterministic) {
            body += std::string(" (") + to_string(a.cls) + ")";
        }
        if (!a.reason.empty()) body += ": " + a.reason;
        if (!a.lifted.empty()) body += " (quarantine lifted " + a.lifted + ")";
        line(out, "last attempt", body);
    } else {
        line(out, "last attempt", "none");
    }
    if (v.last_offer) {
        // What the server was told when the last offer ended, one package a line.
        bool first = true;
        for (const PackageReport& p : v.last_offer->statuses) {
            line(out, first ? "last offer" : "",
                 p.name + " " + (p.offered_version.empty() ? "?" : p.offered_version) + ": " +
                     to_string(p.code) + (p.error.empty() ? "" : ": " + p.error));
            first = false;
        }
    }
    if (v.quarantined()) {
        const Attempt& a = *v.last_attempt;
        auto end = quarantine_end(a, v.in.quarantine_for);
        line(out, "quarantined",
             "package " + a.package_hash_hex + " (" + a.version + ") " +
                 (end ? "until " + format_rfc3339(*end) : "until the offer changes") +
                 ", or myriarch-updater forget");
    }
    for (const SpoolFile& f : v.spool) {
        line(out, f.name == v.spool.front().name ? "downloads" : "",
             f.name + " " + size_text(f.bytes));
    }
}

void text_trusted_root(std::string& out, const StatusView& v) {
    if (v.trusted_root_start) {
        const int64_t age = unix_seconds(v.in.now) - *v.trusted_root_start;
        line(out, "trusted root",
             v.trusted_root_file + ": age " + span(age) + " (newest key valid from " +
                 iso(*v.trusted_root_start) + ")");
    } else {
        line(out, "trusted root", v.trusted_root_file + ": unusable: " + v.trusted_root_problem);
    }
}

}  // namespace

std::string render_status_text(const StatusView& v) {
    std::string out;
    text_volume(out, v);
    text_state(out, v);
    text_trusted_root(out, v);
    for (const std::string& p : v.problems) line(out, "PROBLEM", p);
    return out;
}

namespace {

void put(json_object* o, const char* key, const std::string& s) {
    const std::string u = text::valid_utf8(s);
    json_object_object_add(o, key,
                           json_object_new_string_len(u.data(), static_cast<int>(u.size())));
}
void put_int(json_object* o, const char* key, int64_t n) {
    json_object_object_add(o, key, json_object_new_int64(n));
}
void put_null(json_object* o, const char* key) {
    json_object_object_add(o, key, nullptr);
}
// A string, or null when empty.
void put_opt(json_object* o, const char* key, const std::string& s) {
    if (s.empty()) {
        put_null(o, key);
    } else {
        put(o, key, s);
    }
}

json_object* json_version(const VersionFacts& f, const std::string& current) {
    json_object* o = json_object_new_object();
    put(o, "version", f.name);
    json_object_object_add(o, "current", json_object_new_boolean(f.name == current));
    json_object_object_add(o, "intact", json_object_new_boolean(f.marker.has_value()));
    if (f.marker) {
        const store::Marker& m = *f.marker;
        put_int(o, "binarySize", static_cast<int64_t>(m.size));
        put(o, "sha256", m.sha256);
        put(o, "source", store::to_string(m.source));
        put_opt(o, "previousVersion", m.previous_version);
        put(o, "installedAt", m.installed_at);
    } else {
        put(o, "problem", f.problem);
    }
    return o;
}

json_object* json_volume(const StatusView& v) {
    json_object* o = json_object_new_object();
    put(o, "installDir", v.in.install_dir);
    put(o, "binary", v.in.binary);
    put_opt(o, "problem", v.volume_problem);
    json_object* cur = json_object_new_object();
    put(cur, "state", store::to_string(v.current_state));
    put_opt(cur, "version", v.current);
    put_opt(cur, "problem", v.current_problem);
    json_object_object_add(o, "current", cur);
    put_opt(o, "previous", v.previous);
    json_object* list = json_object_new_array();
    for (const VersionFacts& f : v.versions)
        json_object_array_add(list, json_version(f, v.current));
    json_object_object_add(o, "versions", list);
    return o;
}

json_object* json_journal(const StatusView& v) {
    if (v.journal.kind == journal::Loaded::Kind::absent) return nullptr;
    json_object* o = json_object_new_object();
    if (v.journal.kind == journal::Loaded::Kind::corrupt) {
        put(o, "state", "corrupt");
        put(o, "problem", v.journal.reason);
        return o;
    }
    const journal::Record& r = v.journal.record;
    put(o, "state", "ok");
    put(o, "op", journal::to_string(r.op));
    put(o, "phase", r.phase);
    put_opt(o, "from", r.from);
    put(o, "to", r.to);
    put(o, "startedAt", r.started_at);
    put_int(o, "attempt", r.attempt);
    return o;
}

json_object* json_trial(const StatusView& v) {
    if (!v.on_trial()) return nullptr;
    const journal::Record& r = v.journal.record;
    json_object* o = json_object_new_object();
    put(o, "version", r.to);
    put_opt(o, "from", r.from);
    put(o, "until", iso(r.trial_until));
    put_int(o, "secondsLeft", std::max<int64_t>(0, r.trial_until - unix_seconds(v.in.now)));
    put_int(o, "boots", r.boots);
    put_int(o, "maxBoots", v.in.trial_max_boots);
    const bool same = v.last_attempt && v.last_attempt->version == r.to;
    put_int(o, "restarts", same ? v.last_attempt->restarts : 0);
    return o;
}

json_object* json_attempt(const StatusView& v) {
    if (!v.last_attempt) return nullptr;
    const Attempt& a = *v.last_attempt;
    json_object* o = json_object_new_object();
    put(o, "version", a.version);
    put_opt(o, "packageHash", a.package_hash_hex);
    put(o, "outcome", to_string(a.outcome));
    put_opt(o, "reason", a.reason);
    put(o, "at", a.at);
    if (a.outcome == Outcome::failed || a.outcome == Outcome::rolled_back) {
        put(o, "class", to_string(a.cls));
    } else {
        put_null(o, "class");
    }
    put_opt(o, "lifted", a.lifted);
    put_int(o, "restarts", a.restarts);
    return o;
}

json_object* json_quarantine(const StatusView& v) {
    if (!v.quarantined()) return nullptr;
    const Attempt& a = *v.last_attempt;
    json_object* o = json_object_new_object();
    put(o, "packageHash", a.package_hash_hex);
    put(o, "version", a.version);
    put(o, "reason", a.reason);
    put(o, "since", a.at);
    auto end = quarantine_end(a, v.in.quarantine_for);
    put_opt(o, "until", end ? format_rfc3339(*end) : "");
    return o;
}

json_object* json_last_offer(const StatusView& v) {
    if (!v.last_offer) return nullptr;
    const Installed& in = *v.last_offer;
    json_object* o = json_object_new_object();
    put_opt(o, "installedName", in.name);
    put_opt(o, "installedVersion", in.version);
    put_opt(o, "installedPackageHash", hex::encode(in.package_hash));
    json_object* list = json_object_new_array();
    for (const PackageReport& p : in.statuses) {
        json_object* s = json_object_new_object();
        put(s, "name", p.name);
        put(s, "status", to_string(p.code));
        put_opt(s, "offeredVersion", p.offered_version);
        put_opt(s, "agentHasVersion", p.agent_has_version);
        put_opt(s, "error", p.error);
        json_object_array_add(list, s);
    }
    json_object_object_add(o, "statuses", list);
    return o;
}

json_object* json_state(const StatusView& v) {
    json_object* o = json_object_new_object();
    put(o, "stateDir", v.in.state_dir);
    put_opt(o, "problem", v.state_problem);
    json_object_object_add(o, "journal", json_journal(v));
    json_object_object_add(o, "trial", json_trial(v));
    json_object_object_add(o, "lastAttempt", json_attempt(v));
    json_object_object_add(o, "quarantine", json_quarantine(v));
    json_object_object_add(o, "lastOffer", json_last_offer(v));
    json_object* spool = json_object_new_array();
    for (const SpoolFile& f : v.spool) {
        json_object* s = json_object_new_object();
        put(s, "file", f.name);
        put_int(s, "bytes", static_cast<int64_t>(f.bytes));
        json_object_array_add(spool, s);
    }
    json_object_object_add(o, "downloads", spool);
    return o;
}

json_object* json_trusted_root(const StatusView& v) {
    json_object* o = json_object_new_object();
    put(o, "file", v.trusted_root_file);
    if (v.trusted_root_start) {
        put(o, "newestStart", iso(*v.trusted_root_start));
        put_int(o, "ageSeconds", unix_seconds(v.in.now) - *v.trusted_root_start);
        put_null(o, "problem");
    } else {
        put_null(o, "newestStart");
        put_null(o, "ageSeconds");
        put(o, "problem", v.trusted_root_problem);
    }
    return o;
}

}  // namespace

std::string render_status_json(const StatusView& v) {
    json::Ptr root(json_object_new_object());
    put_int(root.get(), "schemaVersion", 1);
    put(root.get(), "now", format_rfc3339(v.in.now));
    json_object_object_add(root.get(), "volume", json_volume(v));
    json_object_object_add(root.get(), "state", json_state(v));
    json_object_object_add(root.get(), "trustedRoot", json_trusted_root(v));
    json_object* problems = json_object_new_array();
    for (const std::string& p : v.problems) {
        const std::string u = text::valid_utf8(p);
        json_object_array_add(problems,
                              json_object_new_string_len(u.data(), static_cast<int>(u.size())));
    }
    json_object_object_add(root.get(), "problems", problems);
    std::string out = json_object_to_json_string_ext(
        root.get(), JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    out += '\n';
    return out;
}

}  // namespace myr::update
