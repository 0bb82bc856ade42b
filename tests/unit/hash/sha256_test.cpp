#include "hash/sha256.hpp"

#include <doctest/doctest.h>

#include <string>

#include "harness.hpp"

using namespace myr::hash;

TEST_CASE("sha256: known vectors") {
    CHECK(to_hex(sha256("abc")) ==
          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(to_hex(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
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
    auto missing = sha256_file(tmp / "missing");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message().find(tmp / "missing") != std::string::npos);
}
