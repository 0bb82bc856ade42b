// Unit tests of the durable file primitives: each primitive, failure injection at every step (which
// must leave the old file and no temp file), symlink refusal, and the size cap of read_file_at.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/fault.hpp"
#include "core/fd.hpp"
#include "fsx/copy.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "harness.hpp"

using namespace myr;
using namespace myr::fsx;
using myr::test::TempDir;

namespace {

// Sets MYRIARCH_FAULT for the lifetime of the object.
struct FaultEnv {
    explicit FaultEnv(const std::string& spec) {
        ::setenv("MYRIARCH_FAULT", spec.c_str(), 1);
        fault::reload();
    }
    ~FaultEnv() {
        ::unsetenv("MYRIARCH_FAULT");
        fault::reload();
    }
};

UniqueFd must_open_dir(const std::string& path) {
    auto fd = open_dir(path);
    REQUIRE_MESSAGE(fd.ok(), (fd.ok() ? "" : fd.error().message()));
    return std::move(fd.value());
}

std::vector<std::string> temp_leftovers(int dirfd) {
    std::vector<std::string> out;
    auto names = list_dir(dirfd);
    REQUIRE(names.ok());
    for (const auto& n : *names) {
        if (is_temp_name(n)) out.push_back(n);
    }
    return out;
}

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

std::string pattern(size_t size) {
    std::string s(size, '\0');
    uint32_t x = 12345;
    for (auto& c : s) {
        x = x * 1103515245u + 12345u;
        c = static_cast<char>(x >> 16);
    }
    return s;
}

}  // namespace

TEST_CASE("fsx: UniqueFd closes once and moves ownership") {
    int raw = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(raw >= 0);
    {
        UniqueFd a(raw);
        UniqueFd b(std::move(a));
        CHECK_FALSE(a.valid());
        CHECK(b.get() == raw);
        CHECK(::fcntl(raw, F_GETFD) != -1);
    }
    CHECK(::fcntl(raw, F_GETFD) == -1);
}

TEST_CASE("fsx: open_dir refuses relative paths, symlinks and files") {
    TempDir t;
    ::mkdir((t / "real").c_str(), 0755);
    REQUIRE(::symlink((t / "real").c_str(), (t / "link").c_str()) == 0);
    myr::test::write_file(t / "file", "x");

    CHECK(open_dir(t / "real").ok());
    CHECK(open_dir(t / "real/").ok());
    CHECK_FALSE(open_dir("relative/dir").ok());

    auto link = open_dir(t / "link");
    REQUIRE_FALSE(link.ok());
    CHECK(link.error().message().find("symlink") != std::string::npos);
    // A trailing slash must not make lstat follow the link.
    CHECK_FALSE(open_dir(t / "link/").ok());

    auto file = open_dir(t / "file");
    REQUIRE_FALSE(file.ok());
    CHECK(file.error().sys_errno() == ENOTDIR);
    auto missing = open_dir(t / "missing");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().sys_errno() == ENOENT);
}

TEST_CASE("fsx: open_dir_at takes one component and refuses a symlink") {
    TempDir t;
    ::mkdir((t / "sub").c_str(), 0755);
    REQUIRE(::symlink((t / "sub").c_str(), (t / "link").c_str()) == 0);
    auto dir = must_open_dir(t.path());
    CHECK(open_dir_at(dir.get(), "sub").ok());
    auto link = open_dir_at(dir.get(), "link");
    REQUIRE_FALSE(link.ok());
    CHECK(link.error().message().find("refusing symlink") != std::string::npos);
    CHECK_FALSE(open_dir_at(dir.get(), "sub/..").ok());
    CHECK_FALSE(open_dir_at(dir.get(), "..").ok());
}

TEST_CASE("fsx: make_dir_at creates, and accepts an existing directory only with exist_ok") {
    TempDir t;
    auto dir = must_open_dir(t.path());
    REQUIRE(make_dir_at(dir.get(), "a", 0750).ok());
    CHECK(mode_of(t / "a") == 0750);
    auto again = make_dir_at(dir.get(), "a", 0750);
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().sys_errno() == EEXIST);
    CHECK(make_dir_at(dir.get(), "a", 0750, true).ok());

    REQUIRE(::symlink((t / "a").c_str(), (t / "link").c_str()) == 0);
    CHECK_FALSE(make_dir_at(dir.get(), "link", 0750, true).ok());
}

