// libFuzzer target for the stage's memory budgets (docs/stage.md, "Budgets"): the input describes
// a release archive — format, compression and level, members (names, types, data or runs of
// zeros) and a few edits of the bytes made (the xz dictionary or zstd window a header declares,
// a cut, a flipped byte) — which libarchive's writer builds here, so that inputs stay
// structurally valid and reach the decoders' state rather than their header checks. A raw mode
// passes the bytes through. Each archive is staged with stage::extract_binary in process, under
// the limits a release is staged with (what the extraction child runs, without its RLIMIT_AS),
// and besides the invariants of stage_fuzz.hpp the target traps when the call raised the
// process's resident peak (VmHWM, reset before each call through /proc/self/clear_refs) by more
// than the stage's budget. ASan's quarantine is kept small (16 MiB), so that memory one decoder
// freed and the next allocates again is not counted twice.
//
// Input layout (bytes from the front; a short input ends the description early):
//   mode     0, 7: raw (the rest is the archive); 1 tar; 2 tar.gz; 3 tar.xz; 4 tar.zst;
//            5 zip stored; 6 zip deflated
//   flavour  tar: ustar, pax-restricted, pax, GNU (low 2 bits)
//   edits    bit 0: set the xz dictionary byte / zstd window byte to `knob`;
//            bit 1: cut at a 16-bit offset; bit 2: flip the byte at a 16-bit offset
//   knob     the xz LZMA2 dictionary property (35 = 768 MiB) or zstd window descriptor
//   level    compression level (bounded per filter)
//   count    members (at most 16), then each: kind, name choice [name], data mode, data
//            (even mode: a length byte and the bytes; odd: 16 x a 16-bit count of zeros; 0xff:
//            2 KiB x a 16-bit count of zeros, at most 96 MiB)
// The seeds (corpus/stage_archive/) are written by tests/fuzz/make_stage_seeds.py.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "stage/decoders.hpp"
#include "stage_fuzz.hpp"

namespace {

// The resident memory one extraction may add (docs/stage.md, "Budgets"): the largest xz
// dictionary or zstd window the stage opens a decoder for, filled, and 16 MiB for the rest
// (libarchive's state, the stage's buffers, ASan's shadow of it all).
constexpr long kBudgetKib = static_cast<long>(myr::stage::kMaxWindow >> 10) + 16 * 1024;
// A run of zeros in one member: enough to fill a 64 MiB window, little enough to stay quick.
constexpr uint64_t kMaxZeros = 96ull << 20;

// The input, read from the front.
class Input {
  public:
    Input(const uint8_t* data, size_t size) : p_(data), left_(size) {}
    uint8_t byte() {
        if (left_ == 0) return 0;
        --left_;
        return *p_++;
    }
    uint16_t u16() { return static_cast<uint16_t>(byte() | byte() << 8); }
    std::string bytes(size_t n) {
        n = std::min(n, left_);
        std::string s(reinterpret_cast<const char*>(p_), n);
        p_ += n;
        left_ -= n;
        return s;
    }
    std::string rest() { return bytes(left_); }
    bool empty() const { return left_ == 0; }

