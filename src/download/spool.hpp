// The spool: `stateDir/spool/` holds at most the artifact being downloaded, as
//   <hex>.part        the bytes so far (created O_EXCL, 0600, through the spool directory's fd)
//   <hex>.part.meta   how many bytes of the part were fsynced, and the validator (ETag or
//                     Last-Modified) they were served under, so that a resume asks with If-Range
//                     for exactly that version; written atomically (fsx::write_file_atomic)
//   <hex>             the complete file, fsynced and renamed from the .part
// where <hex> is the offer's content hash. When an entry that cannot be removed holds one of
// these names (a leftover someone made immutable, a directory of that name), the download goes
// to `<hex>-<16 random hex>.part` instead, created O_EXCL 0600, renamed to `<hex>-<random>`: it
// cannot resume, but it can finish.
//
// Durability (docs/download.md, "Resume"): the part is fsynced every kSyncEvery bytes and only
// then is the meta rewritten with the new synced size, so the meta never names bytes the disk may
// not hold. A kept part is cut back to the meta's size before it is re-hashed: after a power loss
// its tail may hold what the disk never got (zeros, or nothing), and a part without a readable
// meta starts from zero. The spool survives restarts (tidy_spool); what belongs to another offer
// goes at the next download (SpoolFile::open) or at the end of the next install (clear_spool).
//
// Leftovers that cannot be removed are named in the log once per process and left; they never
// stop a download, an install or a start. Everything here blocks (file I/O, re-hashing a kept
// part); the downloader calls it from the work queue, one call at a time per file, never on the
// loop.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/fd.hpp"
#include "core/result.hpp"
#include "download/downloader.hpp"
#include "fsx/file.hpp"
#include "hash/sha256.hpp"
#include "statedir/state_dir.hpp"

namespace myr::download {

// Whether `hex` can name a spool file: 64 lower-case hex digits (a SHA-256).
bool valid_content_hash(std::string_view hex);
// A validator (ETag or Last-Modified) that may go back in If-Range: a header value, not empty, at
// most kMaxValidator bytes. Checked on what the server sent and on what the volume kept.
inline constexpr size_t kMaxValidator = 4096;
bool valid_validator(const std::string& v);

// Bytes appended between two syncs of a part (and rewrites of its meta): what a power loss costs
// a resume at most.
inline constexpr uint64_t kSyncEvery = 4u << 20;

// Empties the spool (what cannot be removed is logged and left): the installer calls it at the
// end of each install, so that the spool holds only the artifact of the install in progress.
// Returns how many entries were removed. Fault points `recover.spool.before`/`.after` (their
// names are the crash matrix's, from when recovery owned this).
[[nodiscard]] Result<int> clear_spool(const statedir::StateDir& state);

// At start (journal::recover): keeps what a download can resume from or install (`<hex>`,
// `<hex>.part`, `<hex>.part.meta`) and removes everything else (temp files of a meta write cut
// short, foreign entries). Which offer the kept files belong to is not known yet: the next
// download of another hash, or the end of the next install, removes them. Same fault points and
// count as clear_spool.
[[nodiscard]] Result<int> tidy_spool(const statedir::StateDir& state);

class SpoolFile {
  public:
    // Opens stateDir/spool (created when missing), removes every entry that is not this
    // artifact's (what cannot be removed is left), and opens or creates `<hex>.part`; a kept part
    // is re-read to hash its bytes.
    // When the complete `<hex>` is already there with that very hash, `complete()` holds it and
    // no part is opened. Fault points: `download.open`.
    [[nodiscard]] static Result<std::shared_ptr<SpoolFile>> open(const statedir::StateDir& state,
                                                                 const std::string& hex);
    ~SpoolFile();
    SpoolFile(const SpoolFile&) = delete;
    SpoolFile& operator=(const SpoolFile&) = delete;

    const std::optional<Artifact>& complete() const { return complete_; }
    uint64_t size() const { return size_; }
    // The spool directory and the room on its filesystem (one fstatvfs: no disk I/O).
    const std::string& dir_path() const { return dir_path_; }
    [[nodiscard]] Result<fsx::Space> space() const { return fsx::space_of(dir_.get()); }
    // The validator stored with the part ("" = none).
    const std::string& validator() const { return validator_; }

    // Appends to the part and to its hash (fault point `download.write`, each call); every
    // kSyncEvery bytes the part is fsynced and the meta records the new size (fault points
    // `download.sync.before`, `download.sync.after`).
    [[nodiscard]] Status append(std::string_view data);
    // fsync the part, then record its size and validator in the meta: a later open trusts the
    // part up to here. append() calls it every kSyncEvery bytes; a no-op without a validator.
    [[nodiscard]] Status sync();
    // Drops the bytes kept so far and the validator: the next append starts the file anew.
    [[nodiscard]] Status truncate();
    // Stores the validator the bytes from here on are served under ("" removes it).
    [[nodiscard]] Status set_validator(const std::string& validator);
    // fsync, rename to `<hex>`, fsync the spool directory (fault point `download.commit`).
    [[nodiscard]] Result<Artifact> commit();
    // Removes the part and its validator (after a refusal or a disk failure). Best effort.
    void remove();

  private:
    SpoolFile() = default;
    // The complete `<hex>` when it holds this artifact's bytes; else it is removed if it can be.
    bool adopt_complete();
    // Opens or creates `<base>.part`, re-reading a kept part and its validator.
    [[nodiscard]] Status open_part();
    // Creates a part under a fresh unique name (own names blocked).
    [[nodiscard]] Status open_fresh();
    // How much of a kept part of `size` bytes can be trusted, and under which validator: the
    // synced size its meta names (0 without a readable meta, or when the part is shorter).
    uint64_t trusted_prefix(uint64_t size);
    [[nodiscard]] Status write_meta();

    std::string dir_path_;
    std::string hex_;
    std::string base_;  // the spool files' name: `<hex>`, or `<hex>-<random>` when it is blocked
    UniqueFd dir_;
    UniqueFd fd_;
    uint64_t size_ = 0;
    uint64_t synced_ = 0;  // the size the meta names: fsynced before the meta was written
    hash::Sha256 hasher_;
    std::string validator_;
    std::optional<Artifact> complete_;
};

}  // namespace myr::download
