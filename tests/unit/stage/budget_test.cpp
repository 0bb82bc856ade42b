// The archive budgets (docs/stage.md, "Budgets"): hostile archives that are valid to their last
// byte but ask the reader for memory — a zip whose central directory lists a million entries, an
// xz stream declaring a 768 MiB dictionary, a zstd frame with a 128 MiB window. Each is staged in
// a forked process so that its peak resident set (wait4's ru_maxrss) is the extraction's own.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <lzma.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <string_view>

#include "archive_maker.hpp"
#include "harness.hpp"
#include "stage/extract.hpp"

using namespace myr;
using myr::test::Format;
using myr::test::Member;

namespace {

const std::string kBin = "otelcol-contrib";
constexpr long kBudgetKiB = 64 * 1024;  // the resident budget of the stage, as in docs/stage.md

// Under AddressSanitizer a forked child's peak counts the parent's quarantine (freed memory kept
// resident, the archives among it) and the shadow: those figures are the sanitizer's, so that
// build checks the verdicts only. The static stage checks the figures.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kPeakIsOurs = false;
#else
constexpr bool kPeakIsOurs = true;
#endif

// 96 MiB of zeros before the binary: more output than the budget, to fill a decoder's window.
std::vector<Member> release() {
    return {{"filler", "", Member::Kind::file, "", 96ull << 20}, {kBin, "binary"}};
}

void put16(std::string& s, uint32_t v) {
    for (int i = 0; i < 2; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
void put32(std::string& s, uint32_t v) {
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
void put64(std::string& s, uint64_t v) {
    for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}

// The compression methods the binary's entry claims: in the central directory, in its local header.
struct Methods {
    uint32_t central = 0;
    uint32_t local = 0;
};

// A stored zip of `n` empty members `d/0000000`… and then the binary: local headers, a central
// directory, and (past 65535 entries) the zip64 end records, as Python's zipfile writes them.
std::string many_member_zip(uint32_t n, Methods bin_methods = {}) {
    std::string local, central;
    Methods m;
    auto add = [&](const std::string& name, const std::string& data) {
        const uint32_t offset = static_cast<uint32_t>(local.size());
        const uint32_t crc = static_cast<uint32_t>(
            crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
        put32(local, 0x04034b50);
        for (uint32_t v : {20u, 0u, m.local, 0u, 0u}) put16(local, v);  // version flags method …
        put32(local, crc);
        put32(local, static_cast<uint32_t>(data.size()));
        put32(local, static_cast<uint32_t>(data.size()));
        put16(local, static_cast<uint32_t>(name.size()));
        put16(local, 0);
        local += name + data;
        put32(central, 0x02014b50);
        for (uint32_t v : {20u, 20u, 0u, m.central, 0u, 0u}) put16(central, v);
        put32(central, crc);
        put32(central, static_cast<uint32_t>(data.size()));
        put32(central, static_cast<uint32_t>(data.size()));
        put16(central, static_cast<uint32_t>(name.size()));
        for (uint32_t v : {0u, 0u, 0u, 0u}) put16(central, v);  // extra comment disk internal
        put32(central, 0);                                      // external attributes
        put32(central, offset);
        central += name;
    };
    char name[16];
    for (uint32_t i = 0; i < n; ++i) {
        std::snprintf(name, sizeof name, "d/%07u", i);
        add(name, "");
    }
    m = bin_methods;
    add(kBin, "binary");
    const uint64_t entries = uint64_t{n} + 1;
    std::string out = local + central;
    const uint64_t z64 = out.size();
    put32(out, 0x06064b50);
    put64(out, 44);
    put16(out, 45);
    put16(out, 45);
    put32(out, 0);
    put32(out, 0);
    put64(out, entries);
    put64(out, entries);
    put64(out, central.size());
    put64(out, local.size());
    put32(out, 0x07064b50);
    put32(out, 0);
    put64(out, z64);
    put32(out, 1);
    put32(out, 0x06054b50);
    put16(out, 0);
    put16(out, 0);
    put16(out, entries > 0xffff ? 0xffff : static_cast<uint32_t>(entries));
    put16(out, entries > 0xffff ? 0xffff : static_cast<uint32_t>(entries));
    put32(out, static_cast<uint32_t>(central.size()));
    put32(out, static_cast<uint32_t>(local.size()));
    put16(out, 0);
    return out;
}

// The release as a tar.xz of preset 0 (fast on 96 MiB; its dictionary is 256 KiB), made once.
const std::string& release_xz() {
    static const std::string xz = [] {
        const std::string tar = myr::test::make_archive(release(), Format::tar);
        std::string out(tar.size() / 100 + 65536, '\0');
        size_t pos = 0;
        REQUIRE(lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, nullptr,
                                        reinterpret_cast<const uint8_t*>(tar.data()), tar.size(),
                                        reinterpret_cast<uint8_t*>(out.data()), &pos,
                                        out.size()) == LZMA_OK);
        out.resize(pos);
        return out;
    }();
    return xz;
}

// A good tar.xz whose first block header is rewritten to declare another LZMA2 dictionary (the
// props byte, then the header's CRC-32). The data needs far less, so it still decodes: only the
// declaration asks for memory. `props` 35 is 768 MiB, 28 is 64 MiB (xz -9).
std::string xz_with_dict(uint8_t props) {
    std::string xz = release_xz();
    // Stream header (12 bytes), then the block header: size, flags, the sizes when the flags say
    // so (0x40, 0x80: variable-length integers), filter id 0x21, props size 1, the dictionary
    // byte, padding, CRC-32 over the header before it.
    REQUIRE(xz.size() > 24);
    const size_t hdr = 12;
    const size_t hdr_len = (static_cast<uint8_t>(xz[hdr]) + 1) * 4;
    const uint8_t flags = static_cast<uint8_t>(xz[hdr + 1]);
    REQUIRE((flags & 0x03) == 0);  // one filter
    size_t at = hdr + 2;
    for (int sizes = ((flags & 0x40) ? 1 : 0) + ((flags & 0x80) ? 1 : 0); sizes > 0; --sizes) {
        while (static_cast<uint8_t>(xz[at]) & 0x80) ++at;
        ++at;
    }
    REQUIRE(static_cast<uint8_t>(xz[at]) == 0x21);
    REQUIRE(static_cast<uint8_t>(xz[at + 1]) == 1);
    xz[at + 2] = static_cast<char>(props);
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(xz.data() + hdr), static_cast<uInt>(hdr_len - 4)));
    for (int i = 0; i < 4; ++i) xz[hdr + hdr_len - 4 + i] = static_cast<char>(crc >> (8 * i));
    return xz;
}

// A tar in one zstd frame of raw blocks whose header declares a window of 2^`window_log` bytes
// and no content size, as `zstd --long=27` writes for a stream.
std::string zst_with_window(unsigned window_log) {
    std::string tar = myr::test::make_archive(release(), Format::tar);
    std::string out;
    put32(out, 0xfd2fb528);
    out.push_back(0);                                          // no content size, no checksum
    out.push_back(static_cast<char>((window_log - 10) << 3));  // the window descriptor
    for (size_t at = 0; at < tar.size(); at += 64 * 1024) {
        const size_t len = std::min<size_t>(64 * 1024, tar.size() - at);
        const uint32_t last = at + len == tar.size() ? 1 : 0;
        // Within this block only: a search to the end of the tar from every block is quadratic
        // (96 MiB of zeros, 1536 blocks), which took half an hour in the ASan build.
        const bool zeros =
            std::string_view(tar).substr(at, len).find_first_not_of('\0') == std::string_view::npos;
        // type 1 (RLE) repeats one byte `len` times, type 0 (raw) carries the bytes.
        const uint32_t header = last | (zeros ? 2u : 0u) | (static_cast<uint32_t>(len) << 3);
        for (int i = 0; i < 3; ++i) out.push_back(static_cast<char>(header >> (8 * i)));
        out += zeros ? std::string(1, '\0') : tar.substr(at, len);
    }
    return out;
}

struct Outcome {
    bool ok = false;
    std::string message;
    long peak_kib = 0;
};

// extract_binary in a forked process: its result comes back over a pipe, its peak RSS from wait4.
// The archive's memory is given back before the fork, so the child's peak is its own.
Outcome stage_in_child(std::string archive, uint64_t max_members = 100000) {
    myr::test::TempDir dir;
    REQUIRE(::mkdir((dir / "staging").c_str(), 0700) == 0);
    myr::test::write_file(dir / "release", archive);
    std::string().swap(archive);
    int p[2];
    REQUIRE(::pipe(p) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(p[0]);
        int afd = ::open((dir / "release").c_str(), O_RDONLY | O_CLOEXEC);
        int dfd = ::open((dir / "staging").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        stage::ExtractLimits l;
        l.max_binary_size = 256 << 20;  // max_unpacked is then 1 GiB: no limit for these
        l.max_members = max_members;
        auto r = stage::extract_binary(afd, kBin, dfd, l);
        const std::string msg = r ? "ok" : r.error().message();
        (void)!::write(p[1], msg.data(), msg.size());
        ::_exit(r ? 0 : 1);
    }
    ::close(p[1]);
    Outcome o;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(p[0], buf, sizeof buf)) > 0) o.message.append(buf, static_cast<size_t>(n));
    ::close(p[0]);
    int status = 0;
    struct rusage ru {};
    REQUIRE(::wait4(pid, &status, 0, &ru) == pid);
    REQUIRE(WIFEXITED(status));
    o.ok = WEXITSTATUS(status) == 0;
    o.peak_kib = ru.ru_maxrss;
    MESSAGE("peak " << o.peak_kib << " KiB: " << o.message);
    return o;
}

// Over the window budget: refused before the decoder takes the memory. At it: extracted, the
// decoder's window filled by the 96 MiB of zeros (64 MiB and a little more).
void check_window_budget(std::string over, std::string at, const std::string& rule) {
    auto o = stage_in_child(std::move(over));
    CHECK_FALSE(o.ok);
    CHECK(o.message.find(rule) != std::string::npos);
    if (kPeakIsOurs) CHECK(o.peak_kib < kBudgetKiB);
    auto good = stage_in_child(std::move(at));
    CHECK(good.ok);
    if (kPeakIsOurs) CHECK(good.peak_kib < kBudgetKiB + 80 * 1024);
}

}  // namespace

