// The state directory, `collector.stateDir` (docs/volume.md): one owner opens it (creating it when
// missing) and names what lives in it; each module that keeps a file there is handed the open
// directory instead of opening the path itself.
//
// clang-format off
//   entry               kept by      what
//   journal.json        journal/     the operation journal (journal.json.corrupt-<ts> when
//                                    recovery moved a damaged one aside)
//   spool/              download/    the artifact being downloaded (download/spool.hpp)
//   last-attempt.json   update/      the outcome of the last install
//   packages.json       update/      what the last offer came to
//   instance_uid        opamp/       the updater's own OpAMP instance uid
//   .lock               statedir/    the writer lock, held by the running updater
//                                    (writer_lock.hpp); never removed
// clang-format on
//
// A StateDir is a handle: copies share the one open directory fd, so a job on the work queue can
// keep it after its owner is gone. Everything is reached through that fd (openat and friends), so
// the path is only for messages.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/fd.hpp"
#include "core/result.hpp"

namespace myr::statedir {

namespace entry {
inline constexpr const char* journal = "journal.json";
inline constexpr const char* spool = "spool";
inline constexpr const char* last_attempt = "last-attempt.json";
inline constexpr const char* packages = "packages.json";
inline constexpr const char* instance_uid = "instance_uid";
inline constexpr const char* lock = ".lock";
}  // namespace entry

class StateDir {
  public:
    // Not open: every use through fd() fails (EBADF). For options filled in later.
    StateDir() = default;

    // Opens `path`, an absolute path, creating it (0755; its parent must exist) when missing. A
    // symlink as the last component is refused (fsx::open_dir).
    [[nodiscard]] static Result<StateDir> open(const std::string& path);
    // Opens an existing `path` without creating it, for readers beside the running updater
    // (`myriarch-updater status`); a missing directory or a symlink is an error saying so.
    [[nodiscard]] static Result<StateDir> open_existing(const std::string& path);

    bool is_open() const { return fd_ != nullptr; }
    const std::string& path() const { return path_; }
    int fd() const { return fd_ ? fd_->get() : -1; }
    // `<path>/<entry>`, for messages.
    std::string path_of(std::string_view entry) const;

  private:
    std::string path_;
    std::shared_ptr<const UniqueFd> fd_;
};

}  // namespace myr::statedir
