// libFuzzer target for stage::extract_binary: arbitrary bytes as a release archive, read from a
// memfd into a scratch staging directory. Besides the sanitizers, two invariants are checked on
// every input: a refusal leaves the directory empty (no temp file, no binary), and a success
// leaves exactly the binary, 0755, whose size and SHA-256 are what extract_binary reported.
// The seed corpus (corpus/archive/) holds small good and hostile archives of every kind.
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

namespace {

const char* const kBinary = "otelcol-contrib";

int staging_fd() {
    static int fd = [] {
        char tmpl[] = "/tmp/myr-fuzz-stage-XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) std::abort();
        return ::open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }();
    return fd;
}

int entries(int dirfd) {
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const int dir = staging_fd();
    int fd = ::memfd_create("archive", MFD_CLOEXEC);
    if (fd < 0) std::abort();
    for (size_t off = 0; off < size;) {
        ssize_t n = ::write(fd, data + off, size - off);
        if (n <= 0) std::abort();
        off += static_cast<size_t>(n);
    }
    myr::stage::ExtractLimits limits;
    limits.max_binary_size = 1 << 20;
    limits.max_unpacked = 8 << 20;
    limits.max_members = 1000;
    auto r = myr::stage::extract_binary(fd, kBinary, dir, limits);
    ::close(fd);
    if (!r) {
        if (entries(dir) != 0) std::abort();  // a refusal left something behind
        return 0;
    }
    if (entries(dir) != 1) std::abort();
    int bin = ::openat(dir, kBinary, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (bin < 0) std::abort();
    struct stat st {};
    if (::fstat(bin, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 07777) != 0755) {
        std::abort();
    }
    uint64_t got_size = 0;
    auto digest = myr::hash::sha256_fd(bin, &got_size);
    ::close(bin);
    if (!digest || got_size != r->size || myr::hash::to_hex(*digest) != r->sha256_hex) std::abort();
    if (r->size > limits.max_binary_size) std::abort();
    ::unlinkat(dir, kBinary, 0);
    return 0;
}
