// Reading protobuf-JSON documents (Sigstore bundles and trusted roots) with json-c, defensively:
// the input is untrusted, so size and nesting are capped, every field is type-checked, and errors
// name the field ("verificationMaterial.tlogEntries[0].logIndex: not an integer").
// Protobuf-JSON conventions: 64-bit integers are decimal strings (numbers are accepted too), bytes
// are base64, and a field holding its zero value is omitted.
#pragma once

#include <json-c/json.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"
#include "core/result.hpp"

namespace myr::verify {

using Bytes = std::vector<uint8_t>;

// Parses a whole document: larger than `max_bytes`, nested deeper than `max_depth`, malformed, or
// followed by anything but whitespace is an error.
[[nodiscard]] Result<json::Ptr> parse_json(std::string_view text, size_t max_bytes, int max_depth);

// Field access. A missing member and an explicit JSON null both count as absent. `path` is the
// member's own path, used in error messages.
json_object* member(json_object* obj, const char* key);
[[nodiscard]] Result<json_object*> object_member(json_object* obj, const char* key,
                                                 const std::string& path);
// Absent is an error when `required`; otherwise the empty string.
[[nodiscard]] Result<std::string> string_member(json_object* obj, const char* key,
                                                const std::string& path, bool required);
// A non-negative int64 (decimal string or JSON integer); absent is 0. Negative, fractional,
// overflowing or otherwise malformed values are errors.
[[nodiscard]] Result<int64_t> count_member(json_object* obj, const char* key,
                                           const std::string& path);
// Standard base64 (RFC 4648 section 4, with padding). Absent: error when `required`, else empty.
[[nodiscard]] Result<Bytes> bytes_member(json_object* obj, const char* key, const std::string& path,
                                         bool required);
// An array of at most `max_items` elements; absent is empty.
[[nodiscard]] Result<std::vector<json_object*>> array_member(json_object* obj, const char* key,
                                                             const std::string& path,
                                                             size_t max_items);

[[nodiscard]] Result<int64_t> parse_decimal_count(std::string_view s);
[[nodiscard]] Result<Bytes> base64_decode(std::string_view text);
std::string base64_encode(const uint8_t* data, size_t len);
inline std::string base64_encode(const Bytes& b) {
    return base64_encode(b.data(), b.size());
}

// RFC 3339 ("2021-10-07T13:28:20.123Z", or with a numeric offset) to Unix seconds, fraction
// dropped.
[[nodiscard]] Result<int64_t> parse_rfc3339(std::string_view s);
// Seconds since the epoch of a proleptic Gregorian UTC date and time.
int64_t epoch_seconds(int year, int month, int day, int hour, int minute, int second);

}  // namespace myr::verify
