#include "update/state_files.hpp"

#include <json-c/json.h>

#include "core/hex.hpp"
#include "core/json.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"

namespace myr::update {
namespace {

constexpr size_t kMaxStateFile = 64 * 1024;
// The most restarts last-attempt.json may count: far above update.trialMaxBoots' maximum.
constexpr int64_t kMaxAttemptRestarts = 1000000;

Result<json::Ptr> parse_object(std::string_view text) {
    json_tokener* tok = json_tokener_new();
    if (!tok) return fail("out of memory");
    json::Ptr root(json_tokener_parse_ex(tok, text.data(), static_cast<int>(text.size())));
    json_tokener_error err = json_tokener_get_error(tok);
    json_tokener_free(tok);
    if (err != json_tokener_success || !root) return fail(Errc::invalid, "not valid JSON");
    if (!json_object_is_type(root.get(), json_type_object)) {
        return fail(Errc::invalid, "not a JSON object");
    }
    return root;
}

Result<std::string> string_field(json_object* o, const char* key) {
    json_object* v = nullptr;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string)) {
        return fail(Errc::invalid, std::string(key) + ": missing or not a string");
    }
    return std::string(json_object_get_string(v),
                       static_cast<size_t>(json_object_get_string_len(v)));
}

Result<std::string> hex_field(json_object* o, const char* key) {
    auto s = string_field(o, key);
    if (!s) return s.fail();
    std::string bytes(s->size() / 2, '\0');
    if (s->size() % 2 != 0 ||
        !hex::decode(*s, reinterpret_cast<uint8_t*>(bytes.data()), bytes.size())) {
        return fail(Errc::invalid, std::string(key) + ": not hex");
    }
    return bytes;
}

void put(json_object* o, const char* key, const std::string& v) {
    json_object_object_add(o, key,
                           json_object_new_string_len(v.data(), static_cast<int>(v.size())));
}

std::string to_text(const json::Ptr& root) {
    std::string out = json_object_to_json_string_ext(
        root.get(), JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    out += '\n';
    return out;
}

template <class T>
Result<std::optional<T>> load(const statedir::StateDir& dir, const char* name,
                              Result<T> (*parse)(std::string_view)) {
    auto st = fsx::stat_at(dir.fd(), name);
    if (!st) return st.fail(name);
    if (!st->has_value()) return std::optional<T>();
    auto text = fsx::read_file_at(dir.fd(), name, kMaxStateFile);
    if (!text) return text.fail(dir.path_of(name));
    auto v = parse(*text);
    if (!v) return v.fail(dir.path_of(name));
    return std::optional<T>(std::move(v.value()));
}

// clang-format off
constexpr std::pair<Outcome, const char*> kOutcomes[] = {
    {Outcome::installed,   "installed"},
    {Outcome::failed,      "failed"},
    {Outcome::rolled_back, "rolled-back"},
    {Outcome::interrupted, "interrupted"},
    {Outcome::in_progress, "in-progress"},
};
// clang-format on

Status store(const statedir::StateDir& dir, const char* name, const std::string& text) {
    MYR_TRY(fsx::write_file_atomic(dir.fd(), name, text, 0600), "write " + dir.path_of(name));
    return {};
}

}  // namespace

const char* to_string(Outcome o) {
    for (const auto& [outcome, text] : kOutcomes) {
        if (outcome == o) return text;
    }
    return "?";
}

Result<Outcome> parse_outcome(std::string_view text) {
    for (const auto& [outcome, word] : kOutcomes) {
        if (text == word) return outcome;
    }
    return fail(Errc::invalid, "outcome: unknown: " + std::string(text));
}

Result<FailureClass> parse_class(std::string_view text) {
    for (FailureClass c :
         {FailureClass::deterministic, FailureClass::transient, FailureClass::refused}) {
        if (text == to_string(c)) return c;
    }
    return fail(Errc::invalid, "class: not \"deterministic\", \"transient\" or \"refused\"");
}

