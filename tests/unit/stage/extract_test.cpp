#include "stage/extract.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "archive_maker.hpp"
#include "core/fault.hpp"
#include "harness.hpp"
#include "hash/sha256.hpp"

using namespace myr;
using myr::test::Format;
using myr::test::Member;
using Kind = myr::test::Member::Kind;

namespace {

const std::string kBin = "otelcol-contrib";
const std::string kTop = "otelcol-contrib_0.118.0_linux_amd64";

// Bytes that look nothing like a run of zeros, so a wrong offset or a lost block shows in the hash.
std::string binary_bytes(size_t n = 300 * 1024) {
    std::string s;
    s.reserve(n);
    uint32_t x = 0x12345678;
    while (s.size() < n) {
        x = x * 1664525u + 1013904223u;
        s.push_back(static_cast<char>(x >> 24));
    }
    return s;
}

stage::ExtractLimits limits(uint64_t max_binary = 1 << 20) {
    stage::ExtractLimits l;
    l.max_binary_size = max_binary;
    return l;
}

struct Staged {
    Result<stage::Extracted> result = fail("not run");
    std::vector<std::string> left;  // what the staging directory holds afterwards
    std::string content;
    mode_t mode = 0;
};

Staged stage_bytes(const std::string& archive, const stage::ExtractLimits& l = limits(),
                   const std::string& staging_dir = "") {
    myr::test::TempDir dir;
    const std::string staging = staging_dir.empty() ? dir / "staging" : staging_dir;
    if (staging_dir.empty()) REQUIRE(::mkdir(staging.c_str(), 0700) == 0);
    myr::test::write_file(dir / "release", archive);
    int afd = ::open((dir / "release").c_str(), O_RDONLY | O_CLOEXEC);
    int dfd = ::open(staging.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(afd >= 0);
    REQUIRE(dfd >= 0);
    Staged s;
    s.result = stage::extract_binary(afd, kBin, dfd, l);
    ::close(afd);
    ::close(dfd);
    s.left = myr::test::list_dir(staging);
    s.content = myr::test::read_file(staging + "/" + kBin);
    struct stat st {};
    if (::lstat((staging + "/" + kBin).c_str(), &st) == 0) s.mode = st.st_mode & 07777;
    return s;
}

// A refusal: Errc::invalid, the message names the member and the rule, nothing is left behind.
void check_refused(const Staged& s, const std::string& member, const std::string& rule) {
    REQUIRE_FALSE(s.result.ok());
    INFO(s.result.error().message());
    CHECK(s.result.error().code() == Errc::invalid);
    CHECK(s.result.error().message().find("stage: " + member + ": ") != std::string::npos);
    CHECK(s.result.error().message().find(rule) != std::string::npos);
    CHECK(s.left.empty());
}

std::vector<Member> release(const std::string& bin_name, const std::string& data) {
    return {{kTop + "/", "", Kind::dir},
            {kTop + "/README.md", "# otelcol\n"},
            {bin_name, data},
            {kTop + "/LICENSE", "Apache-2.0\n"}};
}

}  // namespace

TEST_CASE("stage: the binary under one top folder comes out of every archive kind") {
    const std::string data = binary_bytes();
    for (Format f : {Format::tar_gz, Format::tar_xz, Format::tar_zst, Format::tar, Format::zip}) {
        const std::string format = myr::test::to_string(f);
        CAPTURE(format);
#if !MYR_HAVE_ZSTD
        if (f == Format::tar_zst) {
            // Refused with a reason that says so, rather than as "not an archive".
            check_refused(stage_bytes(myr::test::make_archive(release(kTop + "/" + kBin, data), f)),
                          "archive", "zstd compression is not supported by this build");
            myr::test::report_skip("this static build has no libzstd (libzstd-dev): tar.zst");
            continue;
        }
#endif
        auto s = stage_bytes(myr::test::make_archive(release(kTop + "/" + kBin, data), f));
        REQUIRE_MESSAGE(s.result.ok(), s.result.error().message());
        CHECK(s.result->member == kTop + "/" + kBin);
        CHECK(s.result->size == data.size());
        CHECK(s.result->sha256_hex == hash::to_hex(hash::sha256(data)));
        CHECK(s.content == data);
        CHECK(s.mode == 0755);
        CHECK(s.left == std::vector<std::string>{kBin});
    }
}

TEST_CASE("stage: the binary at the top of the archive, also as ./name") {
    const std::string data = binary_bytes(5000);
    for (const std::string& name : {kBin, "./" + kBin}) {
        auto s = stage_bytes(myr::test::make_archive(
            {{"README.md", "x"}, {name, data}, {"LICENSE", "y"}}, Format::tar_gz));
        REQUIRE_MESSAGE(s.result.ok(), s.result.error().message());
        CHECK(s.result->member == name);
        CHECK(s.content == data);
    }
}

TEST_CASE("stage: an empty binary is a binary of zero bytes") {
    auto s = stage_bytes(myr::test::make_archive({{kBin, ""}}, Format::tar));
    REQUIRE_MESSAGE(s.result.ok(), s.result.error().message());
    CHECK(s.result->size == 0);
    CHECK(s.result->sha256_hex == hash::to_hex(hash::sha256("")));
}

TEST_CASE("stage: links, devices and fifos named like the binary are refused") {
    const std::string path = kTop + "/" + kBin;
    struct Case {
        Member m;
        const char* rule;
    };
    for (const Case& c : {
             Case{{path, "", Kind::symlink, "/bin/sh"}, "refusing symlink member"},
             Case{{path, "", Kind::hardlink, kTop + "/README.md"}, "refusing hardlink member"},
             Case{{path, "", Kind::chardev}, "refusing character device member"},
             Case{{path, "", Kind::fifo}, "refusing fifo member"},
         }) {
        for (Format f : {Format::tar_gz, Format::zip}) {
            // zip has no devices, fifos or hard links.
            if (f == Format::zip && c.m.kind != Kind::symlink && c.m.kind != Kind::dir) continue;
            CAPTURE(c.rule);
            const std::string format = myr::test::to_string(f);
            CAPTURE(format);
            auto members = release(path, "");
            members[2] = c.m;
            check_refused(stage_bytes(myr::test::make_archive(members, f)), c.m.name, c.rule);
        }
    }
}

TEST_CASE("stage: a top folder named like the binary holds it; a directory is never the binary") {
    const std::string data = binary_bytes(1000);
    for (Format f : {Format::tar_gz, Format::zip}) {
        auto s = stage_bytes(
            myr::test::make_archive({{kBin + "/", "", Kind::dir}, {kBin + "/" + kBin, data}}, f));
        REQUIRE_MESSAGE(s.result.ok(), s.result.error().message());
        CHECK(s.result->member == kBin + "/" + kBin);
        CHECK(s.content == data);
        check_refused(stage_bytes(myr::test::make_archive(
                          {{kBin + "/", "", Kind::dir}, {kBin + "/README", "x"}}, f)),
                      kBin, "no member named " + kBin);
    }
}

TEST_CASE("stage: a '..' component or an absolute name anywhere in the archive is refused") {
    const std::string data = binary_bytes(1000);
    for (const std::string& bad :
         {std::string("../x"), kTop + "/../../etc/cron.d/x", std::string("../") + kBin}) {
        CAPTURE(bad);
        check_refused(stage_bytes(myr::test::make_archive(
                          {{kTop + "/" + kBin, data}, {bad, "evil"}}, Format::tar_gz)),
                      bad, "refusing member name with a '..' component");
    }
    check_refused(stage_bytes(myr::test::make_archive({{"/abs/" + kBin, data}}, Format::tar)),
                  "/abs/" + kBin, "refusing absolute member name");
    check_refused(
        stage_bytes(myr::test::make_archive({{"/etc/passwd", "x"}, {kBin, data}}, Format::tar_gz)),
        "/etc/passwd", "refusing absolute member name");
}

TEST_CASE("stage: two members that would both be the binary are refused") {
    const std::string data = binary_bytes(1000);
    // The same name twice (tar allows it: the later one would win on disk).
    check_refused(
        stage_bytes(myr::test::make_archive({{kBin, data}, {kBin, "other"}}, Format::tar_gz)), kBin,
        "refusing duplicate member: " + kBin + " is the binary already");
    // At the top and under a folder.
    check_refused(stage_bytes(myr::test::make_archive({{kBin, data}, {kTop + "/" + kBin, data}},
                                                      Format::zip)),
                  kTop + "/" + kBin, "refusing duplicate member");
    // Two top folders each holding one.
    check_refused(
        stage_bytes(myr::test::make_archive(
            {{"a/" + kBin, data}, {"b/README", "x"}, {"b/" + kBin, data}}, Format::tar_xz)),
        "b/" + kBin, "refusing a second top folder holding " + kBin + " (a/ and b/)");
}

TEST_CASE("stage: no member of that name, at the top or under one folder, is refused") {
    const std::string data = binary_bytes(1000);
    check_refused(
        stage_bytes(myr::test::make_archive({{"otelcol", data}, {"README", "x"}}, Format::tar_gz)),
        kBin, "no member named " + kBin);
    // Two folders down is not "under one top folder".
    check_refused(stage_bytes(myr::test::make_archive({{"a/b/" + kBin, data}}, Format::tar_gz)),
                  kBin, "no member named " + kBin);
    // A prefix or suffix of the name is another name.
    check_refused(stage_bytes(myr::test::make_archive({{kBin + ".sig", data}, {"x" + kBin, data}},
                                                      Format::zip)),
                  kBin, "no member named " + kBin);
}

TEST_CASE("stage: a binary over the size limit is refused") {
    const std::string data = binary_bytes(10001);
    for (Format f : {Format::tar_gz, Format::zip}) {
        const std::string format = myr::test::to_string(f);
        CAPTURE(format);
        check_refused(stage_bytes(myr::test::make_archive(release(kTop + "/" + kBin, data), f),
                                  limits(10000)),
                      kTop + "/" + kBin, "over the limit of 10000");
        // Exactly at the limit is fine.
        auto ok = stage_bytes(
            myr::test::make_archive(release(kTop + "/" + kBin, data.substr(0, 10000)), f),
            limits(10000));
        CHECK_MESSAGE(ok.result.ok(), ok.result.error().message());
    }
}

TEST_CASE("stage: an archive that unpacks to far more than the limit allows is refused (bomb)") {
    // 64 MiB of zeros compress to about 64 KiB: the unpacked limit (4 x 1 MiB) stops it while the
    // reader skips the filler, before the binary is even reached — and also after it.
    const std::string data = binary_bytes(1000);
    for (bool filler_first : {true, false}) {
        CAPTURE(filler_first);
        std::vector<Member> m{{"filler", "", Kind::file, "", 64ull << 20}};
        if (filler_first) {
            m.push_back({kBin, data});
        } else {
            m.insert(m.begin(), Member(kBin, data));
        }
        const std::string bomb = myr::test::make_archive(m, Format::tar_gz);
        CHECK(bomb.size() < 200 * 1024);
        auto s = stage_bytes(bomb, limits(1 << 20));
        check_refused(s, filler_first ? "archive" : kBin, "unpacks to more than 4194304 bytes");
    }
    // An explicit max_unpacked wins over the default.
    stage::ExtractLimits l = limits(1 << 20);
    l.max_unpacked = 100000;
    auto s =
        stage_bytes(myr::test::make_archive({{"filler", "", Kind::file, "", 1 << 20}, {kBin, data}},
                                            Format::tar_xz),
                    l);
    check_refused(s, "archive", "unpacks to more than 100000 bytes");
}

TEST_CASE("stage: too many members are refused") {
    std::vector<Member> m;
    for (int i = 0; i < 50; ++i) m.push_back({"f" + std::to_string(i), "x"});
    m.push_back({kBin, "bin"});
    stage::ExtractLimits l = limits();
    l.max_members = 20;
    check_refused(stage_bytes(myr::test::make_archive(m, Format::tar), l), "archive",
                  "more than 20 members");
}

TEST_CASE("stage: a truncated archive is refused, also when the binary came out whole") {
    const std::string data = binary_bytes();
    for (Format f : {Format::tar_gz, Format::tar_xz, Format::tar, Format::zip}) {
        const std::string format = myr::test::to_string(f);
        CAPTURE(format);
        const std::string good = myr::test::make_archive(
            {{kTop + "/" + kBin, data}, {kTop + "/LICENSE", binary_bytes(50000)}}, f);
        // A plain tar cut inside its closing zero blocks still holds every member whole, and
        // libarchive reads it as complete: cut it inside the last member's data instead.
        std::vector<size_t> cuts{good.size() / 3, good.size() - 64, good.size() - 1};
        if (f == Format::tar) cuts = {good.size() / 3, good.size() - 1024 - 600};
        for (size_t keep : cuts) {
            CAPTURE(keep);
            auto s = stage_bytes(good.substr(0, keep));
            REQUIRE_FALSE(s.result.ok());
            INFO(s.result.error().message());
            CHECK(s.result.error().code() == Errc::invalid);
            CHECK(s.result.error().message().find("truncated or corrupt archive") !=
                  std::string::npos);
            CHECK(s.left.empty());
        }
    }
}

TEST_CASE("stage: flipped bytes in a good archive are refused") {
    const std::string data = binary_bytes();
    for (Format f : {Format::tar_gz, Format::tar_xz, Format::zip, Format::tar}) {
        const std::string format = myr::test::to_string(f);
        CAPTURE(format);
        const std::string good = myr::test::make_archive(release(kTop + "/" + kBin, data), f);
        // The middle of the compressed data (of the binary, for plain tar: its header), the first
        // bytes (magic) and one byte near the end (checksums, central directory).
        std::vector<size_t> where{good.size() / 2, 0, good.size() - 30};
        if (f == Format::tar) where = {0, 600, 1600};  // the headers; plain tar has no checksum
        // zip: its central directory has no checksum either (a flipped name of another member
        // goes unnoticed), but a flipped directory offset does not.
        if (f == Format::zip) where = {good.size() / 2, 0, good.size() - 6};
        for (size_t at : where) {  // of the data itself
            CAPTURE(at);
            auto s = stage_bytes(myr::test::flip_bytes(good, at, 4));
            REQUIRE_FALSE(s.result.ok());
            INFO(s.result.error().message());
            CHECK(s.result.error().code() == Errc::invalid);
            CHECK(s.left.empty());
        }
    }
}

TEST_CASE("stage: an empty file and a file that is no archive are refused") {
    check_refused(stage_bytes(""), "archive", "refusing empty file");
    check_refused(stage_bytes("#!/bin/sh\necho I am not a release archive\n"), "archive",
                  "not a tar or zip archive");
    // Zero blocks are the end of a tar: an empty archive.
    check_refused(stage_bytes(std::string(4096, '\0')), kBin, "no member named");
}

TEST_CASE("stage: a binary name that is not one path component is refused before reading") {
    myr::test::TempDir dir;
    int dfd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (const std::string& name : {std::string(""), std::string(".."), std::string("a/b")}) {
        auto r = stage::extract_binary(-1, name, dfd, limits());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code() == Errc::invalid);
    }
    auto r = stage::extract_binary(-1, kBin, dfd, stage::ExtractLimits{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find("max_binary_size") != std::string::npos);
    ::close(dfd);
}

TEST_CASE("stage: a member larger than the staging volume's room is refused from its header") {
    if (!myr::test::is_root()) MYR_SKIP("mounting a small tmpfs needs root");
    myr::test::TempDir dir;
    const std::string mnt = dir / "small";
    REQUIRE(::mkdir(mnt.c_str(), 0700) == 0);
    REQUIRE(::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=256k") == 0);
    struct Unmount {
        std::string path;
        ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
    } unmount{mnt};
    // The size comes from the tar header, and from the zip's central directory.
    for (Format f : {Format::tar_gz, Format::zip}) {
        CAPTURE(to_string(f));
        auto s = stage_bytes(
            myr::test::make_archive(release(kTop + "/" + kBin, binary_bytes(1 << 20)), f),
            limits(4 << 20), mnt);
        REQUIRE_FALSE(s.result.ok());
        INFO(s.result.error().message());
        // ENOSPC, as the write that would have failed: the installer counts it transient.
        CHECK(s.result.error().code() == Errc::system);
        CHECK(s.result.error().sys_errno() == ENOSPC);
        CHECK(s.result.error().message().find("stage: " + kTop + "/" + kBin +
                                              ": not enough space on the volume: need 1048576, "
                                              "have ") != std::string::npos);
        CHECK(s.left.empty());
    }
}

TEST_CASE(
    "stage: a failing create, write, fsync, chmod, rename or directory fsync leaves nothing") {
#if !MYR_FAULT_INJECTION
    MYR_SKIP("built without fault injection");
#else
    const std::string archive =
        myr::test::make_archive(release(kTop + "/" + kBin, binary_bytes()), Format::tar_gz);
    // fsx.fsync_dir comes after the rename: the renamed binary is removed again.
    for (const char* point :
         {"fsx.create", "fsx.write", "fsx.fsync", "fsx.fchmod", "fsx.rename", "fsx.fsync_dir"}) {
        CAPTURE(point);
        ::setenv("MYRIARCH_FAULT", (std::string(point) + ":fail").c_str(), 1);
        fault::reload();
        auto s = stage_bytes(archive);
        ::unsetenv("MYRIARCH_FAULT");
        fault::reload();
        REQUIRE_FALSE(s.result.ok());
        CHECK(s.result.error().code() == Errc::injected);
        CHECK(s.result.error().message().find("stage: " + kTop + "/" + kBin) != std::string::npos);
        CHECK(s.left.empty());
    }
#endif
}

TEST_CASE("stage: an archive read from a pipe (no seeking) comes out the same") {
    ::signal(SIGPIPE, SIG_IGN);  // the writer thread must see EPIPE, not die, if reading stops
    const std::string data = binary_bytes();
    for (Format f : {Format::tar_gz, Format::tar, Format::zip, Format::tar_xz}) {
        const std::string format = myr::test::to_string(f);
        CAPTURE(format);
        const std::string archive = myr::test::make_archive(release(kTop + "/" + kBin, data), f);
        myr::test::TempDir dir;
        int p[2];
        REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
        std::thread writer([&] {
            size_t off = 0;
            while (off < archive.size()) {
                ssize_t n = ::write(p[1], archive.data() + off, archive.size() - off);
                if (n <= 0) break;
                off += static_cast<size_t>(n);
            }
            ::close(p[1]);
        });
        int dfd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        auto r = stage::extract_binary(p[0], kBin, dfd, limits());
        ::close(p[0]);  // a refusal may stop reading early: the writer then gets EPIPE
        writer.join();
        ::close(dfd);
        REQUIRE_MESSAGE(r.ok(), r.error().message());
        CHECK(r->sha256_hex == hash::to_hex(hash::sha256(data)));
        CHECK(myr::test::read_file(dir / kBin) == data);
    }
}
