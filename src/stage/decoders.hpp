// xz and zstd decompressed by stage/ itself, in front of libarchive (as gzip is, extract.cpp):
// libarchive 3.6 opens liblzma with no memory limit and libzstd with its default window limit of
// 128 MiB, and neither has an option to lower them. A stream declares the memory its decoder
// needs (an LZMA2 dictionary, a zstd window) and the decoder allocates it, so an archive of a few
// hundred KiB could make the reader take 768 MiB. Here both decoders are opened with the budget
// (docs/stage.md, "Budgets"), for every block and every frame of the stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace myr::stage {

// The largest xz dictionary and zstd window read: what `xz -9` and `zstd --long` (2^26 and
// below) write; the real collector releases are .tar.gz, with zlib's 32 KiB window.
constexpr uint64_t kMaxWindow = 64u << 20;

class StreamDecoder {
  public:
    enum class Step { more, end, error };
    virtual ~StreamDecoder() = default;
    // Decompresses from `in` (advanced past what was used) into `out` (`out_len`: its capacity,
    // then what was written). `finish`: no input follows what is given. `end` when the stream
    // ended there; `error` with error() set (corrupt, cut short, or over the budget: then the
    // text starts with "refusing").
    virtual Step decode(const uint8_t*& in, size_t& in_len, bool finish, uint8_t* out,
                        size_t& out_len) = 0;
    const std::string& error() const { return error_; }

  protected:
    std::string error_;
};

// Null (and `why` set) when the library cannot set up a decoder.
std::unique_ptr<StreamDecoder> make_xz_decoder(std::string& why);
#if MYR_HAVE_ZSTD
std::unique_ptr<StreamDecoder> make_zstd_decoder(std::string& why);
#endif

}  // namespace myr::stage
