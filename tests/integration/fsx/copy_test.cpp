// `copy` and `install-self` through the real binary: one test case per rule of the spec's "Init
// container commands" section. Each checks the exit code, that stderr names the path and the
// reason, and the state left on disk (contents, modes, the old file untouched, no temp file).
#include <dirent.h>
#include <doctest/doctest.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "fsx/file.hpp"
#include "harness.hpp"

using namespace myr::test;

namespace {

RunResult updater(const std::vector<std::string>& args, const SpawnOptions& opts = {}) {
    std::vector<std::string> argv{updater_bin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, 60s, opts);
}

bool contains(const std::string& hay, const std::string& needle) {
    return hay.find(needle) != std::string::npos;
}

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

std::vector<std::string> entries(const std::string& dir) {
    REQUIRE(exists(dir));
    return list_dir(dir);
}

std::vector<std::string> temp_files(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& n : entries(dir)) {
        if (myr::fsx::is_temp_name(n) || contains(n, ".tmp-")) out.push_back(n);
    }
    return out;
}

// A refusal: exit 1, and stderr names the path and the reason.
void check_refused(const RunResult& r, const std::string& path, const std::string& reason) {
    CAPTURE(r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, path));
    CHECK(contains(r.err, reason));
}

// Mounts a tmpfs of `size` on `dir` and unmounts it at the end of the scope.
struct TmpfsMount {
    std::string dir;
    bool mounted = false;
    int err = 0;
    TmpfsMount(const std::string& d, const std::string& size) : dir(d) {
        ::mkdir(dir.c_str(), 0755);
        mounted = ::mount("tmpfs", dir.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
        if (!mounted) err = errno;
    }
    ~TmpfsMount() {
        if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
    }
};

std::string big_content(size_t size) {
    std::string s(size, '\0');
    for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>((i * 131) ^ (i >> 9));
    return s;
}

// A listening UNIX socket bound at `path` (what a stray agent socket on a volume looks like),
// closed at the end of the scope; the socket file stays.
struct UnixSocket {
    int fd = -1;
    explicit UnixSocket(const std::string& path) {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        REQUIRE(path.size() < sizeof addr.sun_path);
        std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
        fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd >= 0);
        REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(fd, 1) == 0);
    }
    ~UnixSocket() {
        if (fd >= 0) ::close(fd);
    }
    UnixSocket(const UnixSocket&) = delete;
    UnixSocket& operator=(const UnixSocket&) = delete;
};

