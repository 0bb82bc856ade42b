// update.trustedRootFile as the updater holds it: read, parsed and checked usable in the one call
// that `validate`, start-up, the reload and `status` share, with what says how old it is.
//
// The file may be a symlink: a mounted ConfigMap is one (`trusted_root.json` ->
// `..data/trusted_root.json` -> a timestamped directory the kubelet swaps in). It is followed, as
// the specification allows for the sources it reads (a ConfigMap "is one"), and must resolve to a
// regular file, which read_small_file checks on the opened descriptor; a directory or a pipe is
// refused before anything is read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "verify/trusted_root.hpp"

namespace myr::verify {

// What `path` resolves to now: a different file (a swapped `..data`, a rename over it) or a
// rewrite in place differs in one of these.
struct FileStamp {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    int64_t ctime_ns = 0;
    bool operator==(const FileStamp&) const = default;
};

// stat(2) of `path`, following symlinks; errors name the path.
[[nodiscard]] Result<FileStamp> stamp_file(const std::string& path);

// A root this build can verify a bundle with: at least one certificate authority whose whole
// chain parses as X.509 (Fulcio), and at least one transparency log whose key this build can
// load. The error names what is missing and why the candidates were not enough.
[[nodiscard]] Status check_usable(const TrustedRoot& root);

struct LoadedRoot {
    std::shared_ptr<const TrustedRoot> root;  // immutable: shared with jobs on the work queue
    std::string path;
    std::optional<int64_t> newest_start;  // newest_validity_start: how old the root is
    FileStamp stamp;  // taken before the read: a change during the read is seen by the next look
    // Of the file's bytes: names the root a signature was refused under, so that a quarantine
    // for that refusal ends when the operator replaces the root (docs/update.md).
    std::string sha256_hex;
};

// Reads `path` (at most kMaxTrustedRootBytes), parses it and checks it usable. Errors read
// "trusted root <path>: <why>".
[[nodiscard]] Result<LoadedRoot> load_usable_root(const std::string& path);

}  // namespace myr::verify
