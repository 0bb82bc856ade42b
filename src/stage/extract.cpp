// extract_binary: libarchive reads the release archive from the fd, one block at a time; only the
// binary's bytes are ever written, and only after the whole archive was read to its end does the
// temp file get its final name. Reading to the end is what lets us refuse a second candidate
// member, a member with `..` anywhere in the archive, and a truncated tail — an archive is judged
// whole, never by its first good-looking part. docs/stage.md lists every rule.
#include "stage/extract.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "hash/sha256.hpp"
#include "stage/decoders.hpp"
#include "stage/zip_scan.hpp"

namespace myr::stage {

namespace {

constexpr size_t kBlock = 64 * 1024;

// What our read callback knows; libarchive calls it from inside archive_read_next_header() and
// archive_read_data(), including while it skips (decompresses past) members we do not want. That
// is where a zip bomb spends its bytes, so the unpacked total is checked there, not only between
// headers.
//
// gzip is inflated here with zlib rather than by libarchive's gzip filter, which does not check
// the CRC-32 and length of the trailer (left unfinished in its 3.6 source): a deflate stream of
// stored blocks with flipped bytes would pass. zlib checks both. xz and zstd carry their own
// checks, verified by liblzma and libzstd under libarchive.
struct Source {
    int fd = -1;
    uint64_t max_unpacked = 0;
    uint64_t raw_bytes = 0;
    uint8_t magic[4] = {};
    size_t magic_len = 0;
    int read_errno = 0;
    bool over_unpacked = false;
    std::string decode_error;  // set when our gzip, xz or zstd layer refused the stream
    std::vector<char> in = std::vector<char>(kBlock);
    size_t in_len = 0;  // bytes of `in` read ahead and not handed on yet (the first block)
    bool raw_eof = false;

    bool gzip = false;
    bool gzip_end = false;  // the last member's trailer was read and nothing follows
    z_stream z{};
    bool z_live = false;
    uint64_t drained = 0;  // inflated after libarchive saw the end of the tar
    std::vector<char> out = std::vector<char>(kBlock);

    std::unique_ptr<StreamDecoder> dec;  // xz or zstd (decoders.hpp), when not gzip
    bool dec_end = false;
    const uint8_t* pend = nullptr;  // input handed to `dec` and not used yet
    size_t pend_len = 0;

    ~Source() {
        if (z_live) inflateEnd(&z);
    }

    // One read(2), EINTR retried; the count, 0 at the end, -1 with read_errno set.
    ssize_t read_raw(char* buf, size_t len) {
        ssize_t n;
        do {
            n = ::read(fd, buf, len);
        } while (n < 0 && errno == EINTR);
        if (n < 0) {
            read_errno = errno;
            return -1;
        }
        for (ssize_t i = 0; i < n && magic_len < sizeof magic; ++i) {
            magic[magic_len++] = static_cast<uint8_t>(buf[i]);
        }
        raw_bytes += static_cast<uint64_t>(n);
        return n;
    }

    // Reads the first block ahead, to tell gzip from the rest before libarchive bids.
    Status prime() {
        ssize_t n = read_raw(in.data(), in.size());
        if (n < 0) return fail_errno("read", read_errno);
        in_len = static_cast<size_t>(n);
        if (n == 0) raw_eof = true;
        gzip = in_len >= 2 && static_cast<uint8_t>(in[0]) == 0x1f &&
               static_cast<uint8_t>(in[1]) == 0x8b;
        if (!gzip) return open_decoder();
        if (gzip) {
            // 16 + 15: gzip wrapper only, largest window; the trailer is checked by inflate.
            if (inflateInit2(&z, 16 + 15) != Z_OK) return fail("gzip: inflateInit failed");
            z_live = true;
            z.next_in = reinterpret_cast<Bytef*>(in.data());
            z.avail_in = static_cast<uInt>(in_len);
            in_len = 0;
        }
        return {};
    }

