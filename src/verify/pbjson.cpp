#include "verify/pbjson.hpp"

#include <mbedtls/base64.h>

#include <cctype>
#include <limits>

namespace myr::verify {

Result<json::Ptr> parse_json(std::string_view text, size_t max_bytes, int max_depth) {
    if (text.size() > max_bytes) {
        return fail("document is " + std::to_string(text.size()) +
                    " bytes, more than the limit of " + std::to_string(max_bytes));
    }
    if (text.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
        return fail("document too large");
    }
    std::unique_ptr<json_tokener, void (*)(json_tokener*)> tok(json_tokener_new_ex(max_depth),
                                                               json_tokener_free);
    if (!tok) return fail("out of memory");
    json_tokener_set_flags(tok.get(), JSON_TOKENER_STRICT);
    json::Ptr doc(json_tokener_parse_ex(tok.get(), text.data(), static_cast<int>(text.size())));
    json_tokener_error err = json_tokener_get_error(tok.get());
    if (err == json_tokener_continue) return fail("malformed JSON: unexpected end of document");
    if (err != json_tokener_success) {
        return fail(std::string("malformed JSON: ") + json_tokener_error_desc(err));
    }
    size_t end = json_tokener_get_parse_end(tok.get());
    for (size_t i = end; i < text.size(); ++i) {
        if (!std::isspace(static_cast<unsigned char>(text[i]))) {
            return fail("malformed JSON: trailing data after the document");
        }
    }
    if (!doc || !json_object_is_type(doc.get(), json_type_object)) {
        return fail("malformed JSON: the document is not an object");
    }
    return doc;
}

json_object* member(json_object* obj, const char* key) {
    json_object* v = nullptr;
    if (!obj || !json_object_is_type(obj, json_type_object)) return nullptr;
    if (!json_object_object_get_ex(obj, key, &v)) return nullptr;
    return v;  // JSON null comes back as nullptr
}

Result<json_object*> object_member(json_object* obj, const char* key, const std::string& path) {
    json_object* v = member(obj, key);
    if (!v) return fail(path + ": missing");
    if (!json_object_is_type(v, json_type_object)) return fail(path + ": not an object");
    return v;
}

Result<std::string> string_member(json_object* obj, const char* key, const std::string& path,
                                  bool required) {
    json_object* v = member(obj, key);
    if (!v) {
        if (required) return fail(path + ": missing");
        return std::string();
    }
    if (!json_object_is_type(v, json_type_string)) return fail(path + ": not a string");
    return std::string(json_object_get_string(v),
                       static_cast<size_t>(json_object_get_string_len(v)));
}

Result<int64_t> parse_decimal_count(std::string_view s) {
    if (s.empty()) return fail("empty number");
    if (s[0] == '-') return fail("negative value " + std::string(s));
    if (s.size() > 1 && s[0] == '0') return fail("leading zero in " + std::string(s));
    int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return fail("not a decimal integer");
        int d = c - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) return fail("integer overflow");
        v = v * 10 + d;
    }
    return v;
}

Result<int64_t> count_member(json_object* obj, const char* key, const std::string& path) {
    json_object* v = member(obj, key);
    if (!v) return int64_t{0};
    if (json_object_is_type(v, json_type_string)) {
        auto n = parse_decimal_count(
            std::string_view(json_object_get_string(v), json_object_get_string_len(v)));
        if (!n) return n.fail(path);
        return n;
    }
    if (json_object_is_type(v, json_type_int)) {
        // json-c saturates out-of-range integers and sets errno; re-read the literal to be exact.
        const char* text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
        auto n = parse_decimal_count(text ? text : "");
        if (!n) return n.fail(path);
        return n;
    }
    return fail(path + ": not an integer");
}