TEST_CASE("stage budget: a zip listing a million entries is refused within the resident budget") {
    auto o = stage_in_child(many_member_zip(1000000));
    CHECK_FALSE(o.ok);
    CHECK(o.message.find("1000001 entries") != std::string::npos);
    CHECK(o.message.find("max_members") != std::string::npos);
    if (kPeakIsOurs) CHECK(o.peak_kib < kBudgetKiB);
}

TEST_CASE("stage budget: an xz stream declaring a 768 MiB dictionary is refused, 64 MiB is not") {
    check_window_budget(xz_with_dict(35), xz_with_dict(28), "refusing xz stream whose dictionary");
}

#if MYR_HAVE_ZSTD
TEST_CASE("stage budget: a zstd frame with a 128 MiB window is refused, 64 MiB is not") {
    check_window_budget(zst_with_window(27), zst_with_window(26),
                        "refusing zstd frame whose window");
}
#endif

TEST_CASE(
    "stage budget: a zip at the end of a plain tar is a member, not the archive's directory") {
    // The zip's end records are the last bytes of the tar but its end blocks: the directory scan
    // would refuse its 31 entries; libarchive reads a tar of 2 members.
    const std::string tar = myr::test::make_archive(
        {{"inner.zip", many_member_zip(30)}, {kBin, "binary"}}, Format::tar);
    auto o = stage_in_child(tar, 20);
    CHECK(o.ok);
    CHECK(stage_in_child(many_member_zip(30), 20).message.find("declares 31 entries") !=
          std::string::npos);
}

TEST_CASE("stage budget: a zip member compressed otherwise than stored or deflate is refused") {
    // lzma (14), bzip2 (12), xz (95), ppmd (98) decoders size their memory from the archive: the
    // method is judged in the directory and in the local header, which libarchive trusts.
    for (Methods m : {Methods{14, 14}, Methods{0, 14}, Methods{98, 0}}) {
        CAPTURE(m.central);
        CAPTURE(m.local);
        auto o = stage_in_child(many_member_zip(3, m));
        CHECK_FALSE(o.ok);
        CHECK(o.message == "stage: " + kBin + ": refusing zip member compressed with method " +
                               std::to_string(m.central != 0 ? m.central : m.local) +
                               " (only stored and deflate are read)");
    }
    CHECK(stage_in_child(many_member_zip(3)).ok);
}
