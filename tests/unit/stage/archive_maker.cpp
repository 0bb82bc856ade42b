// Tar (ustar) and zip are written here byte by byte rather than with libarchive's writer: its
// static archive drags every writer in (xar needs libxml2, 7zip needs libzstd), and a test that
// writes the headers itself can put anything in them — devices, `..`, duplicates. Compression:
// gzip with zlib, xz and zstd with their commands.
#include "archive_maker.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>

#include "harness.hpp"

namespace myr::test {

const char* to_string(Format f) {
    switch (f) {
        case Format::tar:
            return "tar";
        case Format::tar_gz:
            return "tar.gz";
        case Format::tar_xz:
            return "tar.xz";
        case Format::tar_zst:
            return "tar.zst";
        case Format::zip:
            return "zip";
    }
    return "?";
}

namespace {

uint64_t size_of(const Member& m) {
    if (m.kind != Member::Kind::file) return 0;
    return m.data.empty() ? m.zeros : m.data.size();
}

void octal(char* field, size_t width, uint64_t value) {
    // width-1 digits and a NUL, as ustar wants.
    std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1),
                  static_cast<unsigned long long>(value));
}

std::string tar(const std::vector<Member>& members) {
    std::string out;
    for (const Member& m : members) {
        REQUIRE(m.name.size() < 100);
        REQUIRE(m.link.size() < 100);
        char h[512] = {};
        std::memcpy(h, m.name.data(), m.name.size());
        char type = '0';
        unsigned mode = 0755;
        switch (m.kind) {
            case Member::Kind::file:
                type = '0';
                break;
            case Member::Kind::dir:
                type = '5';
                break;
            case Member::Kind::symlink:
                type = '2';
                mode = 0777;
                break;
            case Member::Kind::hardlink:
                type = '1';
                break;
            case Member::Kind::chardev:
                type = '3';
                mode = 0666;
                break;
            case Member::Kind::fifo:
                type = '6';
                mode = 0644;
                break;
        }
        const uint64_t size = size_of(m);
        octal(h + 100, 8, mode);
        octal(h + 108, 8, 0);
        octal(h + 116, 8, 0);
        octal(h + 124, 12, size);
        octal(h + 136, 12, 1700000000);
        h[156] = type;
        std::memcpy(h + 157, m.link.data(), m.link.size());
        std::memcpy(h + 257, "ustar", 6);
        std::memcpy(h + 263, "00", 2);
        if (m.kind == Member::Kind::chardev) {
            octal(h + 329, 8, 1);  // /dev/null's 1:3
            octal(h + 337, 8, 3);
        }
        std::memset(h + 148, ' ', 8);
        unsigned sum = 0;
        for (unsigned char c : h) sum += c;
        std::snprintf(h + 148, 8, "%06o", sum);
        h[155] = ' ';
        out.append(h, sizeof h);
        if (m.kind == Member::Kind::file) {
            if (!m.data.empty()) {
                out += m.data;
            } else {
                out.append(static_cast<size_t>(m.zeros), '\0');
            }
            out.append((512 - size % 512) % 512, '\0');
        }
    }
    out.append(1024, '\0');
    return out;
}

// zlib's deflate; window_bits 15 + 16 writes a gzip file, -15 raw deflate (zip's method 8).
std::string deflate_bytes(const std::string& in, int window_bits) {
    z_stream z{};
    REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    std::string out(deflateBound(&z, in.size()) + 16, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

// `compressor -c in > out`.
std::string by_command(const std::string& compressor, const std::string& in) {
    TempDir dir;
    write_file(dir / "in", in);
    auto r = run({"/bin/sh", "-c", compressor + " -q -c \"$0\" > \"$1\"", dir / "in", dir / "out"});
    REQUIRE_MESSAGE(r.exit_code == 0, compressor << ": " << r.err);
    return read_file(dir / "out");
}

void le16(std::string& s, unsigned v) {
    s.push_back(static_cast<char>(v & 0xff));
    s.push_back(static_cast<char>((v >> 8) & 0xff));
}
void le32(std::string& s, uint32_t v) {
    le16(s, v & 0xffff);
    le16(s, v >> 16);
}

// Deflate for files, stored for directories and symlinks; "made by Unix", so that the mode in the
// external attributes says what a member is.
std::string zip(const std::vector<Member>& members) {
    std::string out, central;
    for (const Member& m : members) {
        std::string data;
        uint32_t mode = 0;
        switch (m.kind) {
            case Member::Kind::file:
                data = m.data.empty() ? std::string(static_cast<size_t>(m.zeros), '\0') : m.data;
                mode = S_IFREG | 0755;
                break;
            case Member::Kind::dir:
                mode = S_IFDIR | 0755;
                break;
            case Member::Kind::symlink:
                data = m.link;
                mode = S_IFLNK | 0777;
                break;
            default:
                FAIL("zip has no " << static_cast<int>(m.kind) << " members");
        }
        const uint32_t crc =
            crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
        const bool deflated = m.kind == Member::Kind::file;
        const std::string packed = deflated ? deflate_bytes(data, -15) : data;
        const uint32_t offset = static_cast<uint32_t>(out.size());
        auto common = [&](std::string& s) {
            le16(s, 20);                        // version needed
            le16(s, 0);                         // flags
            le16(s, deflated ? 8 : 0);          // method
            le16(s, 0);                         // time
            le16(s, (44 << 9) | (1 << 5) | 1);  // date: 2024-01-01
            le32(s, crc);
            le32(s, static_cast<uint32_t>(packed.size()));
            le32(s, static_cast<uint32_t>(data.size()));
            le16(s, static_cast<unsigned>(m.name.size()));
            le16(s, 0);  // extra
        };
        le32(out, 0x04034b50);
        common(out);
        out += m.name;
        out += packed;
        le32(central, 0x02014b50);
        le16(central, (3 << 8) | 20);  // made by Unix
        common(central);
        le16(central, 0);  // comment
        le16(central, 0);  // disk
        le16(central, 0);  // internal attributes
        le32(central, mode << 16);
        le32(central, offset);
        central += m.name;
    }
    const uint32_t cd_offset = static_cast<uint32_t>(out.size());
    out += central;
    le32(out, 0x06054b50);
    le16(out, 0);
    le16(out, 0);
    le16(out, static_cast<unsigned>(members.size()));
    le16(out, static_cast<unsigned>(members.size()));
    le32(out, static_cast<uint32_t>(central.size()));
    le32(out, cd_offset);
    le16(out, 0);
    return out;
}

}  // namespace

std::string make_archive(const std::vector<Member>& members, Format f) {
    switch (f) {
        case Format::tar:
            return tar(members);
        case Format::tar_gz:
            return deflate_bytes(tar(members), 15 + 16);
        case Format::tar_xz:
            return by_command("xz", tar(members));
        case Format::tar_zst:
            return by_command("zstd", tar(members));
        case Format::zip:
            return zip(members);
    }
    FAIL("unknown format");
    return "";
}

std::string flip_bytes(std::string data, size_t at, size_t count) {
    for (size_t i = at; i < at + count && i < data.size(); ++i) {
        data[i] = static_cast<char>(data[i] ^ 0xff);
    }
    return data;
}

}  // namespace myr::test