Result<Bytes> base64_decode(std::string_view text) {
    // mbedTLS tolerates line breaks inside base64; protobuf-JSON bytes never contain them.
    if (text.size() % 4 != 0) return fail("invalid base64 (length not a multiple of 4)");
    for (char c : text) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=')) {
            return fail("invalid base64 character");
        }
    }
    size_t olen = 0;
    const auto* src = reinterpret_cast<const unsigned char*>(text.data());
    Bytes out(text.size() / 4 * 3 + 1);
    if (mbedtls_base64_decode(out.data(), out.size(), &olen, src, text.size()) != 0) {
        return fail("invalid base64");
    }
    out.resize(olen);
    return out;
}

std::string base64_encode(const uint8_t* data, size_t len) {
    size_t olen = 0;
    std::string out((len + 2) / 3 * 4 + 1, '\0');
    mbedtls_base64_encode(reinterpret_cast<unsigned char*>(out.data()), out.size(), &olen, data,
                          len);
    out.resize(olen);
    return out;
}

Result<Bytes> bytes_member(json_object* obj, const char* key, const std::string& path,
                           bool required) {
    auto s = string_member(obj, key, path, required);
    if (!s) return s.fail();
    auto b = base64_decode(*s);
    if (!b) return b.fail(path);
    if (required && b->empty()) return fail(path + ": empty");
    return b;
}

Result<std::vector<json_object*>> array_member(json_object* obj, const char* key,
                                               const std::string& path, size_t max_items) {
    std::vector<json_object*> out;
    json_object* v = member(obj, key);
    if (!v) return out;
    if (!json_object_is_type(v, json_type_array)) return fail(path + ": not an array");
    size_t n = json_object_array_length(v);
    if (n > max_items) {
        return fail(path + ": " + std::to_string(n) + " elements, more than the limit of " +
                    std::to_string(max_items));
    }
    for (size_t i = 0; i < n; ++i) out.push_back(json_object_array_get_idx(v, i));
    return out;
}

int64_t epoch_seconds(int year, int month, int day, int hour, int minute, int second) {
    // Days from civil (proleptic Gregorian), after H. Hinnant's algorithm.
    int64_t y = year - (month <= 2 ? 1 : 0);
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    return days * 86400 + hour * 3600 + minute * 60 + second;
}

namespace {

bool digits(std::string_view s, size_t pos, size_t n, int& out) {
    if (pos + n > s.size()) return false;
    out = 0;
    for (size_t i = pos; i < pos + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        out = out * 10 + (s[i] - '0');
    }
    return true;
}

}  // namespace

Result<int64_t> parse_rfc3339(std::string_view s) {
    int y, mo, d, h, mi, se;
    if (!digits(s, 0, 4, y) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, mo) ||
        s[7] != '-' || !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s, 11, 2, h) || s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' ||
        !digits(s, 17, 2, se)) {
        return fail("not an RFC 3339 time: " + std::string(s.substr(0, 64)));
    }
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) {
        return fail("time out of range: " + std::string(s.substr(0, 64)));
    }
    size_t p = 19;
    if (p < s.size() && s[p] == '.') {
        ++p;
        size_t start = p;
        while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
        if (p == start || p - start > 9) return fail("bad fraction in time " + std::string(s));
    }
    int64_t offset = 0;
    if (p < s.size() && (s[p] == 'Z' || s[p] == 'z')) {
        ++p;
    } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
        int oh, om;
        if (!digits(s, p + 1, 2, oh) || p + 3 >= s.size() || s[p + 3] != ':' ||
            !digits(s, p + 4, 2, om) || oh > 23 || om > 59) {
            return fail("bad offset in time " + std::string(s.substr(0, 64)));
        }
        offset = (s[p] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
        p += 6;
    } else {
        return fail("time without zone: " + std::string(s.substr(0, 64)));
    }
    if (p != s.size()) return fail("trailing data in time " + std::string(s.substr(0, 64)));
    return epoch_seconds(y, mo, d, h, mi, se) - offset;
}

}  // namespace myr::verify
