// Shared by the stage's fuzz targets (fuzz_archive.cpp, fuzz_stage_archive.cpp): the archive in a
// memfd, a scratch staging directory, and the invariants checked after every extract_binary:
// a refusal leaves the directory empty (no temp file, no binary), and a success leaves exactly
// the binary, 0755, whose size and SHA-256 are what extract_binary reported, within the limit.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "hash/sha256.hpp"
#include "stage/extract.hpp"

namespace myr::fuzz {

inline const char* const kBinary = "otelcol-contrib";

// A scratch directory on tmpfs where there is one (every success fsyncs the binary and the
// directory, which on a disk costs more than the extraction), removed at a normal exit; each
// input leaves it empty.
inline int staging_fd() {
    static char shm[] = "/dev/shm/myr-fuzz-stage-XXXXXX";
    static char tmp[] = "/tmp/myr-fuzz-stage-XXXXXX";
    static const char* dir = nullptr;
    static int fd = [] {
        dir = ::mkdtemp(shm) != nullptr ? shm : ::mkdtemp(tmp);
        if (dir == nullptr) std::abort();
        std::atexit([] { ::rmdir(dir); });
        return ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }();
    return fd;
}

inline int entries(int dirfd) {
    int dup = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* d = ::fdopendir(dup);
    if (d == nullptr) std::abort();
    int n = 0;
    while (struct dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name != "." && name != "..") ++n;
    }
    ::closedir(d);
    return n;
}

// `size` bytes in a new memfd, at offset 0 of a seekable fd as a downloaded artifact is.
inline int memfd_of(const uint8_t* data, size_t size) {
    int fd = ::memfd_create("archive", MFD_CLOEXEC);
    if (fd < 0) std::abort();
    for (size_t off = 0; off < size;) {
        ssize_t n = ::write(fd, data + off, size - off);
        if (n <= 0) std::abort();
        off += static_cast<size_t>(n);
    }
    return fd;
}

// Aborts when the outcome of extract_binary into `dir` breaks an invariant; leaves `dir` empty.
inline void check_outcome(const Result<stage::Extracted>& r, int dir,
                          const stage::ExtractLimits& limits) {
    if (!r) {
        if (entries(dir) != 0) std::abort();  // a refusal left something behind
        return;
    }
    if (entries(dir) != 1) std::abort();
    int bin = ::openat(dir, kBinary, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (bin < 0) std::abort();
    struct stat st {};
    if (::fstat(bin, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 07777) != 0755) {
        std::abort();
    }
    uint64_t got_size = 0;
    auto digest = hash::sha256_fd(bin, &got_size);
    ::close(bin);
    if (!digest || got_size != r->size || hash::to_hex(*digest) != r->sha256_hex) std::abort();
    if (r->size > limits.max_binary_size) std::abort();
    ::unlinkat(dir, kBinary, 0);
}

}  // namespace myr::fuzz
