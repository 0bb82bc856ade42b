// Staging an offered release archive: the one member that is the collector binary, streamed out of
// a tar (gzip, xz, zstd or none) or zip archive into the store's staging directory, hashed while
// written. Everything else in the archive is only read past. design/update.md, "Staging".
//
// Blocking (decompression, writes, fsync): the installer runs it on the work queue.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.hpp"

namespace myr::stage {

struct ExtractLimits {
    uint64_t max_binary_size = 0;   // update.maxArtifactSize (the binary's own size)
    uint64_t max_members = 100000;  // entries read before giving up
    uint64_t max_unpacked = 0;      // bytes decompressed in all; 0 = 4 x max_binary_size
};

struct Extracted {
    std::string member;  // the member's name as it was in the archive
    uint64_t size = 0;
    std::string sha256_hex;  // of the bytes written
};

// Finds the member named `binary` at the top of the archive or under exactly one top folder and
// writes it to `<dir_fd>/<binary>` (created O_EXCL 0600, fsynced, then 0755; the directory is
// fsynced too). Refused, with an error (Errc::invalid) naming the member and the rule: links,
// devices and other non-regular members of that name, absolute names, `..` components, two
// members that would both be the binary, a binary over the limit, more than one top folder
// holding it, a truncated or corrupt archive, no such member. On failure nothing is left in
// `dir_fd` under that name.
[[nodiscard]] Result<Extracted> extract_binary(int archive_fd, const std::string& binary,
                                               int dir_fd, const ExtractLimits& limits);

}  // namespace myr::stage
