// Directory primitives that work through an open directory fd, never re-resolving a path, and never
// follow a symlink in the last component. Every side effect is preceded by a fault point
// (`fsx.mkdir`, `fsx.rename`, `fsx.symlink`, `fsx.unlink`, `fsx.fsync_dir`) so tests can fail or
// crash each step. Errors name the step and carry errno text ("mkdir: Permission denied"); the
// caller adds the path.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/fd.hpp"
#include "core/file.hpp"
#include "core/result.hpp"

namespace myr::fsx {

// Opens an absolute directory path. The last component is checked with lstat and a symlink is
// refused ("refusing symlink directory"); higher components resolve normally (they must be trusted,
// e.g. a volume mount point). Trailing slashes are ignored. The opened fd is checked to be the very
// directory that lstat saw (same dev+ino), so a swap between the check and the open is detected.
[[nodiscard]] Result<UniqueFd> open_dir(const std::string& abs_path);
// open_dir, creating the directory (mode 0755, parents must exist) when it is missing. Errors say
// "open <path>: …" or "create <path>: …".
[[nodiscard]] Result<UniqueFd> open_or_create_dir(const std::string& abs_path);

// Opens the single-component entry `name` in `dirfd` as a directory, refusing a symlink.
[[nodiscard]] Result<UniqueFd> open_dir_at(int dirfd, const std::string& name);

// Creates directory `name` in `dirfd` and fsyncs `dirfd`, so the new entry survives a crash. With
// `exist_ok`, an existing directory (not a symlink to one) is success.
[[nodiscard]] Status make_dir_at(int dirfd, const std::string& name, mode_t mode,
                                 bool exist_ok = false);

// fsync of a directory: makes creations, renames and removals in it durable.
[[nodiscard]] Status fsync_dir(int dirfd);

// lstat of `name` in `dirfd`: nullopt when it does not exist (a dangling symlink exists).
[[nodiscard]] Result<std::optional<struct stat>> stat_at(int dirfd, const std::string& name);
// True when the entry exists (lstat semantics: a dangling symlink exists).
[[nodiscard]] Result<bool> exists_at(int dirfd, const std::string& name);

// The entry names of an open directory, without "." and "..", sorted. The fd's offset is not used
// (the directory is reopened through the fd), so it can be called repeatedly.
[[nodiscard]] Result<std::vector<std::string>> list_dir(int dirfd);

// The target of symlink `name` in `dirfd`; fails when it is not a symlink.
[[nodiscard]] Result<std::string> read_link_at(int dirfd, const std::string& name);

// Points symlink `name` in `dirfd` at `target` atomically: a temp symlink `.<name>.tmp-XXXXXX` is
// created and renamed over `name` (replacing the entry itself, never following it), then `dirfd` is
// fsynced. A reader sees the old link or the new one, never none. On failure the temp link is gone
// and the old link is untouched. Refuses to replace a directory.
[[nodiscard]] Status replace_symlink(int dirfd, const std::string& name, const std::string& target);

// renameat(from_dirfd, from, to_dirfd, to). With `no_replace` an existing `to` is an error with
// errno EEXIST (renameat2 RENAME_NOREPLACE). Does not fsync: the caller fsyncs the directories
// involved.
[[nodiscard]] Status rename_at(int from_dirfd, const std::string& from, int to_dirfd,
                               const std::string& to, bool no_replace = false);

// Removes the entry `name` (a file or symlink; not a directory). A missing entry is success.
[[nodiscard]] Status unlink_at(int dirfd, const std::string& name);

// Removes `name` and, if it is a directory, everything below it. Never follows a symlink: a symlink
// is unlinked as an entry, whatever it points to. A missing `name` is success. Does not fsync.
[[nodiscard]] Status remove_tree_at(int dirfd, const std::string& name);

}  // namespace myr::fsx
