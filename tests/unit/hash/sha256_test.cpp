// SHA-256: every backend this CPU has, against the FIPS 180-4 example vectors and against mbedTLS's
// own one-shot API (its complete implementation, padding included, independent of our streaming):
// every length up to a few KiB, every split point of the short messages, every chunk size, and
// large random inputs fed in random pieces.
#include "hash/sha256.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <mbedtls/sha256.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "harness.hpp"

using namespace myr::hash;

namespace {

std::vector<Backend> backends() {
    std::vector<Backend> out;
    for (Backend b : {Backend::mbedtls, Backend::x86_sha, Backend::arm_sha2}) {
        if (supported(b)) out.push_back(b);
    }
    return out;
}

Digest reference(const uint8_t* p, size_t n) {
    Digest d{};
    REQUIRE(mbedtls_sha256_ret(p, n, d.data(), 0) == 0);
    return d;
}

Digest with(Backend b, const uint8_t* p, size_t n) {
    Sha256 h(b);
    h.update(p, n);
    return h.finish();
}

struct OpenFile {
    explicit OpenFile(const std::string& path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
        REQUIRE(fd >= 0);
    }
    ~OpenFile() { ::close(fd); }
    int fd;
};

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> v(n);
    for (auto& c : v) c = static_cast<uint8_t>(rng());
    return v;
}

}  // namespace

TEST_CASE("sha256: the backend this CPU offers is the one chosen") {
    const Backend chosen = fastest_backend();
    MESSAGE("fastest backend: " << std::string(to_string(chosen)));
    CHECK(supported(chosen));
    // The arm64 stage runs under qemu-user, whose /proc/cpuinfo is the host's: it names the
    // backend it expects instead.
    if (const char* want = std::getenv("MYR_EXPECT_SHA256_BACKEND")) {
        CHECK(std::string(to_string(chosen)) == want);
    }
#if defined(__x86_64__)
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    bool sha_ni = false;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("flags", 0) == 0) {
            sha_ni = (line + " ").find(" sha_ni ") != std::string::npos;
            break;
        }
    }
    if (sha_ni) CHECK(chosen == Backend::x86_sha);
#endif
}

