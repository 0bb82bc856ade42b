// The collector volume (volume.md, "Layout"): `versions/<version>/<binary>` with its install.json,
// `current -> versions/<version>` and `.staging/<id>/`.
//
// Everything goes through directory fds opened once: the install directory itself is trusted (it is
// the volume's mount point from the config), everything below it is not. No symlink inside the
// volume is ever followed: `current` is read with readlink and its target checked to be exactly
// `versions/<canonical version>`; version directories, the binary and the marker are opened with
// O_NOFOLLOW. A hostile entry therefore makes a version "broken" (and seeding falls back to the
// image binary); it never sends a read or a write out of the volume.
//
// These calls block (hashing a 300 MB binary takes a second): run them off the event loop.
#pragma once

#include <optional>
#include <string>

#include "core/fd.hpp"
#include "core/result.hpp"
#include "store/marker.hpp"

namespace myr::store {

class Volume {
  public:
    // Opens `install_dir` (absolute; created when missing, like its `versions` and `.staging`). A
    // `versions` or `.staging` entry that is not a real directory (a planted symlink, a file) is
    // removed (the entry itself, never its target) and recreated, with a warning in the log.
    [[nodiscard]] static Result<Volume> open(const std::string& install_dir,
                                             const std::string& binary);
    // Opens an existing volume for reading only (`myriarch-updater status`, beside PID 1): nothing
    // is created, removed or replaced. A missing install directory or `versions`, or a symlink as
    // either, is an error saying so; `.staging` is not opened (staging_fd() is -1).
    [[nodiscard]] static Result<Volume> open_read_only(const std::string& install_dir,
                                                       const std::string& binary);

    const std::string& path() const { return path_; }
    const std::string& binary() const { return binary_; }
    int root_fd() const { return root_.get(); }
    int versions_fd() const { return versions_.get(); }
    int staging_fd() const { return staging_.get(); }

  private:
    [[nodiscard]] static Result<Volume> unopened(const std::string& install_dir,
                                                 const std::string& binary);

    std::string path_, binary_;
    UniqueFd root_, versions_, staging_;
};

// Checks that `versions/<version>` is intact: a canonical name, a real directory, a marker that
// parses and names this version and binary, the binary a regular executable file of the marker's
// size and SHA-256. Returns the marker, or an error saying why the directory is not intact.
[[nodiscard]] Result<Marker> check_intact(const Volume& vol, const std::string& version);
bool intact(const Volume& vol, const std::string& version);
// check_intact but the hash: the marker and the binary's kind, mode and size, without reading the
// binary (status shows every version in a moment; each start and each switch checks the hash).
[[nodiscard]] Result<Marker> check_present(const Volume& vol, const std::string& version);

// What `current` points to.
struct Active {
    enum class State { none, intact, broken };
    State state = State::none;
    std::string version;           // the version `current` names ("" when none, or not a version)
    std::optional<Marker> marker;  // when intact
    std::string reason;            // when broken: why, for the log
};
const char* to_string(Active::State s);

// Reads `current`. Hostile or damaged contents (not a symlink, a target outside `versions/`, a
// missing or symlinked directory, a bad marker, a changed binary) give `broken` with a reason; only
// I/O errors on the volume itself are errors.
[[nodiscard]] Result<Active> active(const Volume& vol);
// active() for seeding under policy image, which needs the SHA-256 of the image binary too when the
// image's version is active. When the active binary holds the image's bytes (the pod restarted on
// the same image), the two are read in one pass and hashed once; otherwise each is hashed on its
// own. `image_sha256` receives the image's hash (hex) when it was computed on the way; it stays
// as it was when `current` names no version with a readable marker of the image's size.
[[nodiscard]] Result<Active> active(const Volume& vol, int image_fd, std::string* image_sha256);

// The version named by `current` without any check ("" when absent or not of the expected form).
[[nodiscard]] Result<std::string> current_target(const Volume& vol);

// Points `current` at `versions/<version>` atomically and durably (temp symlink + rename, fsync of
// the install directory). Refuses a version that is not intact, unless `verified` says the caller
// has just checked it (activation hashed it while copying: a second pass would cost a full read).
// A `current` that is a real directory (planted) is removed first. Fault points
// `store.switch.link.before`/`.after` (and `store.switch.clear.*` for the planted directory).
[[nodiscard]] Status switch_current(const Volume& vol, const std::string& version,
                                    bool verified = false);

// Removes `current` (recovery of an interrupted operation that started with nothing active).
// Fault points `store.switch.unlink.before`/`.after`.
[[nodiscard]] Status remove_current(const Volume& vol);

}  // namespace myr::store