bool is_socket(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

// ---- what the commands do
// -------------------------------------------------------------------------

TEST_CASE("copy: copies a regular file without execute bit as 0644") {
    TempDir t;
    write_file(t / "config.yaml", "a: 1\n", 0600);
    auto r = updater({"copy", t / "config.yaml", t / "out.yaml"});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(read_file(t / "out.yaml") == "a: 1\n");
    CHECK(mode_of(t / "out.yaml") == 0644);
    CHECK(temp_files(t.path()).empty());
}

TEST_CASE("copy: any execute bit of the source gives 0755") {
    TempDir t;
    write_file(t / "otelcol", "binary", 0700);
    // Readable by its owner (the test may run without root) and executable by the group only.
    write_file(t / "groupx", "binary", 0410);
    REQUIRE(updater({"copy", t / "otelcol", t / "a"}).exit_code == 0);
    REQUIRE(updater({"copy", t / "groupx", t / "b"}).exit_code == 0);
    CHECK(mode_of(t / "a") == 0755);
    CHECK(mode_of(t / "b") == 0755);
    CHECK(read_file(t / "a") == "binary");
}

TEST_CASE("copy: an existing directory as DST receives DST/<name of SRC>") {
    TempDir t;
    ::mkdir((t / "shared").c_str(), 0755);
    write_file(t / "otelcol-contrib", "collector", 0755);
    for (const std::string& dst : {t / "shared", t / "shared/"}) {
        CAPTURE(dst);
        auto r = updater({"copy", t / "otelcol-contrib", dst});
        CAPTURE(r.err);
        REQUIRE(r.exit_code == 0);
        CHECK(read_file(t / "shared/otelcol-contrib") == "collector");
        CHECK(mode_of(t / "shared/otelcol-contrib") == 0755);
        CHECK(entries(t / "shared") == std::vector<std::string>{"otelcol-contrib"});
    }
}

TEST_CASE("copy: replaces an existing regular file and leaves no temp file") {
    TempDir t;
    write_file(t / "src", "new content", 0644);
    write_file(t / "dst", "old content that is longer", 0755);
    auto r = updater({"copy", t / "src", t / "dst"});
    REQUIRE(r.exit_code == 0);
    CHECK(read_file(t / "dst") == "new content");
    CHECK(mode_of(t / "dst") == 0644);
    CHECK(temp_files(t.path()).empty());
}

TEST_CASE("copy: a large file is copied byte for byte") {
    TempDir t;
    const std::string data = big_content(12 * 1024 * 1024 + 3);
    write_file(t / "big", data, 0755);
    auto r = updater({"copy", t / "big", t / "copy"});
    REQUIRE(r.exit_code == 0);
    CHECK(read_file(t / "copy") == data);
}

TEST_CASE("install-self: copies the running binary to DIR/myriarch-updater with mode 0755") {
    TempDir t;
    ::mkdir((t / "shared").c_str(), 0700);
    auto r = updater({"install-self", t / "shared"});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    const std::string installed = t / "shared/myriarch-updater";
    CHECK(mode_of(installed) == 0755);
    CHECK(read_file(installed) == read_file(updater_bin()));
    CHECK(entries(t / "shared") == std::vector<std::string>{"myriarch-updater"});
    auto v = run({installed, "version"});
    CHECK(v.exit_code == 0);
    CHECK(contains(v.out, "myriarch-updater"));
}

TEST_CASE("install-self: replaces an older copy on the volume") {
    TempDir t;
    write_file(t / "myriarch-updater", "old updater", 0755);
    REQUIRE(updater({"install-self", t.path()}).exit_code == 0);
    CHECK(read_file(t / "myriarch-updater") == read_file(updater_bin()));
}

// ---- usage --------------------------------------------------------------------------------------

TEST_CASE("copy and install-self: a relative path is refused with exit 1, naming it, with a hint") {
    TempDir t;
    write_file(t / "src", "x");
    SpawnOptions in_tmp;
    in_tmp.cwd = t.path();
    auto rel_src = updater({"copy", "src", t / "dst"}, in_tmp);
    CHECK(rel_src.exit_code == 1);
    CHECK(contains(rel_src.err, "absolute"));
    CHECK(contains(rel_src.err, "src"));
    auto rel_dst = updater({"copy", t / "src", "dst"}, in_tmp);
    CHECK(rel_dst.exit_code == 1);
    CHECK(contains(rel_dst.err, "absolute"));
    auto rel_dir = updater({"install-self", "."}, in_tmp);
    CHECK(rel_dir.exit_code == 1);
    CHECK(contains(rel_dir.err, "absolute"));
    CHECK(entries(t.path()) == std::vector<std::string>{"src"});
}

TEST_CASE("copy and install-self: a wrong number of arguments is a usage error") {
    CHECK(updater({"copy"}).exit_code == 2);
    CHECK(updater({"copy", "/a"}).exit_code == 2);
    CHECK(updater({"copy", "/a", "/b", "/c"}).exit_code == 2);
    CHECK(updater({"install-self"}).exit_code == 2);
    CHECK(updater({"install-self", "/a", "/b"}).exit_code == 2);
    auto help = updater({"copy", "--help"});
    CHECK(help.exit_code == 0);
    CHECK(contains(help.out, "Usage: myriarch-updater copy SRC DST"));
}

// ---- destination directory
// ------------------------------------------------------------------------

TEST_CASE("copy: the destination directory must exist and is not created") {
    TempDir t;
    write_file(t / "src", "x");
    auto r = updater({"copy", t / "src", t / "missing/dst"});
    check_refused(r, t / "missing", "destination directory does not exist");
    CHECK_FALSE(exists(t / "missing"));
    auto slash = updater({"copy", t / "src", t / "missing/"});
    check_refused(slash, t / "missing", "does not exist");
    CHECK_FALSE(exists(t / "missing"));
    auto self = updater({"install-self", t / "missing"});
    check_refused(self, t / "missing", "destination directory does not exist");
    CHECK_FALSE(exists(t / "missing"));
}

TEST_CASE("copy: a symlink as destination directory is refused") {
    TempDir t;
    write_file(t / "src", "x");
    ::mkdir((t / "elsewhere").c_str(), 0755);
    REQUIRE(::symlink((t / "elsewhere").c_str(), (t / "shared").c_str()) == 0);
    check_refused(updater({"copy", t / "src", t / "shared/dst"}), t / "shared",
                  "refusing symlink destination directory");
    CHECK(entries(t / "elsewhere").empty());
}

TEST_CASE("install-self: a symlink as DIR is refused, also with a trailing slash") {
    TempDir t;
    ::mkdir((t / "elsewhere").c_str(), 0755);
    REQUIRE(::symlink((t / "elsewhere").c_str(), (t / "shared").c_str()) == 0);
    check_refused(updater({"install-self", t / "shared"}), t / "shared", "refusing symlink");
    check_refused(updater({"install-self", t / "shared/"}), t / "shared", "refusing symlink");
    CHECK(entries(t / "elsewhere").empty());
}

TEST_CASE("install-self: DIR that is a regular file is refused") {
    TempDir t;
    write_file(t / "file", "keep");
    check_refused(updater({"install-self", t / "file"}), t / "file", "not a directory");
    CHECK(read_file(t / "file") == "keep");
}

// ---- existing destination entry
// ------------------------------------------------------------------

TEST_CASE("copy: a symlink destination to a file is refused and the target is untouched") {
    TempDir t;
    write_file(t / "src", "evil");
    write_file(t / "victim", "precious");
    REQUIRE(::symlink((t / "victim").c_str(), (t / "dst").c_str()) == 0);
    check_refused(updater({"copy", t / "src", t / "dst"}), t / "dst",
                  "refusing symlink destination");
    CHECK(read_file(t / "victim") == "precious");
    char buf[256] = {};
    CHECK(::readlink((t / "dst").c_str(), buf, sizeof buf - 1) > 0);
    CHECK(temp_files(t.path()).empty());
}

TEST_CASE("copy: a dangling symlink destination is refused and nothing is created") {
    TempDir t;
    write_file(t / "src", "evil");
    REQUIRE(::symlink((t / "planted").c_str(), (t / "dst").c_str()) == 0);
    check_refused(updater({"copy", t / "src", t / "dst"}), t / "dst",
                  "refusing symlink destination");
    CHECK_FALSE(exists(t / "planted"));
}

TEST_CASE("copy: a symlink destination to a directory is refused") {
    TempDir t;
    write_file(t / "src", "evil");
    ::mkdir((t / "elsewhere").c_str(), 0755);
    REQUIRE(::symlink((t / "elsewhere").c_str(), (t / "dst").c_str()) == 0);
    check_refused(updater({"copy", t / "src", t / "dst"}), t / "dst",
                  "refusing symlink destination");
    check_refused(updater({"copy", t / "src", t / "dst/"}), t / "dst",
                  "refusing symlink destination");
    CHECK(entries(t / "elsewhere").empty());
}

TEST_CASE("copy: a planted symlink at DIR/<name> is refused") {
    TempDir t;
    write_file(t / "otelcol", "evil");
    write_file(t / "victim", "precious");
    ::mkdir((t / "shared").c_str(), 0755);
    REQUIRE(::symlink((t / "victim").c_str(), (t / "shared/otelcol").c_str()) == 0);
    check_refused(updater({"copy", t / "otelcol", t / "shared"}), t / "shared/otelcol",
                  "refusing symlink destination");
    CHECK(read_file(t / "victim") == "precious");
}

TEST_CASE("install-self: a planted symlink at DIR/myriarch-updater is refused") {
    TempDir t;
    write_file(t / "victim", "precious");
    ::mkdir((t / "shared").c_str(), 0755);
    REQUIRE(::symlink((t / "victim").c_str(), (t / "shared/myriarch-updater").c_str()) == 0);
    check_refused(updater({"install-self", t / "shared"}), t / "shared/myriarch-updater",
                  "refusing symlink destination");
    CHECK(read_file(t / "victim") == "precious");
}

TEST_CASE("copy: a directory where the target file would go is refused") {
    TempDir t;
    write_file(t / "otelcol", "x");
    ::mkdir((t / "shared").c_str(), 0755);
    ::mkdir((t / "shared/otelcol").c_str(), 0755);
    check_refused(updater({"copy", t / "otelcol", t / "shared"}), t / "shared/otelcol",
                  "refusing directory as destination file");
    CHECK(entries(t / "shared/otelcol").empty());
}

TEST_CASE("copy: a device as destination is refused") {
    if (!is_root()) {
        MYR_SKIP("creating a device node needs root");
    }
    TempDir t;
    write_file(t / "src", "x");
    REQUIRE(::mknod((t / "dev").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
    check_refused(updater({"copy", t / "src", t / "dev"}), t / "dev",
                  "refusing character device destination");
    struct stat st {};
    REQUIRE(::lstat((t / "dev").c_str(), &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
}

TEST_CASE("copy: a FIFO as destination is refused") {
    TempDir t;
    write_file(t / "src", "x");
    REQUIRE(::mkfifo((t / "fifo").c_str(), 0644) == 0);
    auto r = updater({"copy", t / "src", t / "fifo"});
    check_refused(r, t / "fifo", "refusing FIFO destination");
    struct stat st {};
    REQUIRE(::lstat((t / "fifo").c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("copy: a UNIX socket as destination is refused and left in place") {
    TempDir t;
    write_file(t / "src", "x");
    UnixSocket sock(t / "sock");
    check_refused(updater({"copy", t / "src", t / "sock"}), t / "sock",
                  "refusing socket destination: not a regular file");
    CHECK(is_socket(t / "sock"));
    // The same entry met as DIR/<name of SRC>.
    ::mkdir((t / "shared").c_str(), 0755);
    UnixSocket inside(t / "shared/src");
    check_refused(updater({"copy", t / "src", t / "shared"}), t / "shared/src",
                  "refusing socket destination: not a regular file");
    CHECK(is_socket(t / "shared/src"));
    CHECK(temp_files(t / "shared").empty());
}

// ---- source
// -----------------------------------------------------------------------------------------

TEST_CASE("copy: a symlinked source is followed to its regular file") {
    TempDir t;
    // The layout of a mounted ConfigMap: key -> ..data/key.
    ::mkdir((t / "..data").c_str(), 0755);
    write_file(t / "..data/updater.yaml", "mode: container\n");
    REQUIRE(::symlink("..data/updater.yaml", (t / "updater.yaml").c_str()) == 0);
    ::mkdir((t / "out").c_str(), 0755);
    auto r = updater({"copy", t / "updater.yaml", t / "out"});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(read_file(t / "out/updater.yaml") == "mode: container\n");
    struct stat st {};
    REQUIRE(::lstat((t / "out/updater.yaml").c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
}

TEST_CASE("copy: a directory as source is refused") {
    TempDir t;
    ::mkdir((t / "dir").c_str(), 0755);
    check_refused(updater({"copy", t / "dir", t / "dst"}), t / "dir",
                  "refusing directory as source");
    CHECK_FALSE(exists(t / "dst"));
}

TEST_CASE("copy: a device as source is refused") {
    TempDir t;
    check_refused(updater({"copy", "/dev/null", t / "dst"}), "/dev/null",
                  "refusing character device as source");
    CHECK_FALSE(exists(t / "dst"));
}

TEST_CASE("copy: a FIFO without writer as source is refused without hanging") {
    TempDir t;
    REQUIRE(::mkfifo((t / "fifo").c_str(), 0644) == 0);
    REQUIRE(::symlink((t / "fifo").c_str(), (t / "link").c_str()) == 0);
    auto r = run({updater_bin(), "copy", t / "fifo", t / "dst"}, 10s);
    CHECK_FALSE(r.timed_out);
    check_refused(r, t / "fifo", "refusing FIFO as source");
    auto via_link = run({updater_bin(), "copy", t / "link", t / "dst"}, 10s);
    CHECK_FALSE(via_link.timed_out);
    check_refused(via_link, t / "link", "refusing FIFO as source");
    CHECK_FALSE(exists(t / "dst"));
}

TEST_CASE("copy: a UNIX socket as source is refused before it is opened") {
    TempDir t;
    UnixSocket sock(t / "sock");
    REQUIRE(::symlink((t / "sock").c_str(), (t / "link").c_str()) == 0);
    // open(2) on a socket fails with ENXIO ("cannot open source: No such device or address"), so
    // this reason can only come from the type check that runs before the open, the same check
    // that keeps a FIFO without writer from blocking the command.
    auto r = run({updater_bin(), "copy", t / "sock", t / "dst"}, 10s);
    check_refused(r, t / "sock", "refusing socket as source: not a regular file");
    CHECK_FALSE(contains(r.err, "cannot open source"));
    auto via_link = run({updater_bin(), "copy", t / "link", t / "dst"}, 10s);
    check_refused(via_link, t / "link", "refusing socket as source: not a regular file");
    CHECK_FALSE(exists(t / "dst"));
    CHECK(is_socket(t / "sock"));
}

TEST_CASE("copy: a missing source or a dangling symlink source is an error naming it") {
    TempDir t;
    check_refused(updater({"copy", t / "missing", t / "dst"}), t / "missing",
                  "No such file or directory");
    REQUIRE(::symlink((t / "nowhere").c_str(), (t / "dangling").c_str()) == 0);
    check_refused(updater({"copy", t / "dangling", t / "dst"}), t / "dangling",
                  "No such file or directory");
    CHECK_FALSE(exists(t / "dst"));
}

TEST_CASE("copy: source and destination must not be the same file") {
    TempDir t;
    write_file(t / "file", "keep", 0755);
    check_refused(updater({"copy", t / "file", t / "file"}), t / "file",
                  "source and destination are the same file");
    CHECK(read_file(t / "file") == "keep");

    REQUIRE(::symlink((t / "file").c_str(), (t / "link").c_str()) == 0);
    check_refused(updater({"copy", t / "link", t / "file"}), t / "file",
                  "source and destination are the same file");

    REQUIRE(::link((t / "file").c_str(), (t / "hard").c_str()) == 0);
    check_refused(updater({"copy", t / "hard", t / "file"}), t / "file",
                  "source and destination are the same file");

    // DST as a directory that already holds SRC.
    check_refused(updater({"copy", t / "file", t.path()}), t / "file",
                  "source and destination are the same file");
    CHECK(read_file(t / "file") == "keep");
    CHECK(mode_of(t / "file") == 0755);
    CHECK(temp_files(t.path()).empty());
}

TEST_CASE("install-self: installing over the running binary itself is refused") {
    TempDir t;
    write_file(t / "myriarch-updater", read_file(updater_bin()), 0755);
    auto r = run({t / "myriarch-updater", "install-self", t.path()});
    check_refused(r, t / "myriarch-updater", "source and destination are the same file");
    CHECK(read_file(t / "myriarch-updater") == read_file(updater_bin()));
}

// ---- failures keep the old file
// --------------------------------------------------------------------

TEST_CASE("copy: a failure at any step keeps the old file and leaves no temp file") {
#ifndef MYR_FAULT_INJECTION
    MYR_SKIP("built without fault injection");
#endif
    for (const char* point : {"fsx.create", "fsx.write", "fsx.fsync", "fsx.fchmod", "fsx.rename"}) {
        CAPTURE(point);
        TempDir t;
        write_file(t / "src", big_content(3 * 1024 * 1024), 0755);
        write_file(t / "dst", "old", 0644);
        SpawnOptions opts;
        opts.env["MYRIARCH_FAULT"] = std::string(point) + ":fail";
        auto r = updater({"copy", t / "src", t / "dst"}, opts);
        check_refused(r, t / "dst", point);
        CHECK(read_file(t / "dst") == "old");
        CHECK(mode_of(t / "dst") == 0644);
        CHECK(temp_files(t.path()).empty());
    }
}

TEST_CASE("copy: ENOSPC on a full file system keeps the old file and leaves no temp file") {
    if (!is_root()) {
        MYR_SKIP("mounting a tmpfs needs root");
    }
    TempDir t;
    write_file(t / "big", big_content(4 * 1024 * 1024), 0755);
    TmpfsMount vol(t / "vol", "1m");
    if (!vol.mounted && vol.err == EPERM) {
        MYR_SKIP("mounting a tmpfs is not permitted here (root without CAP_SYS_ADMIN)");
    }
    REQUIRE_MESSAGE(vol.mounted, "mount -t tmpfs failed: " << std::strerror(vol.err));
    write_file(t / "vol/otelcol", "old", 0755);

    auto r = updater({"copy", t / "big", t / "vol/otelcol"});
    check_refused(r, t / "vol/otelcol", "No space left on device");
    CHECK(read_file(t / "vol/otelcol") == "old");
    CHECK(entries(t / "vol") == std::vector<std::string>{"otelcol"});

    // install-self into the full volume: the binary is larger than 1 MiB.
    write_file(t / "vol/myriarch-updater", "old updater", 0755);
    auto self = updater({"install-self", t / "vol"});
    check_refused(self, t / "vol/myriarch-updater", "No space left on device");
    CHECK(read_file(t / "vol/myriarch-updater") == "old updater");
    CHECK(temp_files(t / "vol").empty());
}

// ---- no network
// --------------------------------------------------------------------------------------

TEST_CASE("copy and install-self: no socket is created (strace)") {
    if (::access("/usr/bin/strace", X_OK) != 0) {
        MYR_SKIP("strace not installed");
    }
    TempDir t;
    write_file(t / "src", "x", 0644);
    for (const auto& cmd : std::vector<std::vector<std::string>>{{"copy", t / "src", t / "dst"},
                                                                 {"install-self", t.path()}}) {
        CAPTURE(cmd[0]);
        const std::string trace = t / ("trace-" + cmd[0]);
        std::vector<std::string> argv{
            "/usr/bin/strace", "-f", "-qq", "-o", trace, "-e", "trace=socket,connect,openat",
            updater_bin()};
        argv.insert(argv.end(), cmd.begin(), cmd.end());
        auto r = run(argv, 60s);
        CAPTURE(r.err);
        REQUIRE(r.exit_code == 0);
        std::string log = read_file(trace);
        CHECK(contains(log, "openat("));  // strace did see the command's system calls
        CHECK_FALSE(contains(log, "socket("));
        CHECK_FALSE(contains(log, "connect("));
    }
    CHECK(read_file(t / "dst") == "x");
}

TEST_CASE("copy: temp file, fsync, fchmod, rename and directory fsync go through one dir fd") {
    if (::access("/usr/bin/strace", X_OK) != 0) {
        MYR_SKIP("strace not installed");
    }
    TempDir t;
    ::mkdir((t / "vol").c_str(), 0755);
    write_file(t / "src", "x", 0644);
    const std::string trace = t / "trace";
    auto r = run({"/usr/bin/strace", "-qq", "-o", trace, "-e",
                  "trace=openat,renameat,renameat2,fsync,fchmod", updater_bin(), "copy", t / "src",
                  t / "vol/dst"});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    std::vector<std::string> lines;
    {
        std::string log = read_file(trace), line;
        for (char c : log) {
            if (c != '\n') {
                line += c;
            } else {
                lines.push_back(line);
                line.clear();
            }
        }
    }
    auto result_of = [](const std::string& line) { return line.substr(line.rfind("= ") + 2); };
    // The sequence, each step found after the previous one.
    size_t i = 0;
    auto next = [&](const std::function<bool(const std::string&)>& pred) {
        while (i < lines.size() && !pred(lines[i])) ++i;
        REQUIRE(i < lines.size());
        return lines[i++];
    };
    std::string dir_open = next([&](const std::string& l) {
        return contains(l, "openat(AT_FDCWD, \"" + (t / "vol") + "\"");
    });
    CHECK(contains(dir_open, "O_NOFOLLOW"));
    CHECK(contains(dir_open, "O_DIRECTORY"));
    const std::string dirfd = result_of(dir_open);
    std::string tmp_open = next([&](const std::string& l) { return contains(l, ".dst.tmp-"); });
    CHECK(contains(tmp_open, "openat(" + dirfd + ", "));
    CHECK(contains(tmp_open, "O_CREAT|O_EXCL"));
    CHECK(contains(tmp_open, "O_NOFOLLOW"));
    CHECK(contains(tmp_open, ", 0600)"));
    const std::string tmpfd = result_of(tmp_open);
    next([&](const std::string& l) { return contains(l, "fsync(" + tmpfd + ")"); });
    next([&](const std::string& l) { return contains(l, "fchmod(" + tmpfd + ", 0644)"); });
    std::string rename = next([&](const std::string& l) { return contains(l, "rename"); });
    CHECK(contains(rename, "(" + dirfd + ", \".dst.tmp-"));
    CHECK(contains(rename, ", " + dirfd + ", \"dst\")"));
    next([&](const std::string& l) { return contains(l, "fsync(" + dirfd + ")"); });
    CHECK(read_file(t / "vol/dst") == "x");
}

TEST_CASE("copy and install-self: work without any network namespace access (unshare --net)") {
    if (!is_root()) {
        MYR_SKIP("unshare --net needs root");
    }
    if (run({"unshare", "--net", "true"}).exit_code != 0) {
        MYR_SKIP("unshare --net is not permitted here");
    }
    TempDir t;
    write_file(t / "src", "offline", 0755);
    auto r = run({"unshare", "--net", updater_bin(), "copy", t / "src", t / "dst"});
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    CHECK(read_file(t / "dst") == "offline");
    auto s = run({"unshare", "--net", updater_bin(), "install-self", t.path()});
    CHECK(s.exit_code == 0);
    CHECK(read_file(t / "myriarch-updater") == read_file(updater_bin()));
}

// ---- FROM scratch
// -----------------------------------------------------------------------------------

TEST_CASE("install-self and copy: the static binary works in an empty chroot") {
    auto v = run({updater_bin(), "version"});
    REQUIRE(v.exit_code == 0);
    if (!contains(v.out, "linkage: static")) {
        MYR_SKIP("the binary is dynamically linked; the static build runs this test");
    }
    if (!is_root()) {
        MYR_SKIP("chroot needs root");
    }
    TempDir root;
    write_file(root / "myriarch-updater", read_file(updater_bin()), 0755);
    ::mkdir((root / "shared").c_str(), 0755);
    write_file(root / "otelcol-contrib", "collector bytes", 0755);
    REQUIRE(entries(root.path()).size() == 3);  // nothing else: no /proc, no /dev, no libc

    auto self = run({"chroot", root.path(), "/myriarch-updater", "install-self", "/shared"});
    CAPTURE(self.err);
    CHECK(self.exit_code == 0);
    CHECK(read_file(root / "shared/myriarch-updater") == read_file(updater_bin()));
    CHECK(mode_of(root / "shared/myriarch-updater") == 0755);

    auto copy =
        run({"chroot", root.path(), "/myriarch-updater", "copy", "/otelcol-contrib", "/shared"});
    CAPTURE(copy.err);
    CHECK(copy.exit_code == 0);
    CHECK(read_file(root / "shared/otelcol-contrib") == "collector bytes");
    CHECK(mode_of(root / "shared/otelcol-contrib") == 0755);
}
