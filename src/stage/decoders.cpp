// The two decoders over liblzma and libzstd, each with the window budget of decoders.hpp.
#include "stage/decoders.hpp"

#include <lzma.h>

#include <string>

#if MYR_HAVE_ZSTD
#include <zstd.h>
#include <zstd_errors.h>
#endif

namespace myr::stage {
namespace {

// liblzma counts the dictionary and its own state (a few dozen KiB) against the limit.
constexpr uint64_t kXzMemlimit = kMaxWindow + (1u << 20);

class XzDecoder final : public StreamDecoder {
  public:
    bool open(std::string& why) {
        // CONCATENATED: `xz` may write several streams one after the other, like gzip members.
        const lzma_ret r = lzma_stream_decoder(&s_, kXzMemlimit, LZMA_CONCATENATED);
        if (r != LZMA_OK)
            why = "xz: the decoder could not be set up (liblzma code " +
                  std::to_string(static_cast<int>(r)) + ")";
        return r == LZMA_OK;
    }
    ~XzDecoder() override { lzma_end(&s_); }

    Step decode(const uint8_t*& in, size_t& in_len, bool finish, uint8_t* out,
                size_t& out_len) override {
        s_.next_in = in;
        s_.avail_in = in_len;
        s_.next_out = out;
        s_.avail_out = out_len;
        const lzma_ret r = lzma_code(&s_, finish ? LZMA_FINISH : LZMA_RUN);
        in = s_.next_in;
        in_len = s_.avail_in;
        out_len -= s_.avail_out;
        switch (r) {
            case LZMA_OK:
                return Step::more;
            case LZMA_STREAM_END:
                return Step::end;
            case LZMA_MEMLIMIT_ERROR:
                error_ = "refusing xz stream whose dictionary needs " +
                         std::to_string(lzma_memusage(&s_)) +
                         " bytes to decode, over the limit of " + std::to_string(kXzMemlimit) +
                         " (a dictionary of at most " + std::to_string(kMaxWindow) + " bytes)";
                return Step::error;
            case LZMA_BUF_ERROR:
                // Only returned when no progress is possible: with LZMA_FINISH, the input ended.
                if (!finish) return Step::more;
                error_ = "xz: unexpected end of data";
                return Step::error;
            case LZMA_DATA_ERROR:
                error_ = "xz: corrupt data";
                return Step::error;
            case LZMA_FORMAT_ERROR:
                error_ = "xz: not an xz stream";
                return Step::error;
            case LZMA_OPTIONS_ERROR:
                error_ = "xz: unsupported options";
                return Step::error;
            default:
                error_ = "xz: decoding failed (liblzma code " +
                         std::to_string(static_cast<int>(r)) + ")";
                return Step::error;
        }
    }

  private:
    lzma_stream s_ = LZMA_STREAM_INIT;
};

#if MYR_HAVE_ZSTD
class ZstdDecoder final : public StreamDecoder {
  public:
    bool open(std::string& why) {
        d_ = ZSTD_createDStream();
        if (d_ == nullptr) {
            why = "zstd: the decoder could not be set up";
            return false;
        }
        // log2 of kMaxWindow: a frame declaring a larger window is refused before any
        // allocation for it.
        int log = 0;
        while ((uint64_t{1} << (log + 1)) <= kMaxWindow) ++log;
        ZSTD_DCtx_setParameter(d_, ZSTD_d_windowLogMax, log);
        return true;
    }
    ~ZstdDecoder() override { ZSTD_freeDStream(d_); }

    Step decode(const uint8_t*& in, size_t& in_len, bool finish, uint8_t* out,
                size_t& out_len) override {
        ZSTD_inBuffer i{in, in_len, 0};
        ZSTD_outBuffer o{out, out_len, 0};
        const size_t r = ZSTD_decompressStream(d_, &o, &i);
        in += i.pos;
        in_len -= i.pos;
        out_len = o.pos;
        if (ZSTD_isError(r)) {
            if (ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
                error_ = "refusing zstd frame whose window is over the limit of " +
                         std::to_string(kMaxWindow) + " bytes";
            } else {
                error_ = std::string("zstd: ") + ZSTD_getErrorName(r);
            }
            return Step::error;
        }
        // 0: a frame was completed and flushed; another may follow. Past the input's end, a call
        // that writes nothing more ends the stream: cleanly only between frames.
        // A call that used nothing and wrote nothing only says what the next frame would need.
        if (i.pos != 0 || o.pos != 0) frame_done_ = r == 0;
        if (finish && in_len == 0 && out_len == 0) {
            if (frame_done_) return Step::end;
            error_ = "zstd: unexpected end of data";
            return Step::error;
        }
        return Step::more;
    }

  private:
    ZSTD_DStream* d_ = nullptr;
    bool frame_done_ = false;
};
#endif

template <typename D>
std::unique_ptr<StreamDecoder> opened(std::string& why) {
    auto d = std::make_unique<D>();
    if (!d->open(why)) return nullptr;
    return d;
}

}  // namespace

std::unique_ptr<StreamDecoder> make_xz_decoder(std::string& why) {
    return opened<XzDecoder>(why);
}

#if MYR_HAVE_ZSTD
std::unique_ptr<StreamDecoder> make_zstd_decoder(std::string& why) {
    return opened<ZstdDecoder>(why);
}
#endif

}  // namespace myr::stage
