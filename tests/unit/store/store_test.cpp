#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "core/fault.hpp"
#include "harness.hpp"
#include "hash/sha256.hpp"
#include "store/activate.hpp"
#include "store/gc.hpp"
#include "store/marker.hpp"
#include "store/precedence.hpp"
#include "store/volume.hpp"

using namespace myr;
using myr::test::TempDir;

namespace {

std::string hex(const std::string& bytes) {
    return hash::to_hex(hash::sha256(bytes));
}

struct Fixture {
    TempDir tmp;
    std::string dir = tmp / "collector";
    store::Volume vol = store::Volume::open(dir, "otelcol-contrib").value();

    // Activates `bytes` as `version` from an image file; returns the result.
    Result<store::Activation> activate(const std::string& version, const std::string& bytes,
                                       store::Source source = store::Source::image,
                                       std::optional<std::string> previous = std::nullopt) {
        std::string src = tmp / ("src-" + version);
        test::write_file(src, bytes, 0755);
        int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(fd >= 0);
        store::ActivateRequest req;
        req.version = version;
        req.source = source;
        req.image_fd = fd;
        req.expected_sha256 = hex(bytes);
        req.previous_version = previous;
        auto r = store::activate(vol, req);
        ::close(fd);
        return r;
    }
    std::string bin(const std::string& version) const {
        return dir + "/versions/" + version + "/otelcol-contrib";
    }
    store::Active active() const { return *store::active(vol); }
};

store::Marker sample_marker() {
    store::Marker m;
    m.version = "0.116.0";
    m.binary = "otelcol-contrib";
    m.sha256 = std::string(64, 'a');
    m.size = 42;
    m.source = store::Source::update;
    m.previous_version = "0.115.0";
    m.installed_at = "2026-11-29T07:00:00Z";
    return m;
}

}  // namespace

TEST_CASE("marker: render and parse round-trip every field") {
    store::Marker m = sample_marker();
    auto back = store::parse_marker(store::render_marker(m));
    REQUIRE(back);
    CHECK(back->version == m.version);
    CHECK(back->binary == m.binary);
    CHECK(back->sha256 == m.sha256);
    CHECK(back->size == 42);
    CHECK(back->source == store::Source::update);
    CHECK(back->previous_version == "0.115.0");
    CHECK(back->installed_at == m.installed_at);
}

TEST_CASE("marker: garbage, missing fields and hostile values are refused") {
    std::string good = store::render_marker(sample_marker());
    auto replace = [&](const std::string& from, const std::string& to) {
        std::string s = good;
        size_t pos = s.find(from);
        REQUIRE(pos != std::string::npos);
        return s.replace(pos, from.size(), to);
    };
    for (const std::string& bad :
         {std::string(""), std::string("garbage"), std::string("[]"), good + "x",
          good.substr(0, good.size() / 2), replace("\"0.116.0\"", "\"../0.116.0\""),
          replace("\"0.116.0\"", "\"v0.116.0\""), replace("otelcol-contrib", "../bin"),
          replace("otelcol-contrib", "a/b"), replace(std::string(64, 'a'), std::string(63, 'a')),
          replace(std::string(64, 'a'), std::string(64, 'A')), replace("42", "-1"),
          replace("42", "\"42\""), replace("\"update\"", "\"elsewhere\""),
          replace("\"0.115.0\"", "\"0.115\""), replace("\"sha256\"", "\"sha\""),
          std::string(store::kMaxMarkerSize + 1, ' ')}) {
        CAPTURE(bad.substr(0, 120));
        CHECK_FALSE(store::parse_marker(bad));
    }
}

