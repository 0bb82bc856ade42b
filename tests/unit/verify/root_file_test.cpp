// The trusted root as validate, start-up, the reload and status read it (verify/root_file.hpp).
#include "verify/root_file.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "harness.hpp"

using namespace myr::verify;
using myr::test::read_file;
using myr::test::TempDir;
using myr::test::write_file;

namespace {

std::string public_good() {
    return myr::test::data_dir() + "/sigstore-conformance/public-good-trusted-root.json";
}

}  // namespace

TEST_CASE("root file: the public-good root is usable; its newest validity start is its age") {
    auto r = load_usable_root(public_good());
    REQUIRE_MESSAGE(r, r.error().message());
    // Its CAs, Rekor and CT log keys start between 2021 and 2025; the newest is a Rekor key's
    // (2025-09-23T00:00:00Z), which this build loads although it cannot use it.
    REQUIRE(r->newest_start);
    CHECK(*r->newest_start == 1758585600);
    CHECK(r->root->certificate_authorities.size() == 2);
    CHECK(r->path == public_good());
}

TEST_CASE("root file: through a ConfigMap's symlinks, a new target is a new stamp") {
    TempDir d;
    const std::string dir = d.path();
    for (const char* sub : {"/..2026_a", "/..2026_b"}) {
        REQUIRE(::mkdir((dir + sub).c_str(), 0755) == 0);
        write_file(dir + sub + "/trusted_root.json", read_file(public_good()));
    }
    REQUIRE(::symlink("..2026_a", (dir + "/..data").c_str()) == 0);
    REQUIRE(::symlink("..data/trusted_root.json", (dir + "/trusted_root.json").c_str()) == 0);
    auto a = load_usable_root(dir + "/trusted_root.json");
    REQUIRE_MESSAGE(a, a.error().message());
    REQUIRE(::symlink("..2026_b", (dir + "/..data_tmp").c_str()) == 0);
    REQUIRE(::rename((dir + "/..data_tmp").c_str(), (dir + "/..data").c_str()) == 0);
    auto b = stamp_file(dir + "/trusted_root.json");
    REQUIRE(b);
    CHECK_FALSE(*b == a->stamp);
}

TEST_CASE("root file: unusable roots name why") {
    TempDir d;
    const std::string dir = d.path();
    auto why = [&](const std::string& text) {
        write_file(dir + "/root.json", text);
        auto r = load_usable_root(dir + "/root.json");
        REQUIRE_FALSE(r);
        return r.error().message();
    };
    SUBCASE("missing") {
        auto r = load_usable_root(dir + "/none.json");
        REQUIRE_FALSE(r);
        CHECK(r.error().message() ==
              "trusted root: " + dir + "/none.json: No such file or directory");
    }
    SUBCASE("a directory") {
        auto r = load_usable_root(dir);
        REQUIRE_FALSE(r);
        CHECK(r.error().message() == "trusted root: " + dir + ": not a regular file");
    }
    SUBCASE("not JSON") {
        CHECK(why("{not json").rfind("trusted root: ", 0) == 0);
    }
    SUBCASE("no certificate authority") {
        CHECK(why(R"({"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
                      "tlogs": [], "certificateAuthorities": []})") ==
              "trusted root " + dir + "/root.json: no certificate authority (Fulcio)");
    }
    SUBCASE("a CA whose certificate does not parse") {
        // The first certificate's DER, base64 "MII…": its first bytes made garbage.
        std::string s = read_file(public_good());
        size_t at = s.find("\"rawBytes\": \"MII");
        REQUIRE(at != std::string::npos);
        std::string bad = s;
        for (size_t i = 0; i < 2; ++i) {
            at = bad.find("\"rawBytes\": \"MII", at);
            if (at == std::string::npos) break;
            bad.replace(at + 13, 3, "AAA");
        }
        const std::string m = why(bad);
        CHECK_MESSAGE(m.find("no usable certificate authority: ") != std::string::npos, m);
    }
    SUBCASE("no transparency log") {
        std::string s = read_file(public_good());
        const size_t a = s.find("\"tlogs\"");
        const size_t b = s.find("\"certificateAuthorities\"");
        REQUIRE(a < b);
        s.replace(a, b - a, "\"tlogs\": [],\n  ");
        CHECK(why(s) == "trusted root " + dir + "/root.json: no transparency log (tlogs is empty)");
    }
}