    // xz and zstd by their magic numbers; the first block becomes the decoder's input.
    Status open_decoder() {
        static const uint8_t kXz[6] = {0xfd, '7', 'z', 'X', 'Z', 0x00};
        const auto* p = reinterpret_cast<const uint8_t*>(in.data());
        std::string why;
        if (in_len >= sizeof kXz && std::memcmp(p, kXz, sizeof kXz) == 0) {
            dec = make_xz_decoder(why);
#if MYR_HAVE_ZSTD
        } else if (in_len >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd) {
            dec = make_zstd_decoder(why);
#endif
        } else {
            return {};
        }
        if (!dec) return fail(why);
        pend = p;
        pend_len = std::exchange(in_len, 0);
        return {};
    }

    bool decoded() const {
        return gzip || dec != nullptr;
    }

    // The first block read ahead is a ustar, pax or GNU tar header ("ustar" at offset 257).
    bool ustar() const {
        return in_len >= 262 && std::memcmp(in.data() + 257, "ustar", 5) == 0;
    }

    // Decompressed bytes into `out` from the xz or zstd decoder; 0 at the clean end, -1 on an
    // error (decode_error set).
    ssize_t decode_some() {
        size_t produced = 0;
        while (produced == 0 && !dec_end) {
            if (pend_len == 0 && !raw_eof) {
                ssize_t n = read_raw(in.data(), in.size());
                if (n < 0) return -1;
                if (n == 0) raw_eof = true;
                pend = reinterpret_cast<const uint8_t*>(in.data());
                pend_len = static_cast<size_t>(n);
            }
            const bool finish = pend_len == 0 && raw_eof;
            size_t len = out.size();
            auto step =
                dec->decode(pend, pend_len, finish, reinterpret_cast<uint8_t*>(out.data()), len);
            if (step == StreamDecoder::Step::error) {
                decode_error = dec->error();
                return -1;
            }
            produced = len;
            if (step == StreamDecoder::Step::end) {
                dec_end = true;
                if (pend_len != 0 || !raw_eof) {
                    decode_error = "unexpected bytes after the compressed data";
                    return -1;
                }
            }
        }
        return static_cast<ssize_t>(produced);
    }

    // The next decompressed block of whichever layer is ours.
    ssize_t next() {
        return gzip ? inflate_some() : decode_some();
    }

    // More compressed input when inflate has used up what it had; false on a read error.
    bool refill() {
        if (z.avail_in != 0 || raw_eof) return true;
        ssize_t n = read_raw(in.data(), in.size());
        if (n < 0) return false;
        if (n == 0) raw_eof = true;
        z.next_in = reinterpret_cast<Bytef*>(in.data());
        z.avail_in = static_cast<uInt>(n);
        return true;
    }

