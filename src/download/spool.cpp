#include "download/spool.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/fault.hpp"
#include "core/hex.hpp"
#include "core/log.hpp"
#include "core/random.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "net/url_text.hpp"

namespace myr::download {
namespace {

// Re-reading a kept part goes through one buffer of this size, whatever the part's size.
constexpr size_t kReadChunk = 256u << 10;
constexpr size_t kMaxMeta = 4096 + 64;

std::string part_name(const std::string& hex) {
    return hex + ".part";
}
std::string meta_name(const std::string& hex) {
    return hex + ".part.meta";
}

// The meta's text: two lines, `synced=<bytes>` and `validator=<ETag or Last-Modified>` (a header
// value, so never a line break). Anything else, such as the validator alone that older builds
// wrote, is unreadable: the part then starts from zero.
std::string meta_text(uint64_t synced, const std::string& validator) {
    return "synced=" + std::to_string(synced) + "\nvalidator=" + validator + "\n";
}
struct Meta {
    uint64_t synced = 0;
    std::string validator;
};
std::optional<Meta> parse_meta(const std::string& text) {
    const size_t nl = text.find('\n');
    if (text.rfind("synced=", 0) != 0 || nl == std::string::npos || text.back() != '\n') {
        return std::nullopt;
    }
    const std::string digits = text.substr(7, nl - 7);
    const std::string rest = text.substr(nl + 1, text.size() - nl - 2);
    if (digits.empty() || digits.size() > 19 ||
        digits.find_first_not_of("0123456789") != std::string::npos ||
        rest.rfind("validator=", 0) != 0 || rest.find('\n') != std::string::npos) {
        return std::nullopt;
    }
    return Meta{std::stoull(digits), rest.substr(10)};
}

}  // namespace

bool valid_validator(const std::string& v) {
    return !v.empty() && v.size() <= kMaxValidator && !net::unsafe_header_text(v);
}

namespace {

// Whether `name` is one a download resumes from or installs: `<hex>`, `<hex>.part`,
// `<hex>.part.meta`.
bool resumable_name(const std::string& name) {
    std::string_view n(name);
    for (std::string_view suffix : {".part.meta", ".part"}) {
        if (n.size() > suffix.size() && n.substr(n.size() - suffix.size()) == suffix) {
            n.remove_suffix(suffix.size());
            break;
        }
    }
    return valid_content_hash(n);
}

// Leftovers that cannot be removed are met again at every sweep (each download, each install's
// clean-up): each is named in the log the first time only, and at most this many names are kept.
constexpr size_t kReportedLeftovers = 64;

void warn_leftover(const std::string& name, const Error& e) {
    static std::mutex mu;
    static std::set<std::string> reported;
    {
        std::lock_guard<std::mutex> lock(mu);
        if (reported.size() >= kReportedLeftovers || !reported.insert(name).second) return;
    }
    std::string why = e.message();
    if (why.size() > 300) why = why.substr(0, 300) + "…";
    log::warn("cannot remove a spool leftover; leaving it",
              {{"path", std::string(statedir::entry::spool) + "/" + name}, {"error", why}});
}

// Removes `name` from the spool directory; false (logged once) when it cannot be removed.
bool remove_leftover(int dir, const std::string& name) {
    auto rm = fsx::remove_tree_at(dir, name);
    if (!rm) warn_leftover(name, rm.error());
    return static_cast<bool>(rm);
}

// Whether `name` in `dir` is in the way of a spool file: there (a regular file counts only when
// `regular_ok` is false) and it cannot be removed (logged).
bool blocked(int dir, const std::string& name, bool regular_ok) {
    auto st = fsx::stat_at(dir, name);
    if (!st || !st->has_value() || (regular_ok && S_ISREG((*st)->st_mode))) return false;
    return !remove_leftover(dir, name);
}

// Hashes `fd` from offset 0 into `h`; returns the byte count.
Result<uint64_t> rehash(int fd, hash::Sha256& h) {
    std::vector<char> buf(kReadChunk);
    uint64_t total = 0;
    while (true) {
        const ssize_t n = pread(fd, buf.data(), buf.size(), static_cast<off_t>(total));
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail_errno("read");
        }
        if (n == 0) return total;
        h.update(buf.data(), static_cast<size_t>(n));
        total += static_cast<uint64_t>(n);
    }
}

}  // namespace