  private:
    const uint8_t* p_;
    size_t left_;
};

enum Mode : uint8_t { kRaw, kTar, kTarGz, kTarXz, kTarZst, kZipStored, kZipDeflated };

la_ssize_t on_write(struct archive*, void* out, const void* buf, size_t n) {
    static_cast<std::string*>(out)->append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
}

// The writer set up for `mode`; false when libarchive refuses the combination.
bool set_format(struct archive* a, Mode mode, uint8_t flavour, uint8_t level) {
    char opt[64];
    switch (mode) {
        case kZipStored:
        case kZipDeflated:
            if (archive_write_set_format_zip(a) != ARCHIVE_OK) return false;
            return archive_write_set_options(a, mode == kZipStored
                                                    ? "zip:compression=store"
                                                    : "zip:compression=deflate") == ARCHIVE_OK;
        default:
            break;
    }
    static int (*const kTarFormats[])(struct archive*) = {
        archive_write_set_format_ustar, archive_write_set_format_pax_restricted,
        archive_write_set_format_pax, archive_write_set_format_gnutar};
    if (kTarFormats[flavour & 3](a) != ARCHIVE_OK) return false;
    archive_write_set_bytes_in_last_block(a, 1);
    int r = ARCHIVE_OK;
    switch (mode) {
        case kTarGz:
            r = archive_write_add_filter_gzip(a);
            std::snprintf(opt, sizeof opt, "gzip:compression-level=%d", 1 + level % 9);
            break;
        case kTarXz:
            // Up to level 3 (a 4 MiB dictionary): the encoder's own memory grows ten times as
            // fast, and the large dictionaries are declared through the knob instead.
            r = archive_write_add_filter_xz(a);
            std::snprintf(opt, sizeof opt, "xz:compression-level=%d", level % 4);
            break;
        case kTarZst:
            r = archive_write_add_filter_zstd(a);
            std::snprintf(opt, sizeof opt, "zstd:compression-level=%d", 1 + level % 6);
            break;
        default:
            return true;
    }
    return r == ARCHIVE_OK && archive_write_set_options(a, opt) == ARCHIVE_OK;
}

std::string member_name(Input& in) {
    static const char* const kNames[] = {"otelcol-contrib",
                                         "./otelcol-contrib",
                                         "top/otelcol-contrib",
                                         "other/otelcol-contrib",
                                         "a/b/otelcol-contrib",
                                         "top/",
                                         "../escape",
                                         "/abs",
                                         "README.md"};
    constexpr uint8_t kFixed = sizeof kNames / sizeof kNames[0];
    const uint8_t choice = in.byte() % (kFixed + 2);
    if (choice < kFixed) return kNames[choice];
    if (choice == kFixed) {
        // Deep: up to 16,320 levels (32 KiB), past what a path may be.
        std::string deep;
        for (int i = in.byte() * 64; i > 0; --i) deep += "d/";
        return deep + "otelcol-contrib";
    }
    return in.bytes(in.byte());
}

// One member: its header, then its data (bytes of the input, or a run of zeros).
bool add_member(struct archive* a, Input& in) {
    static const unsigned kTypes[] = {AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFREG, AE_IFCHR, AE_IFIFO};
    const uint8_t kind = in.byte() % 6;
    const std::string name = member_name(in);
    const uint8_t data_mode = in.byte();
    std::string data;
    uint64_t zeros = 0;
    if (kTypes[kind] == AE_IFREG && kind != 3) {
        if (data_mode == 0xff) {
            // Rare (one data mode in 256), since it is slow: a run that fills a large window.
            zeros = std::min<uint64_t>(uint64_t{in.u16()} * 2048, kMaxZeros);
        } else if (data_mode & 1) {
            zeros = uint64_t{in.u16()} * 16;  // up to 1 MiB
        } else {
            data = in.bytes(in.byte());
        }
    }
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, kTypes[kind]);
    archive_entry_set_perm(e, 0755);
    if (kind == 2) archive_entry_set_symlink(e, "otelcol-contrib");
    if (kind == 3) archive_entry_set_hardlink(e, "otelcol-contrib");
    archive_entry_set_size(e, static_cast<la_int64_t>(data.size() + zeros));
    const int r = archive_write_header(a, e);
    archive_entry_free(e);
    if (r == ARCHIVE_FATAL) return false;
    if (r != ARCHIVE_OK) return true;  // a name or type this format cannot hold: left out
    if (!data.empty() && archive_write_data(a, data.data(), data.size()) < 0) return false;
    static const char kZeros[64 * 1024] = {};
    for (uint64_t left = zeros; left > 0;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(left, sizeof kZeros));
        if (archive_write_data(a, kZeros, n) < 0) return false;
        left -= n;
    }
    return true;
}

uint64_t varint(const std::string& s, size_t& at) {
    uint64_t v = 0;
    for (int shift = 0; at < s.size() && shift < 63; shift += 7) {
        const uint8_t b = static_cast<uint8_t>(s[at++]);
        v |= uint64_t{b & 0x7fu} << shift;
        if ((b & 0x80) == 0) break;
    }
    return v;
}