    // Decompressed bytes into `out`; 0 at the clean end, -1 on an error (decode_error set).
    ssize_t inflate_some() {
        z.next_out = reinterpret_cast<Bytef*>(out.data());
        z.avail_out = static_cast<uInt>(out.size());
        while (z.avail_out == out.size()) {
            if (gzip_end) return 0;
            if (!refill()) return -1;
            if (z.avail_in == 0 && raw_eof) {
                decode_error = "gzip: unexpected end of data";
                return -1;
            }
            int r = inflate(&z, Z_NO_FLUSH);
            if (r == Z_STREAM_END) {
                // Another gzip member may follow (concatenated .gz files are one stream).
                if (!refill()) return -1;
                if (z.avail_in == 0) {
                    gzip_end = true;
                } else if (z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b) {
                    inflateReset(&z);
                } else {
                    decode_error = "gzip: unexpected bytes after the compressed data";
                    return -1;
                }
            } else if (r != Z_OK && r != Z_BUF_ERROR) {
                decode_error = std::string("gzip: ") + (z.msg ? z.msg : "invalid data");
                return -1;
            } else if (r == Z_BUF_ERROR && z.avail_in == 0 && raw_eof) {
                decode_error = "gzip: unexpected end of data";
                return -1;
            }
        }
        return static_cast<ssize_t>(out.size() - z.avail_out);
    }
};

la_ssize_t on_read(struct archive* a, void* data, const void** out) {
    auto* s = static_cast<Source*>(data);
    // archive_filter_bytes(a, 0): bytes handed out by the outermost decompressor so far (ours,
    // for gzip: then libarchive sees a plain tar).
    const la_int64_t unpacked = archive_filter_bytes(a, 0);
    if (unpacked > 0 && static_cast<uint64_t>(unpacked) > s->max_unpacked) {
        s->over_unpacked = true;
        archive_set_error(a, EFBIG, "unpacked size limit reached");
        return -1;
    }
    if (s->decoded()) {
        ssize_t n = s->next();
        if (n < 0) {
            archive_set_error(a, EINVAL, "%s", s->decode_error.c_str());
            return -1;
        }
        *out = s->out.data();
        return n;
    }
    if (s->in_len > 0) {
        *out = s->in.data();
        return static_cast<la_ssize_t>(std::exchange(s->in_len, 0));
    }
    ssize_t n = s->read_raw(s->in.data(), s->in.size());
    if (n < 0) {
        archive_set_error(a, s->read_errno, "read: %s", std::strerror(s->read_errno));
        return -1;
    }
    *out = s->in.data();
    return n;
}

// The zip reader finds its central directory by seeking; without this callback it would fall back
// to reading local headers, which a crafted zip can make disagree with the central directory.
la_int64_t on_seek(struct archive*, void* data, la_int64_t offset, int whence) {
    auto* s = static_cast<Source*>(data);
    off_t r = ::lseek(s->fd, static_cast<off_t>(offset), whence);
    return r < 0 ? ARCHIVE_FATAL : static_cast<la_int64_t>(r);
}

struct ArchiveFree {
    void operator()(struct archive* a) const { archive_read_free(a); }
};

// A member's name split into components. "./" and empty components (a trailing '/') carry no
// meaning for where the member would go and are dropped; everything else is kept as it is.
struct Name {
    std::vector<std::string> parts;
    bool absolute = false;
    bool dotdot = false;
};

Name split_name(const std::string& raw) {
    Name n;
    n.absolute = !raw.empty() && raw[0] == '/';
    size_t i = 0;
    while (i <= raw.size()) {
        size_t j = raw.find('/', i);
        if (j == std::string::npos) j = raw.size();
        std::string part = raw.substr(i, j - i);
        if (part == "..") n.dotdot = true;
        if (!part.empty() && part != ".") n.parts.push_back(std::move(part));
        i = j + 1;
    }
    return n;
}

const char* type_name(struct archive_entry* e) {
    if (archive_entry_hardlink(e) != nullptr) return "hardlink";
    switch (archive_entry_filetype(e)) {
        case AE_IFREG:
            return "regular file";
        case AE_IFLNK:
            return "symlink";
        case AE_IFDIR:
            return "directory";
        case AE_IFCHR:
            return "character device";
        case AE_IFBLK:
            return "block device";
        case AE_IFIFO:
            return "fifo";
        case AE_IFSOCK:
            return "socket";
        default:
            return "unknown type";
    }
}

Failure refuse(const std::string& member, const std::string& rule) {
    return fail(Errc::invalid, "stage: " + member + ": " + rule);
}

bool zstd_magic(const Source& s) {
    static const uint8_t kZstd[4] = {0x28, 0xb5, 0x2f, 0xfd};
    return s.magic_len == 4 && std::memcmp(s.magic, kZstd, 4) == 0;
}

// The arguments' own rules, before any byte is read.
Status check_arguments(const std::string& binary, const ExtractLimits& limits) {
    if (binary.empty() || binary == "." || binary == ".." ||
        binary.find('/') != std::string::npos) {
        return fail(Errc::invalid,
                    "stage: binary name \"" + binary + "\" must be a single path component");
    }
    if (limits.max_binary_size == 0) {
        return fail(Errc::invalid, "stage: no size limit for the binary (max_binary_size is 0)");
    }
    return {};
}

// max_unpacked, or four times the binary's limit when it is not given.
uint64_t unpacked_limit(const ExtractLimits& limits) {
    if (limits.max_unpacked != 0) return limits.max_unpacked;
    return limits.max_binary_size > UINT64_MAX / 4 ? UINT64_MAX : 4 * limits.max_binary_size;
}

// One extraction, as steps over shared state: open the reader, walk every member (copying the
// one binary into a temp file), read the gzip stream to its trailer, then give the temp file its
// name. Any step's refusal leaves nothing under that name: the temp file goes with this object.
class Extraction {
  public:
    Extraction(int archive_fd, const std::string& binary, int dir_fd, const ExtractLimits& limits)
        : archive_fd_(archive_fd),
          binary_(binary),
          dir_fd_(dir_fd),
          limits_(limits),
          max_unpacked_(unpacked_limit(limits)) {}

