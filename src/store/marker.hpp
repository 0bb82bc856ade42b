// The install marker `versions/<version>/install.json` (volume.md): which binary a version
// directory holds, its hash and size, where it came from and which version was active before it. A
// version directory is intact only when its marker parses and matches the binary (see volume.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace myr::store {

enum class Source { image, update };

struct Marker {
    std::string version;  // canonical, equals the directory name
    std::string binary;   // file name of the collector in the directory
    std::string sha256;   // lower-case hex
    uint64_t size = 0;    // bytes
    Source source = Source::image;
    std::string previous_version;  // "" when nothing (intact) was active before
    std::string installed_at;      // RFC 3339
};

// A marker larger than this is refused without being read in full (a hostile volume).
inline constexpr size_t kMaxMarkerSize = 64 * 1024;

const char* to_string(Source s);

// Strict: every field present with the right type, versions canonical, sha256 64 hex digits,
// binary a single path component. Errors say which field is wrong.
[[nodiscard]] Result<Marker> parse_marker(std::string_view json);
std::string render_marker(const Marker& m);

}  // namespace myr::store
