#include "store/marker.hpp"

#include <json-c/json.h>

#include <memory>

#include "core/json.hpp"
#include "version/version.hpp"

namespace myr::store {
namespace {

Result<std::string> get_string(json_object* root, const char* key, bool allow_empty) {
    json_object* v = nullptr;
    if (!json_object_object_get_ex(root, key, &v)) return fail(std::string("missing ") + key);
    if (!json_object_is_type(v, json_type_string)) return fail(std::string(key) + ": not a string");
    std::string s(json_object_get_string(v), static_cast<size_t>(json_object_get_string_len(v)));
    if (s.empty() && !allow_empty) return fail(std::string(key) + ": empty");
    if (s.find('\0') != std::string::npos) return fail(std::string(key) + ": contains NUL");
    return s;
}

bool is_lower_hex64(std::string_view s) {
    if (s.size() != 64) return false;
    for (char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

bool is_single_component(std::string_view s) {
    return !s.empty() && s != "." && s != ".." && s.find('/') == std::string_view::npos &&
           s.find('\0') == std::string_view::npos;
}

}  // namespace

const char* to_string(Source s) {
    return s == Source::image ? "image" : "update";
}

Result<Marker> parse_marker(std::string_view json) {
    if (json.size() > kMaxMarkerSize)
        return fail("marker larger than " + std::to_string(kMaxMarkerSize) + " bytes");
    json::Ptr tok_root;
    {
        json_tokener* tok = json_tokener_new();
        if (!tok) return fail("out of memory");
        json_object* o = json_tokener_parse_ex(tok, json.data(), static_cast<int>(json.size()));
        json_tokener_error err = json_tokener_get_error(tok);
        size_t consumed = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        tok_root.reset(o);
        if (err != json_tokener_success || !o) return fail("not valid JSON");
        for (size_t i = consumed; i < json.size(); ++i) {
            char c = json[i];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
                return fail("trailing data after JSON");
        }
    }
    json_object* root = tok_root.get();
    if (!json_object_is_type(root, json_type_object)) return fail("not a JSON object");

    Marker m;
    auto version = get_string(root, "version", false);
    if (!version) return version.fail();
    if (!version::is_canonical(*version))
        return fail("version: not a canonical version: " + *version);
    m.version = *version;

    auto binary = get_string(root, "binary", false);
    if (!binary) return binary.fail();
    if (!is_single_component(*binary)) return fail("binary: not a file name");
    m.binary = *binary;

    auto sha = get_string(root, "sha256", false);
    if (!sha) return sha.fail();
    if (!is_lower_hex64(*sha)) return fail("sha256: not 64 lower-case hex digits");
    m.sha256 = *sha;

    json_object* size = nullptr;
    if (!json_object_object_get_ex(root, "size", &size)) return fail("missing size");
    if (!json_object_is_type(size, json_type_int)) return fail("size: not an integer");
    int64_t n = json_object_get_int64(size);
    if (n < 0) return fail("size: negative");
    m.size = static_cast<uint64_t>(n);

    auto source = get_string(root, "source", false);
    if (!source) return source.fail();
    if (*source == "image") {
        m.source = Source::image;
    } else if (*source == "update") {
        m.source = Source::update;
    } else {
        return fail("source: neither image nor update");
    }

    auto prev = get_string(root, "previousVersion", true);
    if (!prev) return prev.fail();
    if (!prev->empty() && !version::is_canonical(*prev)) {
        return fail("previousVersion: not a canonical version");
    }
    m.previous_version = *prev;

    auto at = get_string(root, "installedAt", true);
    if (!at) return at.fail();
    m.installed_at = *at;
    return m;
}

std::string render_marker(const Marker& m) {
    json::Ptr root(json_object_new_object());
    json_object_object_add(root.get(), "version", json_object_new_string(m.version.c_str()));
    json_object_object_add(root.get(), "binary", json_object_new_string(m.binary.c_str()));
    json_object_object_add(root.get(), "sha256", json_object_new_string(m.sha256.c_str()));
    json_object_object_add(root.get(), "size", json_object_new_int64(static_cast<int64_t>(m.size)));
    json_object_object_add(root.get(), "source", json_object_new_string(to_string(m.source)));
    json_object_object_add(root.get(), "previousVersion",
                           json_object_new_string(m.previous_version.c_str()));
    json_object_object_add(root.get(), "installedAt",
                           json_object_new_string(m.installed_at.c_str()));
    std::string out = json_object_to_json_string_ext(
        root.get(), JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    out += '\n';
    return out;
}

}  // namespace myr::store
