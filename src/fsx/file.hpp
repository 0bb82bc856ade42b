// Durable file writes and bounded reads through a directory fd. The one write path of the project
// (architecture.md, "Durability primitive"): temp file in the same directory (O_CREAT|O_EXCL|
// O_NOFOLLOW, 0600) → write → fsync → fchmod → renameat → fsync(dir). Fault points: `fsx.create`,
// `fsx.write` (each chunk), `fsx.fsync`, `fsx.fchmod`, `fsx.rename`, `fsx.fsync_dir`.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/fd.hpp"
#include "core/result.hpp"

namespace myr::fsx {

// A temporary file `.<final_name>.tmp-XXXXXX` in a directory, open for writing, removed on
// destruction unless committed. The directory fd is borrowed and must outlive the TempFile.
class TempFile {
  public:
    [[nodiscard]] static Result<TempFile> create(int dirfd, const std::string& final_name);
    TempFile(TempFile&& o) noexcept;
    TempFile& operator=(TempFile&&) = delete;
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    ~TempFile();  // unlinks the temp file unless committed

    int fd() const { return fd_.get(); }
    const std::string& name() const { return name_; }  // the temp name inside the directory

    // Writes all of `data` (fault point `fsx.write`).
    [[nodiscard]] Status write(std::string_view data);
    // fsync → fchmod(mode) → renameat over `final_name` → fsync(dir). On failure the temp file is
    // removed (at once, not only at destruction) and the old `final_name` is untouched.
    [[nodiscard]] Status commit(mode_t mode);

  private:
    TempFile(int dirfd, std::string final_name, std::string name, UniqueFd fd);
    void discard();

    int dirfd_ = -1;
    std::string final_name_;
    std::string name_;
    UniqueFd fd_;
    bool done_ = false;
};

// The room on the filesystem of directory `dirfd`: the bytes a writer without root's reserve may
// still use (statvfs f_bavail × f_frsize), and the device (st_dev): two directories with the same
// device draw on the same room.
struct Space {
    uint64_t available = 0;
    uint64_t device = 0;
};
[[nodiscard]] Result<Space> space_of(int dirfd);

// Replaces `name` in `dirfd` with `data` durably and atomically (see the top of this file). On any
// failure the old file is untouched and no temp file remains. Refuses to replace anything that is
// not a regular file (a symlink, a directory…), so a planted link cannot redirect the write.
[[nodiscard]] Status write_file_atomic(int dirfd, const std::string& name, std::string_view data,
                                       mode_t mode);

// Opens `name` in `dirfd` read-only without following a symlink and without blocking on a FIFO
// (O_NONBLOCK, cleared after the check), and checks on the fd that it is a regular file.
[[nodiscard]] Result<UniqueFd> open_regular_at(int dirfd, const std::string& name);

// Reads the regular file `name` in `dirfd` (no symlink). A file larger than `max_size` is refused
// ("larger than N bytes") without being read in full.
[[nodiscard]] Result<std::string> read_file_at(int dirfd, const std::string& name, size_t max_size);

// True for names made by TempFile/replace_symlink (".<name>.tmp-XXXXXX"): leftovers of a crash that
// recovery may remove.
bool is_temp_name(std::string_view name);

}  // namespace myr::fsx