TEST_CASE("fsx: write_file_atomic writes content and mode and leaves no temp file") {
    TempDir t;
    auto dir = must_open_dir(t.path());
    REQUIRE(write_file_atomic(dir.get(), "state.json", "{\"a\":1}", 0644).ok());
    CHECK(myr::test::read_file(t / "state.json") == "{\"a\":1}");
    CHECK(mode_of(t / "state.json") == 0644);
    REQUIRE(write_file_atomic(dir.get(), "state.json", "{\"a\":2}", 0600).ok());
    CHECK(myr::test::read_file(t / "state.json") == "{\"a\":2}");
    CHECK(mode_of(t / "state.json") == 0600);
    CHECK(temp_leftovers(dir.get()).empty());
}

TEST_CASE("fsx: write_file_atomic refuses to replace a symlink or a directory") {
    TempDir t;
    myr::test::write_file(t / "victim", "precious");
    REQUIRE(::symlink((t / "victim").c_str(), (t / "link").c_str()) == 0);
    REQUIRE(::symlink((t / "nowhere").c_str(), (t / "dangling").c_str()) == 0);
    ::mkdir((t / "dir").c_str(), 0755);
    auto dir = must_open_dir(t.path());
    CHECK_FALSE(write_file_atomic(dir.get(), "link", "evil", 0644).ok());
    CHECK_FALSE(write_file_atomic(dir.get(), "dangling", "evil", 0644).ok());
    CHECK_FALSE(write_file_atomic(dir.get(), "dir", "evil", 0644).ok());
    CHECK(myr::test::read_file(t / "victim") == "precious");
    CHECK_FALSE(myr::test::exists(t / "nowhere"));
    CHECK(temp_leftovers(dir.get()).empty());
}

TEST_CASE("fsx: a failure at any step of write_file_atomic keeps the old file and no temp file") {
    for (const char* point : {"fsx.create", "fsx.write", "fsx.fsync", "fsx.fchmod", "fsx.rename"}) {
        CAPTURE(point);
        TempDir t;
        auto dir = must_open_dir(t.path());
        REQUIRE(write_file_atomic(dir.get(), "marker", "old", 0644).ok());
        Status s = [&] {
            FaultEnv fault(std::string(point) + ":fail");
            return write_file_atomic(dir.get(), "marker", "new", 0600);
        }();
        REQUIRE_FALSE(s.ok());
        CHECK(s.error().message().find(point) != std::string::npos);
        CHECK(myr::test::read_file(t / "marker") == "old");
        CHECK(mode_of(t / "marker") == 0644);
        CHECK(temp_leftovers(dir.get()).empty());
    }
}

TEST_CASE("fsx: a failed fsync of the directory after the rename is reported") {
    TempDir t;
    auto dir = must_open_dir(t.path());
    FaultEnv fault("fsx.fsync_dir:fail");
    auto s = write_file_atomic(dir.get(), "marker", "new", 0644);
    REQUIRE_FALSE(s.ok());
    CHECK(s.error().message().find("fsync directory") != std::string::npos);
    CHECK(temp_leftovers(dir.get()).empty());
}

TEST_CASE("fsx: TempFile removes its file when dropped uncommitted") {
    TempDir t;
    auto dir = must_open_dir(t.path());
    std::string name;
    {
        auto tmp = TempFile::create(dir.get(), "binary");
        REQUIRE(tmp.ok());
        name = tmp->name();
        CHECK(is_temp_name(name));
        CHECK(mode_of(t / name) == 0600);
        REQUIRE(tmp->write("partial").ok());
    }
    CHECK_FALSE(myr::test::exists(t / name));
    CHECK_FALSE(myr::test::exists(t / "binary"));
}

TEST_CASE("fsx: is_temp_name recognises only the temp pattern") {
    CHECK(is_temp_name(".install.json.tmp-a1B2c3"));
    CHECK_FALSE(is_temp_name("install.json"));
    CHECK_FALSE(is_temp_name(".hidden"));
    CHECK_FALSE(is_temp_name("x.tmp-abcdef"));
}