bool valid_content_hash(std::string_view hex) {
    if (hex.size() != 64) return false;
    for (char c : hex) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

namespace {

// Removes the spool's entries that `keep` does not want (what cannot be removed is logged and
// left); a spool that is not a directory goes whole.
template <class Keep>
Result<int> sweep_spool(const statedir::StateDir& state, const Keep& keep) {
    const char* spool = statedir::entry::spool;
    auto st = fsx::stat_at(state.fd(), spool);
    if (!st) return st.fail("spool");
    if (!st->has_value()) return 0;
    if (!S_ISDIR((*st)->st_mode)) {
        MYR_TRY(fsx::remove_tree_at(state.fd(), spool), "remove spool");
        return 1;
    }
    auto dir = fsx::open_dir_at(state.fd(), spool);
    if (!dir) return dir.fail("open spool");
    auto names = fsx::list_dir(dir->get());
    if (!names) return names.fail("list spool");
    int removed = 0;
    for (const std::string& n : *names) {
        if (keep(n)) continue;
        MYR_TRY(fault::point("recover.spool.before"), "recover");
        // As for .staging: a download that cannot be removed must not stop the start.
        if (!remove_leftover(dir->get(), n)) continue;
        ++removed;
        MYR_TRY(fault::point("recover.spool.after"), "recover");
    }
    if (removed > 0) MYR_TRY(fsx::fsync_dir(dir->get()), "sync spool");
    return removed;
}

}  // namespace

Result<int> clear_spool(const statedir::StateDir& state) {
    return sweep_spool(state, [](const std::string&) { return false; });
}

Result<int> tidy_spool(const statedir::StateDir& state) {
    return sweep_spool(state, resumable_name);
}

SpoolFile::~SpoolFile() = default;

Result<std::shared_ptr<SpoolFile>> SpoolFile::open(const statedir::StateDir& state,
                                                   const std::string& hex) {
    if (!valid_content_hash(hex)) {
        return fail(Errc::invalid, "content hash \"" + hex + "\" is not 64 lower-case hex digits");
    }
    MYR_TRY(fault::point("download.open"), "open spool");
    std::shared_ptr<SpoolFile> f(new SpoolFile());
    f->hex_ = hex;
    f->base_ = hex;
    f->dir_path_ = state.path_of(statedir::entry::spool);
    // Not fsx::make_dir_at: a lost mkdir costs nothing (the next open makes it again), so no
    // fsync of the state directory and no fault point of its own.
    if (::mkdirat(state.fd(), statedir::entry::spool, 0755) != 0 && errno != EEXIST) {
        return fail_errno("spool: create " + f->dir_path_);
    }
    auto dir = fsx::open_dir_at(state.fd(), statedir::entry::spool);
    if (!dir) return dir.fail("spool: open " + f->dir_path_);
    f->dir_ = std::move(*dir);

    // The spool holds at most the current artifact: whatever else is there is an older offer's.
    // What cannot be removed is left (and named in the log): it must not stop the install.
    auto names = fsx::list_dir(f->dir_.get());
    if (!names) return names.fail("list " + f->dir_path_);
    for (const std::string& n : *names) {
        if (n == hex || n == part_name(hex) || n == meta_name(hex)) continue;
        (void)remove_leftover(f->dir_.get(), n);
    }
    if (f->adopt_complete()) return f;
    // A stuck entry under one of this artifact's own names: the download goes to a fresh name
    // of its own instead (it cannot resume, but it can finish).
    const int d = f->dir_.get();
    bool stuck = blocked(d, hex, false) || blocked(d, part_name(hex), true) ||
                 blocked(d, meta_name(hex), true);
    if (!stuck) {
        auto part = f->open_part();
        if (part) return f;
        log::warn(
            "spool: the kept part cannot be used",
            {{"path", f->dir_path_ + "/" + part_name(hex)}, {"error", part.error().message()}});
    }
    MYR_TRY(f->open_fresh(), "spool");
    return f;
}

bool SpoolFile::adopt_complete() {
    // A complete file from an earlier run (crash after the rename) needs no byte downloaded.
    auto st = fsx::stat_at(dir_.get(), hex_);
    if (!st || !st->has_value() || !S_ISREG((*st)->st_mode)) return false;
    auto fd = fsx::open_regular_at(dir_.get(), hex_);
    if (fd) {
        uint64_t size = 0;
        auto d = hash::sha256_fd(fd->get(), &size);
        if (d && hash::to_hex(*d) == hex_) {
            complete_ = Artifact{dir_path_ + "/" + hex_, hex_, size};
            return true;
        }
    }
    // Other bytes: not this artifact. Left in place if it cannot go (then blocked() says so).
    (void)remove_leftover(dir_.get(), hex_);
    return false;
}

Status SpoolFile::open_part() {
    const std::string part = part_name(base_);
    int fd = openat(dir_.get(), part.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) {
        fd = openat(dir_.get(), part.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0600);
    }
    if (fd < 0) return fail_errno("open");
    fd_ = UniqueFd(fd);
    struct stat st {};
    if (fstat(fd, &st) != 0) return fail_errno("stat");
    if (!S_ISREG(st.st_mode)) return fail(Errc::invalid, "not a regular file");
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) return fail_errno("open");
    const auto on_disk = static_cast<uint64_t>(st.st_size);
    const uint64_t trusted = trusted_prefix(on_disk);
    if (trusted < on_disk) {
        // The tail after the last sync may not be what was written (power loss): not resumed.
        if (ftruncate(fd, static_cast<off_t>(trusted)) != 0) {
            return fail_errno("cut back to " + std::to_string(trusted) + " bytes");
        }
        log::info("spool: kept part cut back to its last sync",
                  {{"path", dir_path_ + "/" + part}, {"bytes", on_disk}, {"kept", trusted}});
    }
    if (trusted == 0) {
        validator_.clear();
        MYR_TRY(fsx::unlink_at(dir_.get(), meta_name(base_)), "remove " + meta_name(base_));
    }
    auto kept = rehash(fd, hasher_);
    if (!kept) return kept.fail("re-read");
    size_ = synced_ = *kept;
    return {};
}