    Result<Extracted> run() {
        if (auto ok = open(); !ok) return ok.fail();
        if (auto ok = read_members(); !ok) return ok.fail();
        if (src_.over_unpacked) return failure(found_);
        if (auto ok = drain(); !ok) return ok.fail();
        if (found_.empty()) {
            return refuse(binary_, "no member named " + binary_ +
                                       " at the top of the archive or under one top folder");
        }
        return commit();
    }

  private:
    Status open() {
        a_.reset(archive_read_new());
        if (!a_) return fail(Errc::system, "stage: out of memory creating the archive reader");
        // Only what releases are shipped as: each format registered here is code that reads
        // hostile bytes, and (in the static build) code linked into the binary. gzip, xz and zstd
        // are decoded by Source, within the budgets, before libarchive sees a tar.
        archive_read_support_format_tar(a_.get());
        src_.fd = archive_fd_;
        src_.max_unpacked = max_unpacked_;
        // A seekable archive is read from its start: zip's offsets count from there.
        const bool seekable = ::lseek(archive_fd_, 0, SEEK_SET) == 0;
        if (auto p = src_.prime(); !p) {
            return fail(Error(Errc::system, "stage: read archive: " + p.error().message(),
                              p.error().sys_errno()));
        }
        // zip: from its central directory when the fd can seek — the directory is what unzip and
        // the Go toolchain read, and a zip without a valid one (cut short, a flipped offset) is
        // then refused rather than read again from its local headers. A pipe only allows the
        // local headers.
        if (seekable) {
            // Its directory is loaded whole by libarchive: checked first, without allocating.
            // Not in a tar, whose last member may well be a zip (libarchive reads it as a tar).
            if (!src_.decoded() && !src_.ustar()) {
                ZipBudget budget;
                budget.max_members = limits_.max_members;
                if (auto ok = check_zip_directory(archive_fd_, budget); !ok) return ok;
            }
            archive_read_support_format_zip_seekable(a_.get());
        } else {
            archive_read_support_format_zip_streamable(a_.get());
        }
        archive_read_set_read_callback(a_.get(), on_read);
        archive_read_set_callback_data(a_.get(), &src_);
        // Seeking would bypass our gzip layer; plain tar and zip use it to skip members unread.
        if (seekable && !src_.decoded()) archive_read_set_seek_callback(a_.get(), on_seek);
        if (archive_read_open1(a_.get()) != ARCHIVE_OK) return failure("");
        return {};
    }

    // The reason for a failure of libarchive, in our words first: the limits and read errors we
    // caused ourselves, then its own text.
    Failure failure(const std::string& member) {
        const std::string who = member.empty() ? std::string("archive") : member;
        if (src_.over_unpacked) {
            return refuse(who, "refusing archive that unpacks to more than " +
                                   std::to_string(max_unpacked_) + " bytes (limit max_unpacked)");
        }
        if (src_.read_errno != 0) {
            return fail(Error(Errc::system,
                              "stage: read archive: " + std::string(std::strerror(src_.read_errno)),
                              src_.read_errno));
        }
        const char* why = archive_error_string(a_.get());
        std::string text = !src_.decode_error.empty() ? src_.decode_error
                           : why                      ? why
                                                      : "unknown error";
        if (src_.raw_bytes == 0) return refuse("archive", "refusing empty file");
        if (src_.decode_error.rfind("refusing", 0) == 0) return refuse(who, src_.decode_error);
        if (!MYR_HAVE_ZSTD && member.empty() && zstd_magic(src_)) {
            return refuse("archive", "zstd compression is not supported by this build");
        }
        if (member.empty() && src_.magic_len == 4 &&
            std::memcmp(src_.magic, "PK\x03\x04", 4) == 0 && archive_file_count(a_.get()) == 0) {
            return refuse("archive",
                          "truncated or corrupt archive: a zip without a valid central directory");
        }
        if (member.empty() && archive_file_count(a_.get()) == 0) {
            return refuse("archive", "not a tar or zip archive (gzip, xz, zstd or none): " + text);
        }
        return refuse(who, "truncated or corrupt archive: " + text);
    }