std::string render_attempt(const Attempt& a) {
    json::Ptr root(json_object_new_object());
    put(root.get(), "packageHash", a.package_hash_hex);
    put(root.get(), "version", a.version);
    put(root.get(), "outcome", to_string(a.outcome));
    put(root.get(), "reason", a.reason);
    put(root.get(), "at", a.at);
    if (a.outcome == Outcome::failed || a.outcome == Outcome::rolled_back) {
        put(root.get(), "class", to_string(a.cls));
    }
    if (!a.trust.empty()) put(root.get(), "trust", a.trust);
    if (!a.lifted.empty()) put(root.get(), "lifted", a.lifted);
    if (a.restarts > 0)
        json_object_object_add(root.get(), "restarts", json_object_new_int64(a.restarts));
    return to_text(root);
}

Result<Attempt> parse_attempt(std::string_view text) {
    auto root = parse_object(text);
    if (!root) return root.fail();
    Attempt a;
    for (auto [key, field] :
         {std::pair{"packageHash", &a.package_hash_hex}, std::pair{"version", &a.version},
          std::pair{"reason", &a.reason}, std::pair{"at", &a.at}}) {
        auto v = string_field(root->get(), key);
        if (!v) return v.fail();
        *field = std::move(v.value());
    }
    auto outcome = string_field(root->get(), "outcome");
    if (!outcome) return outcome.fail();
    auto parsed = parse_outcome(*outcome);
    if (!parsed) return parsed.fail();
    a.outcome = *parsed;
    // Written since issue 23; older files name no class (deterministic) and nothing lifted.
    json_object* v = nullptr;
    if (json_object_object_get_ex(root->get(), "class", &v)) {
        auto cls = string_field(root->get(), "class");
        if (!cls) return cls.fail();
        auto parsed_cls = parse_class(*cls);
        if (!parsed_cls) return parsed_cls.fail();
        a.cls = *parsed_cls;
    }
    if (json_object_object_get_ex(root->get(), "trust", &v)) {
        auto trust = string_field(root->get(), "trust");
        if (!trust) return trust.fail();
        a.trust = std::move(trust.value());
    }
    if (json_object_object_get_ex(root->get(), "lifted", &v)) {
        auto lifted = string_field(root->get(), "lifted");
        if (!lifted) return lifted.fail();
        a.lifted = std::move(lifted.value());
    }
    if (json_object_object_get_ex(root->get(), "restarts", &v)) {
        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
            return fail(Errc::invalid, "restarts: not a count");
        }
        // The count recovery carries forward and adds to: a value this program never writes
        // (it stops counting at update.trialMaxBoots) is refused rather than overflowed.
        if (json_object_get_int64(v) > kMaxAttemptRestarts) {
            return fail(Errc::invalid, "restarts: out of range (at most " +
                                           std::to_string(kMaxAttemptRestarts) + ")");
        }
        a.restarts = json_object_get_int64(v);
    }
    return a;
}

Result<std::optional<Attempt>> load_attempt(const statedir::StateDir& dir) {
    return load<Attempt>(dir, statedir::entry::last_attempt, &parse_attempt);
}

Status store_attempt(const statedir::StateDir& dir, const Attempt& a) {
    return store(dir, statedir::entry::last_attempt, render_attempt(a));
}

std::string render_installed(const Installed& in) {
    json::Ptr root(json_object_new_object());
    put(root.get(), "allPackagesHash", hex::encode(in.all_packages_hash));
    put(root.get(), "name", in.name);
    put(root.get(), "version", in.version);
    put(root.get(), "packageHash", hex::encode(in.package_hash));
    json_object* list = json_object_new_array();
    for (const PackageReport& p : in.statuses) {
        json_object* o = json_object_new_object();
        put(o, "name", p.name);
        put(o, "status", to_string(p.code));
        put(o, "agentHasVersion", p.agent_has_version);
        put(o, "agentHasHash", hex::encode(p.agent_has_hash));
        put(o, "offeredVersion", p.offered_version);
        put(o, "offeredHash", hex::encode(p.offered_hash));
        put(o, "error", p.error);
        json_object_array_add(list, o);
    }
    json_object_object_add(root.get(), "statuses", list);
    json_object_object_add(root.get(), "topIndex",
                           json_object_new_int64(static_cast<int64_t>(in.top_index)));
    return to_text(root);
}

