#include "journal/journal.hpp"

#include <json-c/json.h>
#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <tuple>

#include "core/fault.hpp"
#include "core/hex.hpp"
#include "core/json.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "version/version.hpp"

namespace myr::journal {
namespace {

constexpr const char* kName = statedir::entry::journal;
constexpr size_t kMaxSize = 64 * 1024;

Result<std::string> get_string(json_object* root, const char* key) {
    json_object* v = nullptr;
    if (!json_object_object_get_ex(root, key, &v)) return fail(std::string("missing ") + key);
    if (!json_object_is_type(v, json_type_string)) return fail(std::string(key) + ": not a string");
    return std::string(json_object_get_string(v),
                       static_cast<size_t>(json_object_get_string_len(v)));
}

std::string uuid_v4() {
    uint8_t b[16] = {};
    random_bytes(b, sizeof b);
    b[6] = static_cast<uint8_t>((b[6] & 0x0f) | 0x40);
    b[8] = static_cast<uint8_t>((b[8] & 0x3f) | 0x80);
    std::string s;
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
        hex::append(s, b[i]);
    }
    return s;
}

}  // namespace

const char* to_string(Op op) {
    switch (op) {
        case Op::seed:
            return "seed";
        case Op::update:
            return "update";
        case Op::rollback:
            return "rollback";
    }
    return "seed";
}

Record begin(Op op, std::string from, std::string to, std::string ph) {
    Record r;
    r.id = uuid_v4();
    r.op = op;
    r.phase = std::move(ph);
    r.from = std::move(from);
    r.to = std::move(to);
    r.started_at = format_rfc3339(wall_now(), true);
    return r;
}

Result<Record> parse(std::string_view json) {
    if (json.size() > kMaxSize) return fail("larger than 64 KiB");
    json_tokener* tok = json_tokener_new();
    if (!tok) return fail("out of memory");
    json::Ptr root(json_tokener_parse_ex(tok, json.data(), static_cast<int>(json.size())));
    json_tokener_error err = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (err != json_tokener_success || !root) return fail("not valid JSON");
    for (size_t i = end; i < json.size(); ++i) {
        if (json[i] != ' ' && json[i] != '\n' && json[i] != '\t' && json[i] != '\r') {
            return fail("trailing data after JSON");
        }
    }
    if (!json_object_is_type(root.get(), json_type_object)) return fail("not a JSON object");
    Record r;
    auto id = get_string(root.get(), "id");
    if (!id) return id.fail();
    if (id->empty()) return fail("id: empty");
    r.id = *id;
    auto op = get_string(root.get(), "op");
    if (!op) return op.fail();
    if (*op == "seed") {
        r.op = Op::seed;
    } else if (*op == "update") {
        r.op = Op::update;
    } else if (*op == "rollback") {
        r.op = Op::rollback;
    } else {
        return fail("op: unknown: " + *op);
    }
    auto ph = get_string(root.get(), "phase");
    if (!ph) return ph.fail();
    if (ph->empty()) return fail("phase: empty");
    r.phase = *ph;
    for (auto [key, field] : {std::pair{"from", &r.from}, std::pair{"to", &r.to}}) {
        auto v = get_string(root.get(), key);
        if (!v) return v.fail();
        if (!v->empty() && !version::is_canonical(*v)) {
            return fail(std::string(key) + ": not a canonical version");
        }
        *field = *v;
    }
    auto at = get_string(root.get(), "startedAt");
    if (!at) return at.fail();
    r.started_at = *at;
    json_object* attempt = nullptr;
    if (!json_object_object_get_ex(root.get(), "attempt", &attempt) ||
        !json_object_is_type(attempt, json_type_int)) {
        return fail("attempt: missing or not an integer");
    }
    int64_t a = json_object_get_int64(attempt);
    if (a < 1 || a > 1000000) return fail("attempt: out of range");
    r.attempt = static_cast<uint32_t>(a);
    // A trial's deadline and boot count: optional, absent in every other phase. Bounded like
    // `attempt`: a value this program never writes (a deadline the clock cannot hold, a count
    // whose next boot would overflow) makes the record corrupt, so nothing downstream computes
    // with it.
    for (auto [key, field, max] : {std::tuple{"trialUntil", &r.trial_until, kMaxUnixSeconds},
                                   std::tuple{"boots", &r.boots, kMaxBoots}}) {
        json_object* v = nullptr;
        if (!json_object_object_get_ex(root.get(), key, &v)) continue;
        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
            return fail(std::string(key) + ": not a non-negative integer");
        }
        if (json_object_get_int64(v) > max) {
            return fail(std::string(key) + ": out of range (at most " + std::to_string(max) + ")");
        }
        *field = json_object_get_int64(v);
    }
    return r;
}