    // Every member to the archive's end: each name is judged, the binary is copied out.
    Status read_members() {
        for (;;) {
            struct archive_entry* e = nullptr;
            int r = archive_read_next_header(a_.get(), &e);
            if (r == ARCHIVE_EOF) return {};
            if (r != ARCHIVE_OK && r != ARCHIVE_WARN) return failure(found_);
            if (++members_ > limits_.max_members) {
                return refuse("archive", "refusing archive with more than " +
                                             std::to_string(limits_.max_members) +
                                             " members (limit max_members)");
            }
            const char* p = archive_entry_pathname(e);
            const std::string raw = p ? p : "";
            if (raw.empty()) return refuse("archive", "refusing member without a name");
            const Name name = split_name(raw);
            if (name.absolute) return refuse(raw, "refusing absolute member name");
            if (name.dotdot) return refuse(raw, "refusing member name with a '..' component");

            // A directory is never the binary: the top folder may well be named like it.
            const bool candidate = !name.parts.empty() && name.parts.back() == binary_ &&
                                   name.parts.size() <= 2 && archive_entry_filetype(e) != AE_IFDIR;
            if (!candidate) continue;  // read past: its data is skipped by the next header call
            if (auto ok = accept_binary(e, raw, name); !ok) return ok.fail();
            if (auto ok = copy_binary(raw); !ok) return ok.fail();
        }
    }

    // The member named like the binary must be the only one, a regular file, within the limit.
    Status accept_binary(struct archive_entry* e, const std::string& raw, const Name& name) {
        const std::string top = name.parts.size() == 2 ? name.parts[0] : "";
        if (!found_.empty()) {
            if (!found_top_.empty() && !top.empty() && found_top_ != top) {
                return refuse(raw, "refusing a second top folder holding " + binary_ + " (" +
                                       found_top_ + "/ and " + top + "/)");
            }
            return refuse(raw, "refusing duplicate member: " + found_ + " is the binary already");
        }
        if (archive_entry_hardlink(e) != nullptr || archive_entry_filetype(e) != AE_IFREG) {
            return refuse(raw, std::string("refusing ") + type_name(e) +
                                   " member (the binary must be a regular file)");
        }
        if (archive_entry_size_is_set(e) && archive_entry_size(e) >= 0 &&
            static_cast<uint64_t>(archive_entry_size(e)) > limits_.max_binary_size) {
            return refuse(raw, "refusing member of " + std::to_string(archive_entry_size(e)) +
                                   " bytes, over the limit of " +
                                   std::to_string(limits_.max_binary_size) + " (max_binary_size)");
        }
        if (archive_entry_size_is_set(e) && archive_entry_size(e) > 0) {
            if (auto ok = check_room(raw, static_cast<uint64_t>(archive_entry_size(e))); !ok) {
                return ok;
            }
        }
        found_ = raw;
        found_top_ = top;
        return {};
    }

    // Room first, from the member's own header (tar) or the central directory (zip): a binary that
    // cannot fit is refused before a byte of it is written. The error carries ENOSPC: the
    // installer counts it transient, as the write that would have failed.
    Status check_room(const std::string& raw, uint64_t size) const {
        auto sp = fsx::space_of(dir_fd_);
        if (!sp || sp->available >= size) return {};  // unknown: the writes will tell
        return fail(Error(Errc::system,
                          "stage: " + raw + ": not enough space on the volume: need " +
                              std::to_string(size) + ", have " + std::to_string(sp->available),
                          ENOSPC));
    }