TEST_CASE("version output: the token after 'version' is the image version") {
    CHECK(store::version_from_output("otelcol-contrib version 0.116.0\n") == "0.116.0");
    CHECK(store::version_from_output("otelcol-contrib version v0.116.0\n") == "0.116.0");
    CHECK(store::version_from_output("0.117.0-rc.1\n") == "0.117.0-rc.1");
    CHECK_FALSE(store::version_from_output(""));
    CHECK_FALSE(store::version_from_output("\n\n"));
    CHECK_FALSE(store::version_from_output("otelcol-contrib version\n"));
    CHECK_FALSE(store::version_from_output("otelcol-contrib version 0.116\n"));
    CHECK_FALSE(store::version_from_output("Segmentation fault not a version\n"));
    CHECK_FALSE(store::version_from_output("otelcol-contrib version ../../etc\n"));
}

namespace {

store::Active intact_active(const std::string& version, store::Source source,
                            const std::string& sha = std::string(64, 'b')) {
    store::Active a;
    a.state = store::Active::State::intact;
    a.version = version;
    store::Marker m = sample_marker();
    m.version = version;
    m.source = source;
    m.sha256 = sha;
    a.marker = m;
    return a;
}

}  // namespace

TEST_CASE("precedence: the decision table, row by row, for both policies") {
    using P = store::SeedPolicy;
    using R = store::Rule;
    store::Active none;
    store::Active broken;
    broken.state = store::Active::State::broken;
    broken.version = "0.117.0";
    for (P p : {P::newest, P::image}) {
        CAPTURE(static_cast<int>(p));
        CHECK(store::decide(p, "0.116.0", none).rule == R::nothing_active);
        CHECK(store::decide(p, "0.116.0", none).activate);
        CHECK(store::decide(p, "0.116.0", broken).rule == R::active_broken);
        CHECK(store::decide(p, "0.116.0", broken).activate);
    }
    auto newer = intact_active("0.117.0", store::Source::update);
    auto same = intact_active("0.116.0", store::Source::update);
    auto older = intact_active("0.115.0", store::Source::update);
    auto odd = intact_active("latest", store::Source::update);
    CHECK(store::decide(P::newest, "0.116.0", newer).rule == R::newest_active_newer);
    CHECK_FALSE(store::decide(P::newest, "0.116.0", newer).activate);
    CHECK(store::decide(P::newest, "0.116.0", same).rule == R::newest_tie);
    CHECK_FALSE(store::decide(P::newest, "0.116.0", same).activate);
    CHECK(store::decide(P::newest, "0.116.0", older).rule == R::newest_active_older);
    CHECK(store::decide(P::newest, "0.116.0", older).activate);
    CHECK(store::decide(P::newest, "0.116.0", odd).rule == R::not_comparable);
    CHECK(store::decide(P::newest, "0.116.0", odd).activate);
    // Policy image: anything but the intact image binary of X is replaced.
    CHECK(store::decide(P::image, "0.116.0", newer).rule == R::image_policy);
    CHECK(store::decide(P::image, "0.116.0", newer).activate);
    CHECK(store::decide(P::image, "0.116.0", same).activate);  // same version, but from an update
    auto img = intact_active("0.116.0", store::Source::image, std::string(64, 'c'));
    CHECK(store::needs_image_hash(P::image, "0.116.0", img));
    CHECK_FALSE(store::needs_image_hash(P::newest, "0.116.0", img));
    CHECK(store::decide(P::image, "0.116.0", img, std::string(64, 'c')).rule ==
          R::image_policy_current);
    CHECK_FALSE(store::decide(P::image, "0.116.0", img, std::string(64, 'c')).activate);
    CHECK(store::decide(P::image, "0.116.0", img, std::string(64, 'd')).activate);
}

