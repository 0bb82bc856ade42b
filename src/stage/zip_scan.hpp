// The zip directory checked before libarchive reads it. libarchive's seekable zip reader loads the
// whole central directory into memory (one node and its names per entry) before the first header
// is returned, so a count of members checked between headers comes too late: a million empty
// entries cost 160 MB. This scan reads the end records and walks the directory with a fixed
// buffer, allocating nothing per entry. docs/stage.md, "Budgets".
#pragma once

#include <cstdint>

#include "core/result.hpp"

namespace myr::stage {

struct ZipBudget {
    uint64_t max_members = 100000;
    uint64_t max_directory_bytes = 16u << 20;  // the central directory, as declared and as found
};

// For a seekable fd (read with pread, the offset is left alone): when the file ends in a zip's
// end-of-central-directory record (zip64 too), refuses with Errc::invalid a directory that
// declares or holds more entries or bytes than the budget, or an entry whose compression method
// (in the directory or in its local header, which libarchive trusts) is neither stored nor
// deflate: the other codecs (lzma, xz, bzip2, ppmd…) size their memory from the archive's bytes.
// A file with no such record passes: it is no zip, or one libarchive refuses by itself.
[[nodiscard]] Status check_zip_directory(int fd, const ZipBudget& budget);

}  // namespace myr::stage