std::string render(const Record& r) {
    json::Ptr root(json_object_new_object());
    json_object_object_add(root.get(), "id", json_object_new_string(r.id.c_str()));
    json_object_object_add(root.get(), "op", json_object_new_string(to_string(r.op)));
    json_object_object_add(root.get(), "phase", json_object_new_string(r.phase.c_str()));
    json_object_object_add(root.get(), "from", json_object_new_string(r.from.c_str()));
    json_object_object_add(root.get(), "to", json_object_new_string(r.to.c_str()));
    json_object_object_add(root.get(), "startedAt", json_object_new_string(r.started_at.c_str()));
    json_object_object_add(root.get(), "attempt", json_object_new_int64(r.attempt));
    if (r.trial_until > 0) {
        json_object_object_add(root.get(), "trialUntil", json_object_new_int64(r.trial_until));
        json_object_object_add(root.get(), "boots", json_object_new_int64(r.boots));
    }
    std::string out = json_object_to_json_string_ext(
        root.get(), JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    out += '\n';
    return out;
}

Result<Loaded> Journal::load() const {
    Loaded out;
    auto st = fsx::stat_at(dir_fd(), kName);
    if (!st) return st.fail("journal " + dir());
    if (!st->has_value()) return out;
    out.kind = Loaded::Kind::corrupt;
    auto text = fsx::read_file_at(dir_fd(), kName, kMaxSize);
    if (!text) {
        out.reason = text.error().message();
        return out;
    }
    auto rec = parse(*text);
    if (!rec) {
        out.reason = rec.error().message();
        return out;
    }
    out.kind = Loaded::Kind::ok;
    out.record = std::move(*rec);
    return out;
}

Status Journal::write(const Record& r) {
    MYR_TRY(fault::point("journal.write.before"), "journal");
    MYR_TRY(fsx::write_file_atomic(dir_fd(), kName, render(r), 0600),
            "write " + dir() + "/" + kName);
    MYR_TRY(fault::point("journal.write.after"), "journal");
    return {};
}

Status Journal::clear() {
    MYR_TRY(fault::point("journal.clear.before"), "journal");
    MYR_TRY(fsx::unlink_at(dir_fd(), kName), "remove " + dir() + "/" + kName);
    MYR_TRY(fsx::fsync_dir(dir_fd()), "remove " + dir() + "/" + kName);
    MYR_TRY(fault::point("journal.clear.after"), "journal");
    return {};
}

Result<std::string> Journal::move_aside() {
    // Basic-format time stamp: no ':' in a file name.
    std::string ts = format_rfc3339(wall_now(), true);
    std::string compact;
    for (char c : ts) {
        if (c != ':' && c != '-') compact += c;
    }
    std::string aside = std::string(kName) + ".corrupt-" + compact;
    MYR_TRY(fault::point("journal.aside.before"), "journal");
    MYR_TRY(fsx::rename_at(dir_fd(), kName, dir_fd(), aside, true),
            "move " + dir() + "/" + kName + " aside");
    MYR_TRY(fsx::fsync_dir(dir_fd()), "move journal aside");
    MYR_TRY(fault::point("journal.aside.after"), "journal");
    return aside;
}

}  // namespace myr::journal