// The first xz block's LZMA2 dictionary property set to `knob`, the header's CRC-32 redone.
void set_xz_dictionary(std::string& xz, uint8_t knob) {
    const size_t hdr = 12;
    if (xz.size() < hdr + 8) return;
    const size_t len = (static_cast<uint8_t>(xz[hdr]) + 1u) * 4u;
    const uint8_t flags = static_cast<uint8_t>(xz[hdr + 1]);
    if (xz.size() < hdr + len || (flags & 3) != 0) return;
    size_t at = hdr + 2;
    if (flags & 0x40) varint(xz, at);
    if (flags & 0x80) varint(xz, at);
    const uint64_t id = varint(xz, at);
    const uint64_t props = varint(xz, at);
    if (id != 0x21 || props != 1 || at >= hdr + len - 4) return;
    xz[at] = static_cast<char>(knob);
    const uLong crc =
        crc32(0, reinterpret_cast<const Bytef*>(xz.data() + hdr), static_cast<uInt>(len - 4));
    for (size_t i = 0; i < 4; ++i) xz[hdr + len - 4 + i] = static_cast<char>(crc >> (8 * i));
}

// The zstd frame's window descriptor set to `knob` (present when the frame is not one segment).
void set_zstd_window(std::string& zst, uint8_t knob) {
    if (zst.size() > 6 && (static_cast<uint8_t>(zst[4]) & 0x20) == 0) {
        zst[5] = static_cast<char>(knob);
    }
}

// The archive the input describes; empty when the writer gave up.
std::string build(Input& in, Mode mode) {
    const uint8_t flavour = in.byte();
    const uint8_t edits = in.byte();
    const uint8_t knob = in.byte();
    const uint8_t level = in.byte();
    std::string out;
    struct archive* a = archive_write_new();
    bool ok = set_format(a, mode, flavour, level) &&
              archive_write_open(a, &out, nullptr, on_write, nullptr) == ARCHIVE_OK;
    for (int n = in.byte() % 17; ok && n > 0; --n) ok = add_member(a, in);
    ok = archive_write_close(a) == ARCHIVE_OK && ok;
    archive_write_free(a);
    if (!ok) return "";
    if (edits & 1) {
        if (mode == kTarXz) set_xz_dictionary(out, knob);
        if (mode == kTarZst) set_zstd_window(out, knob);
    }
    if ((edits & 2) && !out.empty()) out.resize(in.u16() % out.size());
    if ((edits & 4) && !out.empty()) out[in.u16() % out.size()] ^= static_cast<char>(0xff);
    return out;
}

long status_kib(const char* key) {
    char buf[4096];
    const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) std::abort();
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) std::abort();
    buf[n] = '\0';
    const char* at = std::strstr(buf, key);
    if (at == nullptr) std::abort();
    return std::strtol(at + std::strlen(key), nullptr, 10);
}

// VmHWM back to the current VmRSS (Linux 4.0), so that the next peak is this input's own.
void reset_peak() {
    const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "5", 1) != 1) {
        std::fprintf(stderr,
                     "fuzz_stage_archive: cannot reset VmHWM through /proc/self/clear_refs\n");
        std::abort();
    }
    ::close(fd);
}

}  // namespace

extern "C" const char* __asan_default_options() {
    return "quarantine_size_mb=16";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Input in(data, size);
    const auto mode = static_cast<Mode>(in.byte() % 8 % 7);
    const std::string archive = mode == kRaw ? in.rest() : build(in, mode);
    if (mode != kRaw && archive.empty()) return 0;

    // The limits a release with update.maxArtifactSize 32 MiB is staged with: the unpacked limit
    // (4 x) lets a declared dictionary or window fill well past the budget.
    myr::stage::ExtractLimits limits;
    limits.max_binary_size = 32 << 20;
    const int dir = myr::fuzz::staging_fd();
    const int fd =
        myr::fuzz::memfd_of(reinterpret_cast<const uint8_t*>(archive.data()), archive.size());
    reset_peak();
    const long before = status_kib("VmRSS:");
    auto r = myr::stage::extract_binary(fd, myr::fuzz::kBinary, dir, limits);
    const long grown = status_kib("VmHWM:") - before;
    ::close(fd);
    if (grown > kBudgetKib) {
        std::fprintf(stderr,
                     "fuzz_stage_archive: extract_binary raised the resident peak by %ld KiB, over "
                     "the stage's budget of %ld KiB (mode %d, %zu bytes, %s)\n",
                     grown, kBudgetKib, static_cast<int>(mode), archive.size(),
                     r ? "extracted" : r.error().message().c_str());
        std::abort();
    }
    myr::fuzz::check_outcome(r, dir, limits);
    return 0;
}
