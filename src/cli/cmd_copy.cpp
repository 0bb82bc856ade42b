// `copy SRC DST` and `install-self DIR`: the init-container helpers (spec, "Init container
// commands"). Both end in install_file(), which applies the destination rules through one directory
// fd opened after its lstat check, so a symlink planted on the shared volume cannot redirect the
// write. No network is touched here.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __APPLE__
#include <mach-o/dyld.h>
#else
#include <sys/auxv.h>
#endif

#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "core/fd.hpp"
#include "core/file.hpp"
#include "fsx/copy.hpp"
#include "fsx/dir.hpp"

namespace myr::cli {

namespace {

constexpr const char* kRelativeHint =
    "must be an absolute path (relative paths are refused so the command never depends on the "
    "working directory of the init container)";

std::string strip_trailing_slashes(std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
}

std::string dirname_of(const std::string& p) {
    size_t slash = p.rfind('/');
    if (slash == 0 || slash == std::string::npos) return "/";
    return p.substr(0, slash);
}

std::string basename_of(const std::string& p) {
    return p.substr(p.rfind('/') + 1);
}

std::string join(const std::string& dir, const std::string& name) {
    return dir == "/" ? "/" + name : dir + "/" + name;
}

// "<command>: <path>: <why>" on stderr, exit 1.
int fail_path(const std::string& command, const std::string& path, const std::string& why) {
    return runtime_error(Error(command + ": " + path + ": " + why));
}

// An open source file and what fstat said about it.
struct Source {
    UniqueFd fd;
    struct stat st {};
};

// Opens a source path that may be a symlink but must resolve to a regular file. The type is checked
// with stat before opening (a FIFO without a writer would block open) and again on the opened fd.
Result<Source> open_source(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return fail_errno("cannot read source");
    if (!S_ISREG(st.st_mode)) {
        return fail(std::string("refusing ") + file_type_name(st.st_mode) +
                    " as source: not a regular file");
    }
    // Swapped for a FIFO or a directory after the stat: open_regular neither blocks nor accepts it.
    auto fd = open_regular(path);
    if (!fd) {
        if (fd.error().sys_errno() == EINVAL)
            return fail("refusing source: " + fd.error().message());
        return fail_errno("cannot open source", fd.error().sys_errno());
    }
    Source src;
    src.fd = std::move(*fd);
    if (::fstat(src.fd.get(), &src.st) != 0) return fail_errno("fstat source");
    return src;
}

// Copies `src` to `dir_path`/`name` with `mode`, by the destination rules of the spec. Returns the
// exit code.
int install_file(const std::string& command, const Source& src, const std::string& dir_path,
                 const std::string& name, mode_t mode) {
    const std::string dst_path = join(dir_path, name);
    auto dir = fsx::open_dir(dir_path);
    if (!dir) {
        int err = dir.error().sys_errno();
        if (err == ELOOP)
            return fail_path(command, dir_path, "refusing symlink destination directory");
        if (err == ENOENT)
            return fail_path(command, dir_path, "destination directory does not exist");
        return fail_path(command, dir_path, "destination directory: " + dir.error().message());
    }
    // The existing entry is judged through the directory fd, the same handle the rename uses.
    auto existing = fsx::stat_at(dir->get(), name);
    if (!existing) return fail_path(command, dst_path, existing.error().message());
    if (existing->has_value()) {
        const struct stat& d = **existing;
        if (S_ISLNK(d.st_mode)) return fail_path(command, dst_path, "refusing symlink destination");
        if (S_ISDIR(d.st_mode)) {
            return fail_path(command, dst_path, "refusing directory as destination file");
        }
        if (!S_ISREG(d.st_mode)) {
            return fail_path(command, dst_path,
                             std::string("refusing ") + file_type_name(d.st_mode) +
                                 " destination: not a regular file");
        }
        if (d.st_dev == src.st.st_dev && d.st_ino == src.st.st_ino) {
            return fail_path(command, dst_path, "source and destination are the same file");
        }
    }
    auto copied = fsx::copy_file_atomic(src.fd.get(), dir->get(), name, mode);
    if (!copied) return fail_path(command, dst_path, copied.error().message());
    return 0;
}

// The file of the running program. /proc/self/exe names it even after a rename; where /proc is not
// mounted (an empty chroot, a FROM scratch image without /proc) the path the kernel executed
// (AT_EXECFN) is used instead.
Result<Source> open_self() {
#ifdef __APPLE__
    char buf[PATH_MAX];
    uint32_t size = sizeof buf;
    if (_NSGetExecutablePath(buf, &size) != 0) return fail("executable path too long");
    return open_source(buf);
#else
    auto proc = open_source("/proc/self/exe");
    if (proc) return proc;
    const char* execfn = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
    if (!execfn || !*execfn) return proc.fail("/proc/self/exe");
    auto direct = open_source(execfn);
    if (!direct) return direct.fail(std::string("cannot find the running binary: ") + execfn);
    return direct;
#endif
}

}  // namespace

int cmd_copy(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, {});
    if (!args) return usage_error("copy", args.error().message());
    if (args->flag("help")) return print_help("copy");
    const auto& pos = args->positional();
    if (pos.size() != 2) return usage_error("copy", "expects exactly two arguments: SRC DST");
    // A refused path ends with exit 1 like every other (spec: "An error names the path and the
    // reason on stderr and ends with exit code 1"); only the argument count is a usage error.
    if (pos[0].empty() || pos[0][0] != '/') {
        return fail_path("copy", pos[0], "SRC " + std::string(kRelativeHint));
    }
    if (pos[1].empty() || pos[1][0] != '/') {
        return fail_path("copy", pos[1], "DST " + std::string(kRelativeHint));
    }
    const std::string& src_path = pos[0];

    auto src = open_source(src_path);
    if (!src) return fail_path("copy", src_path, src.error().message());
    mode_t mode = (src->st.st_mode & 0111) ? 0755 : 0644;

    // DST is an existing directory (then DST/<name of SRC>) or the file to create or replace.
    // Trailing slashes are dropped first: lstat("/x/link/") would follow the link.
    const bool wants_dir = pos[1].size() > 1 && pos[1].back() == '/';
    const std::string dst = strip_trailing_slashes(pos[1]);
    struct stat st {};
    if (::lstat(dst.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return install_file("copy", *src, dst, basename_of(src_path), mode);
        if (S_ISLNK(st.st_mode)) return fail_path("copy", dst, "refusing symlink destination");
        if (wants_dir) return fail_path("copy", dst, "not a directory");
    } else if (errno != ENOENT) {
        return fail_path("copy", dst, std::string("lstat: ") + std::strerror(errno));
    } else if (wants_dir) {
        return fail_path("copy", dst, "destination directory does not exist");
    }
    if (dst == "/") return fail_path("copy", dst, "refusing the root directory as file");
    return install_file("copy", *src, dirname_of(dst), basename_of(dst), mode);
}

int cmd_install_self(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, {});
    if (!args) return usage_error("install-self", args.error().message());
    if (args->flag("help")) return print_help("install-self");
    const auto& pos = args->positional();
    if (pos.size() != 1) return usage_error("install-self", "expects exactly one argument: DIR");
    if (pos[0].empty() || pos[0][0] != '/') {
        return fail_path("install-self", pos[0], "DIR " + std::string(kRelativeHint));
    }
    auto self = open_self();
    if (!self) return runtime_error(self.error().context("install-self"));
    return install_file("install-self", *self, strip_trailing_slashes(pos[0]), "myriarch-updater",
                        0755);
}

}  // namespace myr::cli
