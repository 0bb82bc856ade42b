// Release archives made at test time with libarchive's writer: good ones and every hostile shape
// the staging rules refuse (links, devices, `..`, absolute names, duplicates…). zstd goes through
// the `zstd` command, since the static build may lack libzstd.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace myr::test {

struct Member {
    enum class Kind { file, dir, symlink, hardlink, chardev, fifo };
    Member(std::string n, std::string d = "", Kind k = Kind::file, std::string l = "",
           uint64_t z = 0)
        : name(std::move(n)), data(std::move(d)), kind(k), link(std::move(l)), zeros(z) {}
    std::string name;
    std::string data;
    Kind kind = Kind::file;
    std::string link;  // symlink target or hardlink source
    // A file member's size: its data's, or this many zero bytes when data is empty and it is set
    // (big members without holding them twice in memory).
    uint64_t zeros = 0;
};

enum class Format { tar, tar_gz, tar_xz, tar_zst, zip };
const char* to_string(Format f);

// The archive's bytes. Fails the test when libarchive (or zstd) refuses.
std::string make_archive(const std::vector<Member>& members, Format f);

// RAUC's flip_bits: `count` bytes from offset `at` (counted from the start) XORed with 0xff.
std::string flip_bytes(std::string data, size_t at, size_t count);

}  // namespace myr::test