namespace {

// A status as render_installed wrote it. Only end states are stored: an offer still running at a
// crash is the journal's and last-attempt.json's business.
Result<PackageReport> parse_status(json_object* o) {
    if (!json_object_is_type(o, json_type_object)) return fail(Errc::invalid, "not an object");
    PackageReport p;
    for (auto [key, field] :
         {std::pair{"name", &p.name}, std::pair{"agentHasVersion", &p.agent_has_version},
          std::pair{"offeredVersion", &p.offered_version}, std::pair{"error", &p.error}}) {
        auto v = string_field(o, key);
        if (!v) return v.fail();
        *field = std::move(v.value());
    }
    for (auto [key, field] : {std::pair{"agentHasHash", &p.agent_has_hash},
                              std::pair{"offeredHash", &p.offered_hash}}) {
        auto v = hex_field(o, key);
        if (!v) return v.fail();
        *field = std::move(v.value());
    }
    auto code = string_field(o, "status");
    if (!code) return code.fail();
    if (*code == to_string(Code::installed)) {
        p.code = Code::installed;
    } else if (*code == to_string(Code::install_failed)) {
        p.code = Code::install_failed;
    } else {
        return fail(Errc::invalid, "status: not an end state: " + *code);
    }
    return p;
}

}  // namespace

Result<Installed> parse_installed(std::string_view text) {
    auto root = parse_object(text);
    if (!root) return root.fail();
    Installed in;
    auto all = hex_field(root->get(), "allPackagesHash");
    if (!all) return all.fail();
    in.all_packages_hash = *all;
    auto name = string_field(root->get(), "name");
    if (!name) return name.fail();
    in.name = *name;
    auto version = string_field(root->get(), "version");
    if (!version) return version.fail();
    in.version = *version;
    auto hash = hex_field(root->get(), "packageHash");
    if (!hash) return hash.fail();
    in.package_hash = *hash;
    // Written before the statuses were stored: the package stays known, there is nothing to
    // report again.
    json_object* list = nullptr;
    if (!json_object_object_get_ex(root->get(), "statuses", &list)) return in;
    if (!json_object_is_type(list, json_type_array)) {
        return fail(Errc::invalid, "statuses: not a list");
    }
    for (size_t i = 0; i < json_object_array_length(list); ++i) {
        auto p = parse_status(json_object_array_get_idx(list, i));
        if (!p) return p.fail("statuses[" + std::to_string(i) + "]");
        in.statuses.push_back(std::move(p.value()));
    }
    if (in.statuses.empty()) return in;
    json_object* top = nullptr;
    if (!json_object_object_get_ex(root->get(), "topIndex", &top) ||
        !json_object_is_type(top, json_type_int) || json_object_get_int64(top) < 0 ||
        static_cast<size_t>(json_object_get_int64(top)) >= in.statuses.size()) {
        return fail(Errc::invalid, "topIndex: missing or not an index of statuses");
    }
    in.top_index = static_cast<size_t>(json_object_get_int64(top));
    return in;
}

Result<std::optional<Installed>> load_installed(const statedir::StateDir& dir) {
    return load<Installed>(dir, statedir::entry::packages, &parse_installed);
}

Status store_installed(const statedir::StateDir& dir, const Installed& in) {
    return store(dir, statedir::entry::packages, render_installed(in));
}

