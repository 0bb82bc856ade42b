// The volume tests' own judge. Everything here looks at the volume with plain syscalls (lstat,
// readlink, readdir, read), parses the install marker itself with json-c and computes SHA-256 with
// its own implementation: nothing from src/ is linked in, so a bug in store/, journal/ or verify/
// cannot make a broken volume look healthy to the tests that use it. The driver's `state` document
// may still be printed next to a violation, to help reading it, but never decides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace myr::test::oracle {

// SHA-256 after FIPS 180-4, written for the tests (independent of verify/ and of mbedTLS).
class Sha256 {
  public:
    Sha256();
    void update(const void* data, size_t n);
    std::string hex();  // finishes; the object is spent afterwards

  private:
    void block(const uint8_t* p);
    uint32_t h_[8];
    uint8_t buf_[64];
    size_t used_ = 0;
    uint64_t total_ = 0;
};
std::string sha256_hex(std::string_view data);
// "" when the file cannot be read.
std::string sha256_file_hex(const std::string& path);

// One directory entry as the tests see it: its type and mode, then its bytes (regular file) or
// target (symlink). "" when absent.
std::string fingerprint(const std::string& path);

// A directory tree, relative name -> fingerprint, walked with lstat (links are not followed).
using Tree = std::map<std::string, std::string>;
Tree snapshot(const std::string& dir);
// What differs, one line per entry ("<where>/<name>: changed|removed|added").
std::vector<std::string> differences(const Tree& before, const Tree& after,
                                     const std::string& where);

// Names in a directory ("." and ".." left out; empty when it cannot be read).
std::vector<std::string> entries(const std::string& dir);

// The target of the symlink at `path`, "" when it is not a symlink.
std::string link_target(const std::string& path);

struct Layout {
    std::string install, state;
    std::string binary = "otelcol-contrib";
};

// What a volume must look like after recovery (and seeding).
struct Expected {
    std::string version;   // the version `current` must name; "" when `current` must be absent
    std::string sha256;    // the bytes that must be active; "" accepts whatever the marker says
    std::string reported;  // what the restart reported as active (volume.md, invariant 4)
    std::set<std::string> keep;       // other versions that must still be intact on disk
    std::set<std::string> broken_ok;  // versions/<v> a test broke on purpose (not judged)
    std::string aside;  // fingerprint of a journal that must have been moved aside, else ""
};

// The invariants of volume.md, judged with syscalls only:
//   1. `current` is a symlink `versions/<version>` to a real directory holding exactly the marker
//      and the binary; the marker parses (every field typed) and names that version and binary; the
//      binary is a regular file, owner-executable, of the marker's size, and its SHA-256 (computed
//      here) equals the marker's and the expected bytes'.
//   2. `.staging/` is empty; the install directory holds only `current`, `versions` and
//      `.staging`; every version directory holds only its marker and binary, both complete (no
//      temp file, no half-written entry anywhere); no journal; the state directory holds nothing
//      but an empty `spool/` and the expected corrupt journal, moved aside with its bytes.
//   4. The reported active version is `version`.
// (Invariant 3, the supervisor storage, is a tree comparison: see `differences`.)
std::vector<std::string> violations(const Layout& l, const Expected& e);

}  // namespace myr::test::oracle