TEST_CASE("fsx: replace_symlink switches atomically and keeps the old link on failure") {
    TempDir t;
    auto dir = must_open_dir(t.path());
    REQUIRE(replace_symlink(dir.get(), "current", "versions/1.0.0").ok());
    auto target = read_link_at(dir.get(), "current");
    REQUIRE(target.ok());
    CHECK(*target == "versions/1.0.0");
    REQUIRE(replace_symlink(dir.get(), "current", "versions/1.1.0").ok());
    CHECK(*read_link_at(dir.get(), "current") == "versions/1.1.0");

    for (const char* point : {"fsx.symlink", "fsx.rename"}) {
        CAPTURE(point);
        Status s = [&] {
            FaultEnv fault(std::string(point) + ":fail");
            return replace_symlink(dir.get(), "current", "versions/2.0.0");
        }();
        CHECK_FALSE(s.ok());
        CHECK(*read_link_at(dir.get(), "current") == "versions/1.1.0");
        CHECK(temp_leftovers(dir.get()).empty());
    }

    ::mkdir((t / "adir").c_str(), 0755);
    CHECK_FALSE(replace_symlink(dir.get(), "adir", "x").ok());
}

TEST_CASE("fsx: read_link_at refuses a regular file") {
    TempDir t;
    myr::test::write_file(t / "file", "x");
    auto dir = must_open_dir(t.path());
    auto r = read_link_at(dir.get(), "file");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message().find("not a symlink") != std::string::npos);
}

TEST_CASE("fsx: read_file_at reads within the cap and refuses larger files") {
    TempDir t;
    myr::test::write_file(t / "small", "hello");
    myr::test::write_file(t / "big", std::string(10000, 'x'));
    auto dir = must_open_dir(t.path());
    auto small = read_file_at(dir.get(), "small", 5);
    REQUIRE(small.ok());
    CHECK(*small == "hello");
    auto big = read_file_at(dir.get(), "big", 9999);
    REQUIRE_FALSE(big.ok());
    CHECK(big.error().message() == "larger than 9999 bytes");
    CHECK(read_file_at(dir.get(), "big", 10000).ok());
}

TEST_CASE("fsx: read_file_at refuses symlinks and does not hang on a FIFO") {
    TempDir t;
    myr::test::write_file(t / "real", "x");
    REQUIRE(::symlink((t / "real").c_str(), (t / "link").c_str()) == 0);
    REQUIRE(::mkfifo((t / "fifo").c_str(), 0644) == 0);
    auto dir = must_open_dir(t.path());
    auto link = read_file_at(dir.get(), "link", 100);
    REQUIRE_FALSE(link.ok());
    CHECK(link.error().message().find("symlink") != std::string::npos);
    auto fifo = read_file_at(dir.get(), "fifo", 100);  // would block forever if it opened it
    REQUIRE_FALSE(fifo.ok());
    CHECK(fifo.error().message().find("FIFO") != std::string::npos);
}

TEST_CASE("fsx: exists_at and stat_at use lstat semantics") {
    TempDir t;
    REQUIRE(::symlink((t / "nowhere").c_str(), (t / "dangling").c_str()) == 0);
    auto dir = must_open_dir(t.path());
    CHECK(*exists_at(dir.get(), "dangling"));
    CHECK_FALSE(*exists_at(dir.get(), "missing"));
    auto st = stat_at(dir.get(), "dangling");
    REQUIRE(st.ok());
    REQUIRE(st->has_value());
    CHECK(S_ISLNK((*st)->st_mode));
}

TEST_CASE("fsx: list_dir lists sorted names and can be called twice") {
    TempDir t;
    myr::test::write_file(t / "b", "");
    myr::test::write_file(t / "a", "");
    ::mkdir((t / "c").c_str(), 0755);
    auto dir = must_open_dir(t.path());
    auto first = list_dir(dir.get());
    REQUIRE(first.ok());
    CHECK(*first == std::vector<std::string>{"a", "b", "c"});
    CHECK(*list_dir(dir.get()) == *first);
}

TEST_CASE("fsx: remove_tree_at removes a tree but never follows a symlink out of it") {
    TempDir t;
    ::mkdir((t / "outside").c_str(), 0755);
    myr::test::write_file(t / "outside/keep", "keep");
    ::mkdir((t / "tree").c_str(), 0755);
    ::mkdir((t / "tree/sub").c_str(), 0755);
    myr::test::write_file(t / "tree/sub/file", "x");
    REQUIRE(::symlink((t / "outside").c_str(), (t / "tree/sub/escape").c_str()) == 0);
    REQUIRE(::symlink((t / "outside/keep").c_str(), (t / "tree/filelink").c_str()) == 0);
    REQUIRE(::symlink((t / "outside").c_str(), (t / "toplink").c_str()) == 0);
    auto dir = must_open_dir(t.path());

    REQUIRE(remove_tree_at(dir.get(), "tree").ok());
    CHECK_FALSE(myr::test::exists(t / "tree"));
    CHECK(myr::test::read_file(t / "outside/keep") == "keep");

    // The named entry itself a symlink to a directory: only the link goes.
    REQUIRE(remove_tree_at(dir.get(), "toplink").ok());
    CHECK_FALSE(myr::test::exists(t / "toplink"));
    CHECK(myr::test::read_file(t / "outside/keep") == "keep");

    CHECK(remove_tree_at(dir.get(), "missing").ok());
}