bool quarantines(const Attempt& a) {
    return (a.outcome == Outcome::failed || a.outcome == Outcome::rolled_back) &&
           a.cls == FailureClass::deterministic && a.lifted.empty() && !a.package_hash_hex.empty();
}

std::optional<WallTime> quarantine_end(const Attempt& a, Duration quarantine_for) {
    if (quarantine_for <= Duration::zero()) return std::nullopt;
    auto at = parse_rfc3339(a.at);
    if (!at) return std::nullopt;
    // Saturating: a quarantine too long for the clock lasts to its end, never into the past.
    return saturating_add(*at, quarantine_for);
}

Result<std::optional<Attempt>> lift_quarantine(const statedir::StateDir& dir,
                                               const std::string& package_hash_hex,
                                               const std::string& now) {
    auto last = load_attempt(dir);
    if (!last) return last.fail("read the last attempt");
    if (!last->has_value() || !quarantines(**last) ||
        (!package_hash_hex.empty() && (*last)->package_hash_hex != package_hash_hex)) {
        return std::optional<Attempt>();
    }
    Attempt a = **last;
    a.lifted = now;
    MYR_TRY(store_attempt(dir, a), "lift the quarantine");
    return std::optional<Attempt>(a);
}

// The journal phases in which the offered version was running (started, being checked) but not yet
// on trial: a container that dies there may have been killed by that version.
bool ran_new_version(std::string_view phase) {
    return phase == "starting" || phase == "health-checking";
}

bool swapped_in(std::string_view phase) {
    return ran_new_version(phase) || phase == "rolling-back";
}

namespace {

// An interruption while the new version ran counts one restart against the package (carried by its
// in-progress record from the interrupted installs before). At `max_restarts` the interruptions
// are no longer innocent: the version is recorded rolled back, deterministically (quarantined),
// as the trial's boot limit does once the trial has begun.
void count_restart(Attempt& a, const std::string& phase, int64_t carried, int64_t max_restarts) {
    a.restarts = carried + (ran_new_version(phase) ? 1 : 0);
    if (!ran_new_version(phase) || a.restarts < max_restarts) return;
    a.outcome = Outcome::rolled_back;
    a.cls = FailureClass::deterministic;
    a.reason = "rolled back: the updater restarted " + std::to_string(a.restarts) +
               " times while " + a.version + " was started or checked (update.trialMaxBoots " +
               std::to_string(max_restarts) + "); " + a.reason;
}

}  // namespace

Result<std::optional<Attempt>> record_recovery(const statedir::StateDir& dir,
                                               const journal::Recovery& r, const std::string& now,
                                               int64_t max_restarts) {
    if ((!r.update_interrupted && !r.trial_rolled_back) || !r.record) {
        return std::optional<Attempt>();
    }
    Attempt a;
    a.version = r.record->to;
    a.outcome = r.trial_rolled_back ? Outcome::rolled_back : Outcome::interrupted;
    a.reason = r.trial_rolled_back
                   ? r.trial_reason + "; recovery: " + r.action
                   : "interrupted while " + r.record->phase + "; recovery: " + r.action;
    a.at = now;
    // The in-progress record (for a trial, the installed one written at its start, or the
    // in-progress one when a crash came between the trial's journal and that write) names the
    // offer; an unreadable one costs only the quarantine rule for this offer.
    auto names_offer = [&r](Outcome o) {
        return o == Outcome::in_progress || (r.trial_rolled_back && o == Outcome::installed);
    };
    if (auto prev = load_attempt(dir); prev && prev->has_value() && names_offer((*prev)->outcome) &&
                                       (*prev)->version == a.version) {
        a.package_hash_hex = (*prev)->package_hash_hex;
        if (r.update_interrupted) {
            count_restart(a, r.record->phase, (*prev)->restarts, max_restarts);
        }
    }
    MYR_TRY(store_attempt(dir, a), "record the interrupted update");
    return std::optional<Attempt>(a);
}

}  // namespace myr::update
