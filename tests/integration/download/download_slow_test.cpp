// A 200 MiB download over https with flat memory (suite slow).
#include <doctest/doctest.h>
#include <sys/mount.h>

#include "download_rig.hpp"

using namespace myr;
using namespace myr::download;
using namespace myr::test;
using namespace myr::test::dl;

namespace {

// Peak resident set of this process so far (VmHWM), in KiB.
long peak_rss_kib() {
    const std::string s = read_file("/proc/self/status");
    const size_t at = s.find("VmHWM:");
    return at == std::string::npos ? -1 : std::stol(s.substr(at + 6));
}

}  // namespace

TEST_CASE("download: a large file streams over https with flat memory") {
    Rig rig(true);
    // 200 MB written in 1 MiB pieces, so the test itself never holds the file either.
    const std::string piece = pattern(1u << 20, 11);
    hash::Sha256 h;
    {
        std::string big = rig.files + "/large.bin";
        FILE* f = std::fopen(big.c_str(), "wb");
        REQUIRE(f != nullptr);
        for (int i = 0; i < 200; ++i) {
            REQUIRE(std::fwrite(piece.data(), 1, piece.size(), f) == piece.size());
            h.update(piece);
        }
        std::fclose(f);
    }
    const std::string hex = hash::to_hex(h.finish());
    const long before = peak_rss_kib();
    auto f = fetch(rig.loop, rig.options(),
                   Request{rig.server->url("https", "large.bin"), {}, hex, 1ull << 30}, 240s);
    REQUIRE(f.done);
    if (!f.done->ok()) FAIL(f.done->error().message());
    CHECK((*f.done)->sha256_hex == hex);
    CHECK((*f.done)->size == 200ull << 20);
    const long after = peak_rss_kib();
    MESSAGE("peak RSS " << before << " KiB before, " << after << " KiB after 200 MiB");
    CHECK(after - before <
          4096);  // the budget is ~0.7 MiB of buffers; 4 MiB leaves allocator slack
}