uint64_t SpoolFile::trusted_prefix(uint64_t size) {
    auto text = fsx::read_file_at(dir_.get(), meta_name(base_), kMaxMeta);
    auto meta = text ? parse_meta(*text) : std::nullopt;
    if (!meta || meta->validator.empty() || meta->synced > size) return 0;
    // The volume is outside input: a validator goes back to the server in If-Range, so one that
    // is not a header value (a CR, a NUL) would fail every request. The part starts from zero.
    if (!valid_validator(meta->validator)) {
        log::warn(
            "spool: the kept part's validator is not an HTTP header value; starting from "
            "zero",
            {{"path", dir_path_ + "/" + meta_name(base_)}});
        return 0;
    }
    validator_ = meta->validator;
    return meta->synced;
}

Status SpoolFile::open_fresh() {
    fd_ = UniqueFd();
    size_ = 0;
    hasher_ = hash::Sha256();
    validator_.clear();
    uint8_t r[8];
    random_bytes(r, sizeof r);
    base_ = hex_ + "-" + hex::encode(r, sizeof r);
    const std::string part = part_name(base_);
    log::warn("spool: this artifact's own name is taken by a leftover; downloading under another",
              {{"path", dir_path_ + "/" + part}});
    // O_EXCL: a fresh file of our own, never an entry someone placed there.
    const int fd =
        openat(dir_.get(), part.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return fail_errno("open " + dir_path_ + "/" + part);
    fd_ = UniqueFd(fd);
    return {};
}

Status SpoolFile::append(std::string_view data) {
    MYR_TRY(fault::point("download.write"), "write " + dir_path_ + "/" + part_name(base_));
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = pwrite(fd_.get(), data.data() + done, data.size() - done,
                                 static_cast<off_t>(size_ + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail_errno("write " + dir_path_ + "/" + part_name(base_));
        }
        done += static_cast<size_t>(n);
    }
    hasher_.update(data);
    size_ += data.size();
    if (size_ - synced_ >= kSyncEvery) {
        MYR_TRY(sync(), "sync " + dir_path_ + "/" + part_name(base_));
    }
    return {};
}

Status SpoolFile::sync() {
    // Without a validator nothing can resume from the part: no sync is worth its cost.
    if (validator_.empty()) return {};
    MYR_TRY(fault::point("download.sync.before"), "sync");
    if (fsync(fd_.get()) != 0) return fail_errno("fsync");
    // Only now may the meta name these bytes: they are on the disk.
    const uint64_t was = synced_;
    synced_ = size_;
    if (auto st = write_meta(); !st) {
        synced_ = was;
        return st;
    }
    MYR_TRY(fault::point("download.sync.after"), "sync");
    return {};
}

Status SpoolFile::write_meta() {
    const std::string name = meta_name(base_);
    MYR_TRY(fsx::write_file_atomic(dir_.get(), name, meta_text(synced_, validator_), 0600),
            "write " + dir_path_ + "/" + name);
    return {};
}

Status SpoolFile::truncate() {
    if (ftruncate(fd_.get(), 0) != 0) {
        return fail_errno("truncate " + dir_path_ + "/" + part_name(base_));
    }
    size_ = synced_ = 0;
    hasher_ = hash::Sha256();
    return set_validator("");
}

Status SpoolFile::set_validator(const std::string& validator) {
    if (validator == validator_) return {};
    const std::string name = meta_name(base_);
    if (validator.empty()) {
        MYR_TRY(fsx::unlink_at(dir_.get(), name), "remove " + dir_path_ + "/" + name);
        validator_.clear();
        return {};
    }
    std::string was = std::exchange(validator_, validator);
    if (auto st = write_meta(); !st) {
        validator_ = std::move(was);
        return st;
    }
    return {};
}

Result<Artifact> SpoolFile::commit() {
    const std::string part = part_name(base_);
    const std::string where = dir_path_ + "/" + part;
    MYR_TRY(fault::point("download.commit"), "commit " + where);
    if (fsync(fd_.get()) != 0) return fail_errno("fsync " + where);
    MYR_TRY(fsx::rename_at(dir_.get(), part, dir_.get(), base_), "rename " + where);
    (void)fsx::unlink_at(dir_.get(), meta_name(base_));
    MYR_TRY(fsx::fsync_dir(dir_.get()), "fsync " + dir_path_);
    const hash::Digest d = hasher_.finish();
    return Artifact{dir_path_ + "/" + base_, hash::to_hex(d), size_};
}

void SpoolFile::remove() {
    if (!dir_) return;
    (void)fsx::unlink_at(dir_.get(), part_name(base_));
    (void)fsx::unlink_at(dir_.get(), meta_name(base_));
    (void)fsx::fsync_dir(dir_.get());
}

}  // namespace myr::download
