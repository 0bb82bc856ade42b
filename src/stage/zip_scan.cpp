// check_zip_directory: the end records are found the way libarchive finds them (the last
// end-of-central-directory signature in the file's final 64 KiB + 22 bytes, the zip64 locator
// just before it), and the directory is walked where libarchive will read it: the declared size
// back from the end record. Every read goes into one fixed buffer.
#include "stage/zip_scan.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace myr::stage {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kLocator64Sig = 0x07064b50;
constexpr size_t kEndLen = 22;
constexpr size_t kMaxComment = 65535;

uint64_t le(const uint8_t* p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

Failure refuse(const std::string& rule) {
    return fail(Errc::invalid, "stage: archive: " + rule);
}

// What the end records say: where the directory is and how big.
struct Directory {
    uint64_t entries = 0;
    uint64_t size = 0;
    uint64_t end = 0;  // where the directory ends: the (zip64) end record's offset
};

class Scan {
  public:
    Scan(int fd, const ZipBudget& budget) : fd_(fd), budget_(budget), buf_(kEndLen + kMaxComment) {}

    Status run() {
        struct stat st {};
        if (::fstat(fd_, &st) != 0) return fail_errno("stage: archive: fstat");
        if (!S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(kEndLen)) return {};
        Directory d;
        auto found = find_end(static_cast<uint64_t>(st.st_size), d);
        if (!found) return found.fail();
        if (!*found) return {};
        if (d.entries > budget_.max_members) {
            return refuse("refusing zip whose directory declares " + std::to_string(d.entries) +
                          " entries, more than " + std::to_string(budget_.max_members) +
                          " (limit max_members)");
        }
        if (d.size > budget_.max_directory_bytes) {
            return refuse("refusing zip whose central directory is " + std::to_string(d.size) +
                          " bytes, over the limit of " +
                          std::to_string(budget_.max_directory_bytes));
        }
        if (d.size > d.end) return {};  // libarchive refuses a directory before the file's start
        return walk(d.end - d.size, d.end);
    }

  private:
    // Exactly `len` bytes at `at` into buf_; false when the file ends first.
    Result<bool> read_at(uint64_t at, size_t len) {
        size_t got = 0;
        while (got < len) {
            ssize_t n = ::pread(fd_, buf_.data() + got, len - got, static_cast<off_t>(at + got));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return fail_errno("stage: archive: read");
            if (n == 0) return false;
            got += static_cast<size_t>(n);
        }
        return true;
    }

    Result<bool> find_end(uint64_t file_size, Directory& d) {
        const size_t tail = static_cast<size_t>(std::min<uint64_t>(file_size, buf_.size()));
        const uint64_t base = file_size - tail;
        auto r = read_at(base, tail);
        if (!r || !*r) return r;
        for (size_t i = tail - kEndLen + 1; i-- > 0;) {
            const uint8_t* p = buf_.data() + i;
            if (le(p, 4) != kEndSig) continue;
            d.entries = le(p + 10, 2);
            d.size = le(p + 12, 4);
            d.end = base + i;
            return read_end64(d);
        }
        return false;
    }

    // The zip64 locator right before the end record, and the record it points to, win when
    // present (as in libarchive): the 16- and 32-bit fields are then only 0xffff… markers.
    Result<bool> read_end64(Directory& d) {
        if (d.end < 20) return true;
        auto r = read_at(d.end - 20, 20);
        if (!r) return r;
        if (!*r || le(buf_.data(), 4) != kLocator64Sig) return true;
        const uint64_t at = le(buf_.data() + 8, 8);
        if (at >= d.end) return true;
        r = read_at(at, 56);
        if (!r) return r;
        if (!*r || le(buf_.data(), 4) != kEnd64Sig) return true;
        d.entries = le(buf_.data() + 32, 8);
        d.size = le(buf_.data() + 40, 8);
        d.end = at;
        return true;
    }

    // Every directory entry, counted, and its method and its local header's checked.
    Status walk(uint64_t pos, uint64_t end) {
        uint64_t count = 0;
        while (pos + 46 <= end) {
            auto r = read_at(pos, 46);
            if (!r) return r.fail();
            if (!*r || le(buf_.data(), 4) != kCentralSig) return {};  // libarchive's to refuse
            if (++count > budget_.max_members) {
                return refuse("refusing zip whose directory holds more than " +
                              std::to_string(budget_.max_members) + " entries (limit max_members)");
            }
            const uint64_t method = le(buf_.data() + 10, 2);
            const size_t name_len = le(buf_.data() + 28, 2);
            const size_t extra_len = le(buf_.data() + 30, 2);
            const size_t comment_len = le(buf_.data() + 32, 2);
            uint64_t local = le(buf_.data() + 42, 4);
            const bool big_sizes = le(buf_.data() + 20, 4) == 0xffffffff;
            const bool big_usize = le(buf_.data() + 24, 4) == 0xffffffff;
            if (auto ok =
                    check_entry(pos, method, name_len, extra_len, local, big_usize, big_sizes);
                !ok) {
                return ok;
            }
            pos += 46 + name_len + extra_len + comment_len;
        }
        return {};
    }

    Status check_entry(uint64_t pos, uint64_t method, size_t name_len, size_t extra_len,
                       uint64_t local, bool big_usize, bool big_csize) {
        if (local == 0xffffffff) {
            auto r = read_at(pos + 46 + name_len, extra_len);
            if (!r) return r.fail();
            if (*r) local = zip64_offset(extra_len, big_usize, big_csize);
        }
        uint64_t local_method = method;
        auto r = read_at(local, 30);
        if (!r) return r.fail();
        if (*r && le(buf_.data(), 4) == kLocalSig) local_method = le(buf_.data() + 8, 2);
        if (stored_or_deflate(method) && stored_or_deflate(local_method)) return {};
        const uint64_t bad = stored_or_deflate(method) ? local_method : method;
        std::string name = "entry";
        if (auto n = read_at(pos + 46, std::min<size_t>(name_len, 200)); n && *n) {
            name.assign(reinterpret_cast<const char*>(buf_.data()),
                        std::min<size_t>(name_len, 200));
        }
        return fail(Errc::invalid, "stage: " + name +
                                       ": refusing zip member compressed with method " +
                                       std::to_string(bad) + " (only stored and deflate are read)");
    }

    // The local header's offset from a zip64 extra field (id 1) in buf_: its 8-byte values come in
    // the order uncompressed size, compressed size, offset, each only when its field was 0xffff….
    uint64_t zip64_offset(size_t extra_len, bool big_usize, bool big_csize) const {
        size_t i = 0;
        while (i + 4 <= extra_len) {
            const uint64_t id = le(buf_.data() + i, 2);
            const size_t len = le(buf_.data() + i + 2, 2);
            if (id == 1) {
                const size_t at = i + 4 + (big_usize ? 8 : 0) + (big_csize ? 8 : 0);
                if (at + 8 <= i + 4 + len && at + 8 <= extra_len) return le(buf_.data() + at, 8);
                break;
            }
            i += 4 + len;
        }
        return 0xffffffff;
    }

    static bool stored_or_deflate(uint64_t method) { return method == 0 || method == 8; }

    const int fd_;
    const ZipBudget& budget_;
    std::vector<uint8_t> buf_;
};

}  // namespace

Status check_zip_directory(int fd, const ZipBudget& budget) {
    return Scan(fd, budget).run();
}

}  // namespace myr::stage