TEST_CASE("activate: a first activation creates the version, its marker and current") {
    Fixture f;
    auto r = f.activate("0.116.0", "binary-1");
    REQUIRE(r);
    CHECK_FALSE(r->reused);
    auto a = f.active();
    CHECK(a.state == store::Active::State::intact);
    CHECK(a.version == "0.116.0");
    CHECK(a.marker->sha256 == hex("binary-1"));
    CHECK(a.marker->size == 8);
    CHECK(a.marker->previous_version.empty());
    CHECK(test::read_file(f.bin("0.116.0")) == "binary-1");
    struct stat st {};
    REQUIRE(::stat(f.bin("0.116.0").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0755);
    char link[256] = {};
    REQUIRE(::readlink((f.dir + "/current").c_str(), link, sizeof link - 1) > 0);
    CHECK(std::string(link) == "versions/0.116.0");
    CHECK(*store::clear_staging(f.vol) == 0);
}

TEST_CASE("activate: previousVersion records the version that was active") {
    Fixture f;
    REQUIRE(f.activate("0.115.0", "one"));
    REQUIRE(f.activate("0.116.0", "two", store::Source::update));
    CHECK(f.active().marker->previous_version == "0.115.0");
    CHECK(f.active().marker->source == store::Source::update);
    CHECK(*store::rollback_target(f.vol) == "0.115.0");
}

TEST_CASE("activate: an intact directory with the same bytes is reused without a copy") {
    Fixture f;
    REQUIRE(f.activate("0.115.0", "one"));
    REQUIRE(f.activate("0.116.0", "two", store::Source::update));
    struct stat before {};
    REQUIRE(::stat(f.bin("0.115.0").c_str(), &before) == 0);
    auto r = f.activate("0.115.0", "one");
    REQUIRE(r);
    CHECK(r->reused);
    struct stat after {};
    REQUIRE(::stat(f.bin("0.115.0").c_str(), &after) == 0);
    CHECK(before.st_ino == after.st_ino);
    CHECK(f.active().version == "0.115.0");
    CHECK(f.active().marker->previous_version == "0.116.0");  // the marker was rewritten
}

TEST_CASE("activate: other bytes under an existing version replace it atomically") {
    Fixture f;
    REQUIRE(f.activate("0.116.0", "old bytes", store::Source::update));
    auto r = f.activate("0.116.0", "image bytes");
    REQUIRE(r);
    CHECK_FALSE(r->reused);
    CHECK(test::read_file(f.bin("0.116.0")) == "image bytes");
    CHECK(f.active().state == store::Active::State::intact);
    CHECK(f.active().marker->source == store::Source::image);
    CHECK(*store::clear_staging(f.vol) == 0);
}

TEST_CASE("activate: a hash mismatch leaves current alone and no staging behind") {
    Fixture f;
    REQUIRE(f.activate("0.115.0", "one"));
    std::string src = f.tmp / "src";
    test::write_file(src, "tampered", 0755);
    int fd = ::open(src.c_str(), O_RDONLY);
    store::ActivateRequest req;
    req.version = "0.116.0";
    req.image_fd = fd;
    req.expected_sha256 = hex("expected");
    auto r = store::activate(f.vol, req);
    ::close(fd);
    REQUIRE_FALSE(r);
    CHECK(r.error().message().find("differs from the expected") != std::string::npos);
    CHECK(f.active().version == "0.115.0");
    CHECK_FALSE(test::exists(f.dir + "/versions/0.116.0"));
    CHECK(*store::clear_staging(f.vol) == 0);
}

TEST_CASE("activate: an injected failure at every step keeps current and cleans staging") {
    for (const char* point : {"store.stage.mkdir.after", "store.activate.copy.before",
                              "store.activate.copy.after", "store.activate.marker.after",
                              "store.activate.rename.before", "fsx.write", "fsx.rename"}) {
        INFO("fault point " << point);
        Fixture f;
        REQUIRE(f.activate("0.115.0", "one"));
        ::setenv("MYRIARCH_FAULT", (std::string(point) + ":fail").c_str(), 1);
        fault::reload();
        auto r = f.activate("0.116.0", "two");
        ::unsetenv("MYRIARCH_FAULT");
        fault::reload();
        CHECK_FALSE(r);
        CHECK(f.active().version == "0.115.0");
        CHECK(f.active().state == store::Active::State::intact);
        CHECK(*store::clear_staging(f.vol) == 0);
    }
}

TEST_CASE("activate: a staged update is adopted, made executable and hashed") {
    Fixture f;
    REQUIRE(f.activate("0.115.0", "one"));
    auto st = store::create_staging(f.vol);
    REQUIRE(st);
    CHECK(store::staged_binary_path(f.vol, st->id) ==
          f.dir + "/.staging/" + st->id + "/otelcol-contrib");
    test::write_file(store::staged_binary_path(f.vol, st->id), "extracted", 0600);
    store::ActivateRequest req;
    req.version = "0.116.0";
    req.source = store::Source::update;
    req.staged_id = st->id;
    req.expected_sha256 = hex("extracted");
    REQUIRE(store::activate(f.vol, req));
    CHECK(f.active().version == "0.116.0");
    CHECK(f.active().marker->source == store::Source::update);
    CHECK(*store::clear_staging(f.vol) == 0);
}

TEST_CASE("intact: a changed, non-executable, missing or linked binary is not intact") {
    Fixture f;
    REQUIRE(f.activate("0.116.0", "bytes"));
    CHECK(store::intact(f.vol, "0.116.0"));
    SUBCASE("one byte changed") {
        test::write_file(f.bin("0.116.0"), "bytez", 0755);
    }
    SUBCASE("not executable") {
        ::chmod(f.bin("0.116.0").c_str(), 0644);
    }
    SUBCASE("missing") {
        ::unlink(f.bin("0.116.0").c_str());
    }
    SUBCASE("a symlink planted as the binary") {
        std::string outside = f.tmp / "outside";
        test::write_file(outside, "bytes", 0755);
        ::unlink(f.bin("0.116.0").c_str());
        REQUIRE(::symlink(outside.c_str(), f.bin("0.116.0").c_str()) == 0);
    }
    SUBCASE("marker garbage") {
        test::write_file(f.dir + "/versions/0.116.0/install.json", "{not json");
    }
    SUBCASE("marker huge") {
        test::write_file(f.dir + "/versions/0.116.0/install.json", std::string(1 << 20, '{'));
    }
    SUBCASE("marker names another version") {
        std::string m = test::read_file(f.dir + "/versions/0.116.0/install.json");
        m.replace(m.find("0.116.0"), 7, "0.117.0");
        test::write_file(f.dir + "/versions/0.116.0/install.json", m);
    }
    CHECK_FALSE(store::intact(f.vol, "0.116.0"));
    CHECK(f.active().state == store::Active::State::broken);
    CHECK_FALSE(f.active().reason.empty());
}

TEST_CASE("active: current pointing anywhere but an intact versions/<v> is broken") {
    Fixture f;
    REQUIRE(f.activate("0.116.0", "bytes"));
    std::string cur = f.dir + "/current";
    ::unlink(cur.c_str());
    std::string target;
    SUBCASE("outside the volume") {
        target = "/etc";
    }
    SUBCASE("parent escape") {
        target = "versions/../../outside";
    }
    SUBCASE("missing version") {
        target = "versions/0.999.0";
    }
    SUBCASE("not a version name") {
        target = "versions/latest";
    }
    SUBCASE("nested path") {
        target = "versions/0.116.0/otelcol-contrib";
    }
    REQUIRE(::symlink(target.c_str(), cur.c_str()) == 0);
    auto a = f.active();
    CHECK(a.state == store::Active::State::broken);
    CHECK_FALSE(a.reason.empty());
}

TEST_CASE("active beside the image: one pass hashes both when they hold the same bytes") {
    Fixture f;
    const std::string bytes(300 * 1024 + 5, 'b');
    REQUIRE(f.activate("0.116.0", bytes));
    const std::string image = f.tmp / "image";
    auto run = [&](const std::string& image_bytes, std::string* sha, uint64_t* hashed) {
        test::write_file(image, image_bytes, 0755);
        int fd = ::open(image.c_str(), O_RDONLY | O_CLOEXEC);
        REQUIRE(fd >= 0);
        const uint64_t before = hash::bytes_hashed();
        auto a = store::active(f.vol, fd, sha);
        *hashed = hash::bytes_hashed() - before;
        ::close(fd);
        REQUIRE(a);
        return *a;
    };
    std::string sha;
    uint64_t hashed = 0;
    SUBCASE("the same bytes: hashed once, both answered") {
        auto a = run(bytes, &sha, &hashed);
        CHECK(a.state == store::Active::State::intact);
        CHECK(sha == hex(bytes));
        CHECK(hashed == bytes.size());
    }
    SUBCASE("other bytes of the same size: each hashed on its own") {
        std::string other = bytes;
        other[1000] = 'c';
        auto a = run(other, &sha, &hashed);
        CHECK(a.state == store::Active::State::intact);
        CHECK(sha == hex(other));
        CHECK(hashed == 2 * bytes.size());
    }
    SUBCASE("the active binary changed like the image: equal, and still broken") {
        std::string other = bytes;
        other[0] = 'c';
        test::write_file(f.bin("0.116.0"), other, 0755);
        auto a = run(other, &sha, &hashed);
        CHECK(a.state == store::Active::State::broken);
        CHECK(a.reason.find("SHA-256 differs") != std::string::npos);
        CHECK(sha == hex(other));
        CHECK(hashed == bytes.size());
    }
    SUBCASE("an image of another size: not read here") {
        auto a = run(bytes + "x", &sha, &hashed);
        CHECK(a.state == store::Active::State::intact);
        CHECK(sha.empty());
        CHECK(hashed == bytes.size());
    }
}

TEST_CASE("activate: reusing the active version does not hash it a second time") {
    Fixture f;
    const std::string bytes(200 * 1024, 'r');
    REQUIRE(f.activate("0.116.0", bytes));
    const std::string src = f.tmp / "again";
    test::write_file(src, bytes, 0755);
    int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    store::ActivateRequest req;
    req.version = "0.116.0";
    req.source = store::Source::update;
    req.image_fd = fd;
    req.expected_sha256 = hex(bytes);
    const uint64_t before = hash::bytes_hashed();
    auto again = store::activate(f.vol, req);
    const uint64_t hashed = hash::bytes_hashed() - before;
    ::close(fd);
    REQUIRE(again);
    CHECK(again->reused);
    CHECK(again->marker.source == store::Source::update);
    CHECK(hashed == bytes.size());  // active() only
}

TEST_CASE("active: a version directory that is a symlink is never followed") {
    Fixture f;
    REQUIRE(f.activate("0.115.0", "bytes"));
    // A complete, intact-looking copy outside the volume, linked in as versions/0.116.0.
    std::string outside = f.tmp / "outside";
    REQUIRE(::mkdir(outside.c_str(), 0755) == 0);
    test::write_file(outside + "/otelcol-contrib", "bytes", 0755);
    std::string m = test::read_file(f.dir + "/versions/0.115.0/install.json");
    m.replace(m.find("0.115.0"), 7, "0.116.0");
    test::write_file(outside + "/install.json", m);
    REQUIRE(::symlink(outside.c_str(), (f.dir + "/versions/0.116.0").c_str()) == 0);
    CHECK_FALSE(store::intact(f.vol, "0.116.0"));
    CHECK_FALSE(store::switch_current(f.vol, "0.116.0"));
    CHECK(f.active().version == "0.115.0");
}

TEST_CASE("volume: a symlink planted as .staging is replaced, its target untouched") {
    TempDir tmp;
    std::string dir = tmp / "collector";
    std::string outside = tmp / "outside";
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
    REQUIRE(::mkdir(outside.c_str(), 0755) == 0);
    test::write_file(outside + "/keep", "mine");
    REQUIRE(::symlink(outside.c_str(), (dir + "/.staging").c_str()) == 0);
    auto vol = store::Volume::open(dir, "otelcol-contrib");
    REQUIRE(vol);
    struct stat st {};
    REQUIRE(::lstat((dir + "/.staging").c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK(test::read_file(outside + "/keep") == "mine");
}

TEST_CASE("gc: keeps active, previous, protected and keepVersions newest; removes the rest") {
    // keepVersions 2: the previous version and one more, the newest other.
    Fixture f;
    for (const char* v : {"0.110.0", "0.111.0", "0.112.0", "0.113.0", "0.114.0", "0.115.0"}) {
        REQUIRE(f.activate(v, std::string("bin-") + v));
    }
    // Active 0.115.0, previous 0.114.0.
    std::string outside = f.tmp / "outside";
    REQUIRE(::mkdir(outside.c_str(), 0755) == 0);
    test::write_file(outside + "/keep", "mine");
    REQUIRE(::symlink(outside.c_str(), (f.dir + "/versions/0.109.0").c_str()) == 0);
    test::write_file(f.dir + "/versions/stray-file", "x");
    auto r = store::gc(f.vol, 2, {"0.110.0"});
    REQUIRE(r);
    for (const char* v : {"0.115.0", "0.114.0", "0.113.0", "0.110.0"}) {
        CAPTURE(v);
        CHECK(test::exists(f.dir + "/versions/" + v));
    }
    for (const char* v : {"0.112.0", "0.111.0", "0.109.0", "stray-file"}) {
        CAPTURE(v);
        CHECK_FALSE(test::exists(f.dir + "/versions/" + v));
    }
    CHECK(test::read_file(outside + "/keep") == "mine");  // the link, never its target
    CHECK(*store::clear_staging(f.vol) == 0);
    CHECK(f.active().version == "0.115.0");
    CHECK(store::intact(f.vol, "0.114.0"));
}

TEST_CASE("gc: keepVersions 1 (the default) keeps the active version and its previous one only") {
    Fixture f;
    for (const char* v : {"0.113.0", "0.114.0", "0.115.0", "0.116.0"}) {
        REQUIRE(f.activate(v, std::string("bin-") + v));
    }
    auto r = store::gc(f.vol, 1);
    REQUIRE(r);
    CHECK(r->removed == std::vector<std::string>{"0.114.0", "0.113.0"});
    CHECK(test::exists(f.dir + "/versions/0.116.0"));
    CHECK(test::exists(f.dir + "/versions/0.115.0"));
}

TEST_CASE("gc: keepVersions 1 without a previous version keeps the newest other one") {
    Fixture f;
    REQUIRE(f.activate("0.114.0", "a"));
    REQUIRE(f.activate("0.113.0", "b"));
    REQUIRE(f.activate("0.116.0", "c", store::Source::image, ""));
    auto r = store::gc(f.vol, 1);
    REQUIRE(r);
    CHECK(r->removed == std::vector<std::string>{"0.113.0"});
    CHECK(test::exists(f.dir + "/versions/0.114.0"));
}

TEST_CASE("gc: keepVersions 0 still keeps the active version and its previous one") {
    Fixture f;
    REQUIRE(f.activate("0.115.0", "a"));
    REQUIRE(f.activate("0.116.0", "b"));
    REQUIRE(f.activate("0.117.0", "c"));
    auto r = store::gc(f.vol, 0);
    REQUIRE(r);
    CHECK(r->removed == std::vector<std::string>{"0.115.0"});
    CHECK(test::exists(f.dir + "/versions/0.116.0"));
    CHECK(test::exists(f.dir + "/versions/0.117.0"));
}

TEST_CASE("rollback: switches to the previous version, refuses when it is not intact") {
    Fixture f;
    REQUIRE(f.activate("0.115.0", "a"));
    REQUIRE(f.activate("0.116.0", "b", store::Source::update));
    SUBCASE("intact previous") {
        auto r = store::rollback(f.vol);
        REQUIRE(r);
        CHECK(*r == "0.115.0");
        CHECK(f.active().version == "0.115.0");
    }
    SUBCASE("broken previous") {
        test::write_file(f.bin("0.115.0"), "changed", 0755);
        CHECK_FALSE(store::rollback(f.vol));
        CHECK(f.active().version == "0.116.0");
    }
}