TEST_CASE("fsx: rename_at with no_replace refuses an existing target") {
    TempDir t;
    myr::test::write_file(t / "a", "a");
    myr::test::write_file(t / "b", "b");
    auto dir = must_open_dir(t.path());
    auto r = rename_at(dir.get(), "a", dir.get(), "b", true);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().sys_errno() == EEXIST);
    CHECK(myr::test::read_file(t / "b") == "b");
    REQUIRE(rename_at(dir.get(), "a", dir.get(), "c", true).ok());
    CHECK(myr::test::read_file(t / "c") == "a");
    CHECK(unlink_at(dir.get(), "c").ok());
    CHECK(unlink_at(dir.get(), "c").ok());  // missing is fine
    CHECK_FALSE(myr::test::exists(t / "c"));
}

TEST_CASE("fsx: copy_fd copies exactly, and the observer sees every byte in order") {
    TempDir t;
    const std::string data = pattern(3 * 1024 * 1024 + 17);
    myr::test::write_file(t / "src", data);
    auto dir = must_open_dir(t.path());

    for (bool observe : {false, true}) {
        CAPTURE(observe);
        auto src = open_regular_at(dir.get(), "src");
        REQUIRE(src.ok());
        std::string seen;
        ChunkObserver obs;
        if (observe)
            obs = [&](const uint8_t* p, size_t n) {
                seen.append(reinterpret_cast<const char*>(p), n);
            };
        auto copied = copy_file_atomic(src->get(), dir.get(), "dst", 0755, obs);
        REQUIRE(copied.ok());
        CHECK(*copied == data.size());
        CHECK(myr::test::read_file(t / "dst") == data);
        CHECK(mode_of(t / "dst") == 0755);
        if (observe) CHECK(seen == data);
        CHECK(temp_leftovers(dir.get()).empty());
    }
}

TEST_CASE("fsx: copy_fd falls back to read/write for a pipe source") {
    int p[2];
    REQUIRE(::pipe(p) == 0);
    const std::string data = "through a pipe";
    REQUIRE(::write(p[1], data.data(), data.size()) == static_cast<ssize_t>(data.size()));
    ::close(p[1]);
    TempDir t;
    auto dir = must_open_dir(t.path());
    auto copied = copy_file_atomic(p[0], dir.get(), "out", 0644);
    ::close(p[0]);
    REQUIRE(copied.ok());
    CHECK(*copied == data.size());
    CHECK(myr::test::read_file(t / "out") == data);
}

TEST_CASE("fsx: a write failing mid-copy keeps the old file and no temp file") {
    TempDir t;
    myr::test::write_file(t / "src", pattern(20 * 1024 * 1024));
    myr::test::write_file(t / "dst", "old binary", 0755);
    auto dir = must_open_dir(t.path());
    for (bool observe : {false, true}) {
        CAPTURE(observe);
        auto src = open_regular_at(dir.get(), "src");
        REQUIRE(src.ok());
        ChunkObserver obs;
        if (observe) obs = [](const uint8_t*, size_t) {};
        FaultEnv fault("fsx.write:fail@2");
        auto copied = copy_file_atomic(src->get(), dir.get(), "dst", 0755, obs);
        REQUIRE_FALSE(copied.ok());
        CHECK(copied.error().message().find("write") == 0);
        CHECK(myr::test::read_file(t / "dst") == "old binary");
        CHECK(temp_leftovers(dir.get()).empty());
    }
}

TEST_CASE("fsx: copy_file_atomic refuses a symlink destination before copying") {
    TempDir t;
    myr::test::write_file(t / "src", "data");
    myr::test::write_file(t / "victim", "precious");
    REQUIRE(::symlink((t / "victim").c_str(), (t / "dst").c_str()) == 0);
    auto dir = must_open_dir(t.path());
    auto src = open_regular_at(dir.get(), "src");
    REQUIRE(src.ok());
    auto copied = copy_file_atomic(src->get(), dir.get(), "dst", 0644);
    REQUIRE_FALSE(copied.ok());
    CHECK(copied.error().message().find("symlink") != std::string::npos);
    CHECK(myr::test::read_file(t / "victim") == "precious");
    CHECK(temp_leftovers(dir.get()).empty());
}