    // The binary's bytes into a temp file in dir_fd, hashed on the way, within both limits.
    Status copy_binary(const std::string& raw) {
        auto t = fsx::TempFile::create(dir_fd_, binary_);
        if (!t) return t.fail("stage: " + raw);
        out_.emplace(std::move(*t));
        std::vector<char> buf(kBlock);
        for (;;) {
            la_ssize_t n = archive_read_data(a_.get(), buf.data(), buf.size());
            if (n == 0) return {};
            if (n < 0) return failure(raw);
            written_ += static_cast<uint64_t>(n);
            if ((archive_format(a_.get()) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_ZIP) {
                zip_data_ += static_cast<uint64_t>(n);
            }
            // The header's size is only a claim; what counts is what comes out.
            if (written_ > limits_.max_binary_size) {
                return refuse(raw, "refusing member over the limit of " +
                                       std::to_string(limits_.max_binary_size) +
                                       " bytes (max_binary_size)");
            }
            const la_int64_t seen = archive_filter_bytes(a_.get(), 0);
            if (zip_data_ + static_cast<uint64_t>(std::max<la_int64_t>(0, seen)) > max_unpacked_) {
                src_.over_unpacked = true;
                return failure(raw);
            }
            sha_.update(buf.data(), static_cast<size_t>(n));
            auto w = out_->write(std::string_view(buf.data(), static_cast<size_t>(n)));
            if (!w) return w.fail("stage: " + raw + ": write " + binary_);
        }
    }

    // libarchive stops at the tar's end-of-archive blocks; the gzip trailer after them (CRC-32,
    // length) is what proves the stream whole, so read to it.
    Status drain() {
        while (src_.decoded()) {
            ssize_t n = src_.next();
            if (n == 0) break;
            if (n < 0) return failure(found_);
            src_.drained += static_cast<uint64_t>(n);
            const la_int64_t seen = archive_filter_bytes(a_.get(), 0);
            if (static_cast<uint64_t>(std::max<la_int64_t>(0, seen)) + src_.drained >
                max_unpacked_) {
                src_.over_unpacked = true;
                return failure(found_);
            }
        }
        return {};
    }

    // commit() fails after its rename only at the directory fsync; the promise is still "nothing
    // under that name", so our file goes then — recognised by its inode, an older file is kept.
    Result<Extracted> commit() {
        struct stat mine {};
        const bool have_ino = ::fstat(out_->fd(), &mine) == 0;
        if (auto c = out_->commit(0755); !c) {
            struct stat now {};
            if (have_ino && ::fstatat(dir_fd_, binary_.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
                now.st_ino == mine.st_ino && now.st_dev == mine.st_dev) {
                (void)fsx::unlink_at(dir_fd_, binary_);
            }
            return c.fail("stage: " + found_ + ": " + binary_);
        }
        Extracted x;
        x.member = found_;
        x.size = written_;
        x.sha256_hex = hash::to_hex(sha_.finish());
        return x;
    }

    const int archive_fd_;
    const std::string& binary_;
    const int dir_fd_;
    const ExtractLimits& limits_;
    const uint64_t max_unpacked_;
    std::unique_ptr<struct archive, ArchiveFree> a_;
    Source src_;
    std::optional<fsx::TempFile> out_;
    std::string found_;      // the member being or having been extracted
    std::string found_top_;  // its top folder, "" when at the top
    uint64_t written_ = 0;
    hash::Sha256 sha_;
    uint64_t members_ = 0;
    uint64_t zip_data_ = 0;  // zip decompresses per member: the binary's bytes come on top
};

}  // namespace

Result<Extracted> extract_binary(int archive_fd, const std::string& binary, int dir_fd,
                                 const ExtractLimits& limits) {
    if (auto ok = check_arguments(binary, limits); !ok) return ok.fail();
    return Extraction(archive_fd, binary, dir_fd, limits).run();
}

}  // namespace myr::stage