TEST_CASE("sha256: FIPS 180-4 example vectors on every backend, one-shot and byte by byte") {
    struct Vector {
        std::string msg;
        const char* hex;
    };
    const std::vector<Vector> vectors = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqr"
         "lmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
        {std::string(1000000, 'a'),
         "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
    };
    for (Backend b : backends()) {
        CAPTURE(to_string(b));
        for (const Vector& v : vectors) {
            CAPTURE(v.msg.size());
            Sha256 one(b);
            one.update(v.msg);
            CHECK(to_hex(one.finish()) == v.hex);
            if (v.msg.size() <= 1000) {
                Sha256 bytes(b);
                for (char c : v.msg) bytes.update(&c, 1);
                CHECK(to_hex(bytes.finish()) == v.hex);
            }
        }
    }
    CHECK(to_hex(sha256("abc")) ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("sha256: every length from 0 to 4 KiB agrees with mbedTLS on every backend") {
    const auto data = random_bytes(4096 + 130, 1);
    for (Backend b : backends()) {
        CAPTURE(to_string(b));
        size_t mismatches = 0;
        for (size_t len = 0; len <= 4096 + 130; ++len) {
            // Also from an odd address: the backends load unaligned.
            if (with(b, data.data(), len) != reference(data.data(), len)) ++mismatches;
            if (len > 0 && with(b, data.data() + 1, len - 1) != reference(data.data() + 1, len - 1))
                ++mismatches;
        }
        CHECK(mismatches == 0);
    }
}

TEST_CASE("sha256: two updates split at every point of messages up to five blocks") {
    const auto data = random_bytes(5 * 64 + 1, 2);
    for (Backend b : backends()) {
        CAPTURE(to_string(b));
        size_t mismatches = 0;
        for (size_t len = 0; len <= data.size(); ++len) {
            const Digest want = reference(data.data(), len);
            for (size_t split = 0; split <= len; ++split) {
                Sha256 h(b);
                h.update(data.data(), split);
                h.update(data.data() + split, len - split);
                if (h.finish() != want) ++mismatches;
            }
        }
        CHECK(mismatches == 0);
    }
}

TEST_CASE("sha256: fed in chunks of every size from 1 to 200 bytes") {
    const auto data = random_bytes(3 * 1024 + 7, 3);
    const Digest want = reference(data.data(), data.size());
    for (Backend b : backends()) {
        CAPTURE(to_string(b));
        size_t mismatches = 0;
        for (size_t chunk = 1; chunk <= 200; ++chunk) {
            Sha256 h(b);
            for (size_t off = 0; off < data.size(); off += chunk) {
                h.update(data.data() + off, std::min(chunk, data.size() - off));
            }
            if (h.finish() != want) ++mismatches;
        }
        CHECK(mismatches == 0);
    }
}

TEST_CASE("sha256: large random inputs in random pieces, and the object is reusable") {
    for (size_t size : {size_t{1} << 20, (size_t{9} << 20) + 37}) {
        const auto data = random_bytes(size, static_cast<uint32_t>(size));
        const Digest want = reference(data.data(), data.size());
        for (Backend b : backends()) {
            CAPTURE(to_string(b));
            CAPTURE(size);
            std::mt19937 rng(7);
            Sha256 h(b);
            for (int round = 0; round < 2; ++round) {  // finish() resets for the next message
                size_t off = 0;
                while (off < data.size()) {
                    size_t n = std::min<size_t>(rng() % 100000, data.size() - off);
                    h.update(data.data() + off, n);
                    off += n;
                }
                CHECK(h.finish() == want);
            }
        }
    }
}

TEST_CASE("sha256: a file hashed in chunks equals the one-shot digest of its content") {
    myr::test::TempDir tmp;
    std::string content;
    for (uint64_t i = 0; content.size() < 3 * 1024 * 1024 + 17; ++i)
        content += std::to_string(i * 7919);
    myr::test::write_file(tmp / "f", content);
    uint64_t size = 0;
    auto d = sha256_file(tmp / "f", &size);
    REQUIRE(d.ok());
    CHECK(size == content.size());
    CHECK(*d == sha256(content));
    CHECK(*d == reference(reinterpret_cast<const uint8_t*>(content.data()), content.size()));
    auto missing = sha256_file(tmp / "missing");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message().find(tmp / "missing") != std::string::npos);
}

TEST_CASE("sha256: hex in and out") {
    const Digest d = sha256("abc");
    auto back = digest_from_hex(to_hex(d));
    REQUIRE(back.ok());
    CHECK(*back == d);
    std::string upper = to_hex(d);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    REQUIRE(digest_from_hex(upper).ok());
    CHECK(*digest_from_hex(upper) == d);
    CHECK_FALSE(digest_from_hex(to_hex(d).substr(1)).ok());
    CHECK_FALSE(digest_from_hex(to_hex(d).substr(1) + "g").ok());
}

TEST_CASE("sha256: a twin file is compared in the same pass as the file is hashed") {
    myr::test::TempDir tmp;
    const auto bytes = random_bytes(700 * 1024 + 3, 4);  // more than two read chunks
    const std::string content(bytes.begin(), bytes.end());
    myr::test::write_file(tmp / "f", content);
    const Digest want = sha256(content);
    auto twin_of = [&](const std::string& twin_content) {
        myr::test::write_file(tmp / "twin", twin_content);
        OpenFile a(tmp / "f"), b(tmp / "twin");
        bool same = true;
        uint64_t size = 0;
        const uint64_t before = bytes_hashed();
        auto d = sha256_fd_twin(a.fd, b.fd, &same, &size);
        REQUIRE(d.ok());
        CHECK(*d == want);  // always the file's own digest
        CHECK(size == content.size());
        CHECK(bytes_hashed() - before == content.size());  // the twin is compared, not hashed
        return same;
    };
    CHECK(twin_of(content));
    std::string last = content;
    last.back() ^= 1;
    CHECK_FALSE(twin_of(last));
    std::string middle = content;
    middle[300 * 1024] ^= 0x80;
    CHECK_FALSE(twin_of(middle));
    CHECK_FALSE(twin_of(content + "x"));
    CHECK_FALSE(twin_of(content.substr(0, content.size() - 1)));
    CHECK_FALSE(twin_of(""));
}