TEST_CASE("fsx: space_of counts what a write takes and names the filesystem") {
    TempDir t;
    auto dir = must_open_dir(t.path());
    auto before = space_of(dir.get());
    REQUIRE(before.ok());
    struct stat st {};
    REQUIRE(::fstat(dir.get(), &st) == 0);
    CHECK(before->device == static_cast<uint64_t>(st.st_dev));
    CHECK(before->available > 0);
    CHECK_FALSE(space_of(-1).ok());
    if (!myr::test::is_root()) return;
    // On a 1 MiB tmpfs, 256 KiB written are 256 KiB less room, to the byte.
    ::mkdir((t / "vol").c_str(), 0755);
    if (::mount("tmpfs", (t / "vol").c_str(), "tmpfs", 0, "size=1m") != 0) return;
    struct Unmount {
        std::string dir;
        ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
    } unmount{t / "vol"};
    auto vol = must_open_dir(t / "vol");
    auto empty = space_of(vol.get());
    REQUIRE(empty.ok());
    CHECK(empty->available == 1024 * 1024);
    CHECK(empty->device != before->device);
    REQUIRE(write_file_atomic(vol.get(), "f", pattern(256 * 1024), 0644).ok());
    auto after = space_of(vol.get());
    REQUIRE(after.ok());
    CHECK(after->available == empty->available - 256 * 1024);
}

TEST_CASE("fsx: ENOSPC on a full tmpfs keeps the old file and leaves no temp file") {
    if (!myr::test::is_root()) {
        MYR_SKIP("mounting a tmpfs needs root");
    }
    TempDir t;
    myr::test::write_file(t / "src", pattern(3 * 1024 * 1024));
    ::mkdir((t / "vol").c_str(), 0755);
    if (::mount("tmpfs", (t / "vol").c_str(), "tmpfs", 0, "size=1m") != 0) {
        int err = errno;
        if (err == EPERM) {
            MYR_SKIP("mounting a tmpfs is not permitted here (root without CAP_SYS_ADMIN)");
        }
        FAIL("mount -t tmpfs: " << std::strerror(err));
    }
    struct Unmount {
        std::string dir;
        ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
    } unmount{t / "vol"};
    auto vol = must_open_dir(t / "vol");
    REQUIRE(write_file_atomic(vol.get(), "binary", "old", 0755).ok());
    auto src_dir = must_open_dir(t.path());

    for (bool observe : {false, true}) {
        CAPTURE(observe);
        auto src = open_regular_at(src_dir.get(), "src");
        REQUIRE(src.ok());
        ChunkObserver obs;
        if (observe) obs = [](const uint8_t*, size_t) {};
        auto copied = copy_file_atomic(src->get(), vol.get(), "binary", 0755, obs);
        REQUIRE_FALSE(copied.ok());
        CHECK(copied.error().sys_errno() == ENOSPC);
        CHECK(copied.error().message() == "write: No space left on device");
        CHECK(myr::test::read_file(t / "vol/binary") == "old");
        CHECK(temp_leftovers(vol.get()).empty());
    }
    auto big = write_file_atomic(vol.get(), "binary", pattern(2 * 1024 * 1024), 0755);
    REQUIRE_FALSE(big.ok());
    CHECK(big.error().sys_errno() == ENOSPC);
    CHECK(myr::test::read_file(t / "vol/binary") == "old");
    CHECK(temp_leftovers(vol.get()).empty());
}

TEST_CASE("fsx: a tree too deep to remove is named once, not once per level") {
    TempDir t;
    std::string path = t / "deep";
    for (int i = 0; i < 300; ++i, path += "/level") REQUIRE(::mkdir(path.c_str(), 0755) == 0);
    UniqueFd dir = must_open_dir(t.path());
    auto st = remove_tree_at(dir.get(), "deep");
    REQUIRE_FALSE(st);
    const std::string msg = st.error().message();
    CHECK(msg.find("deeper than 256 levels") != std::string::npos);
    INFO(msg);
    CHECK(msg.rfind("remove deep: ", 0) == 0);
    CHECK(msg.find("level") == msg.find("levels"));  // no "level: level: …" chain
    CHECK(msg.size() < 120);
}
