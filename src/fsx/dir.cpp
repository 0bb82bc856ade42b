#include "fsx/dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/fault.hpp"
#include "fsx/names.hpp"

namespace myr::fsx {

namespace {

// The open flags for a directory that must not be a symlink.
constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

}  // namespace

Result<UniqueFd> open_dir(const std::string& abs_path) {
    if (abs_path.empty() || abs_path[0] != '/') return fail("path is not absolute");
    // lstat("/a/link/") follows the link: drop trailing slashes so the last component is checked.
    std::string path = abs_path;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    struct stat before {};
    if (::lstat(path.c_str(), &before) != 0) return fail_errno("lstat");
    if (S_ISLNK(before.st_mode)) return fail(Error("refusing symlink", ELOOP));
    if (!S_ISDIR(before.st_mode)) {
        return fail(Error(std::string("not a directory (") + file_type_name(before.st_mode) + ")",
                          ENOTDIR));
    }
    UniqueFd fd(::open(path.c_str(), kDirFlags));
    if (!fd) return fail_errno("open");
    struct stat after {};
    if (::fstat(fd.get(), &after) != 0) return fail_errno("fstat");
    if (after.st_dev != before.st_dev || after.st_ino != before.st_ino) {
        return fail("directory was replaced while being opened");
    }
    return fd;
}

Result<UniqueFd> open_or_create_dir(const std::string& abs_path) {
    auto fd = open_dir(abs_path);
    if (fd) return fd;
    if (fd.error().sys_errno() != ENOENT) return fd.fail("open " + abs_path);
    if (::mkdir(abs_path.c_str(), 0755) != 0 && errno != EEXIST) {
        return fail_errno("create " + abs_path);
    }
    fd = open_dir(abs_path);
    if (!fd) return fd.fail("open " + abs_path);
    return fd;
}

Result<UniqueFd> open_dir_at(int dirfd, const std::string& name) {
    MYR_TRY(detail::check_name(name), "open directory");
    UniqueFd fd(::openat(dirfd, name.c_str(), kDirFlags));
    if (fd) return fd;
    int err = errno;
    // O_NOFOLLOW reports a symlink as ELOOP (or ENOTDIR with O_DIRECTORY): say what it is.
    struct stat st {};
    if ((err == ELOOP || err == ENOTDIR) &&
        ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) return fail(Error("refusing symlink", ELOOP));
        return fail(
            Error(std::string("not a directory (") + file_type_name(st.st_mode) + ")", ENOTDIR));
    }
    return fail_errno("open", err);
}

Status make_dir_at(int dirfd, const std::string& name, mode_t mode, bool exist_ok) {
    MYR_TRY(detail::check_name(name), "mkdir");
    MYR_TRY(fault::point("fsx.mkdir"), "mkdir");
    if (::mkdirat(dirfd, name.c_str(), mode) != 0) {
        int err = errno;
        if (err != EEXIST || !exist_ok) return fail_errno("mkdir", err);
        struct stat st {};
        if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            return fail_errno("lstat");
        }
        if (!S_ISDIR(st.st_mode)) {
            return fail(
                Error(std::string("mkdir: exists and is a ") + file_type_name(st.st_mode), EEXIST));
        }
        return {};
    }
    return fsync_dir(dirfd);
}

Status fsync_dir(int dirfd) {
    MYR_TRY(fault::point("fsx.fsync_dir"), "fsync directory");
    if (::fsync(dirfd) != 0) {
        // A few file systems cannot sync a directory at all; there is nothing more to do there.
        if (errno == EINVAL || errno == ENOTSUP) return {};
        return fail_errno("fsync directory");
    }
    return {};
}

Result<std::optional<struct stat>> stat_at(int dirfd, const std::string& name) {
    MYR_TRY(detail::check_name(name), "lstat");
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return std::optional<struct stat>();
        return fail_errno("lstat");
    }
    return std::optional<struct stat>(st);
}

Result<bool> exists_at(int dirfd, const std::string& name) {
    auto st = stat_at(dirfd, name);
    if (!st) return st.fail();
    return st->has_value();
}

Result<std::vector<std::string>> list_dir(int dirfd) {
    // A fresh descriptor of the same directory: readdir moves the offset, and closedir closes it.
    int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fail_errno("open directory");
    DIR* d = ::fdopendir(fd);
    if (!d) {
        int err = errno;
        ::close(fd);
        return fail_errno("open directory", err);
    }
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(std::move(n));
        errno = 0;
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return fail_errno("read directory", err);
    std::sort(names.begin(), names.end());
    return names;
}

Result<std::string> read_link_at(int dirfd, const std::string& name) {
    MYR_TRY(detail::check_name(name), "readlink");
    std::string buf(256, '\0');
    for (;;) {
        ssize_t n = ::readlinkat(dirfd, name.c_str(), buf.data(), buf.size());
        if (n < 0) {
            if (errno == EINVAL) return fail(Error("readlink: not a symlink", EINVAL));
            return fail_errno("readlink");
        }
        if (static_cast<size_t>(n) < buf.size()) {
            buf.resize(static_cast<size_t>(n));
            return buf;
        }
        if (buf.size() >= 65536) return fail("readlink: target too long");
        buf.resize(buf.size() * 2);
    }
}

Status replace_symlink(int dirfd, const std::string& name, const std::string& target) {
    MYR_TRY(detail::check_name(name), "replace symlink");
    if (target.empty()) return fail("replace symlink: empty target");
    auto old = stat_at(dirfd, name);
    if (!old) return old.fail("replace symlink");
    if (old->has_value() && S_ISDIR((*old)->st_mode)) {
        return fail(Error("replace symlink: refusing to replace a directory", EISDIR));
    }
    MYR_TRY(fault::point("fsx.symlink"), "symlink");
    std::string tmp;
    for (int attempt = 0;; ++attempt) {
        tmp = detail::temp_name_for(name);
        if (::symlinkat(target.c_str(), dirfd, tmp.c_str()) == 0) break;
        if (errno != EEXIST || attempt >= 100) return fail_errno("symlink");
    }
    Status renamed = fault::point("fsx.rename");
    if (renamed && ::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
        renamed = fail_errno("rename");
    }
    if (!renamed) {
        ::unlinkat(dirfd, tmp.c_str(), 0);
        return renamed.fail("replace symlink");
    }
    return fsync_dir(dirfd);
}

Status rename_at(int from_dirfd, const std::string& from, int to_dirfd, const std::string& to,
                 bool no_replace) {
    MYR_TRY(detail::check_name(from), "rename");
    MYR_TRY(detail::check_name(to), "rename");
    MYR_TRY(fault::point("fsx.rename"), "rename");
    int rc;
    if (no_replace) {
#ifdef __APPLE__
        rc = ::renameatx_np(from_dirfd, from.c_str(), to_dirfd, to.c_str(), RENAME_EXCL);
#else
        rc = ::renameat2(from_dirfd, from.c_str(), to_dirfd, to.c_str(), RENAME_NOREPLACE);
#endif
    } else {
        rc = ::renameat(from_dirfd, from.c_str(), to_dirfd, to.c_str());
    }
    if (rc != 0) return fail_errno("rename");
    return {};
}

Status unlink_at(int dirfd, const std::string& name) {
    MYR_TRY(detail::check_name(name), "unlink");
    MYR_TRY(fault::point("fsx.unlink"), "unlink");
    if (::unlinkat(dirfd, name.c_str(), 0) != 0 && errno != ENOENT) return fail_errno("unlink");
    return {};
}

namespace {

// Empties the directory open as `fd`. Every entry is looked at with AT_SYMLINK_NOFOLLOW and every
// subdirectory is opened with O_NOFOLLOW, so a symlink (even one swapped in meanwhile) is only ever
// unlinked, never entered.
Status empty_dir(int fd, int depth) {
    if (depth > 256) return fail("directory tree deeper than 256 levels");
    auto names = list_dir(fd);
    if (!names) return names.fail();
    for (const std::string& n : *names) {
        struct stat st {};
        if (::fstatat(fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) continue;
            return fail_errno("lstat " + n);
        }
        if (S_ISDIR(st.st_mode)) {
            UniqueFd sub(::openat(fd, n.c_str(), kDirFlags));
            if (!sub) return fail_errno("open " + n);
            // No prefix per level (it repeated the path 256 times): remove_tree_at names the
            // tree, the failing call its entry.
            if (auto st = empty_dir(sub.get(), depth + 1); !st) return st;
            MYR_TRY(fault::point("fsx.unlink"), "remove " + n);
            if (::unlinkat(fd, n.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
                return fail_errno("remove " + n);
            }
        } else {
            MYR_TRY(fault::point("fsx.unlink"), "unlink " + n);
            if (::unlinkat(fd, n.c_str(), 0) != 0 && errno != ENOENT) {
                return fail_errno("unlink " + n);
            }
        }
    }
    return {};
}

}  // namespace

Status remove_tree_at(int dirfd, const std::string& name) {
    MYR_TRY(detail::check_name(name), "remove");
    auto st = stat_at(dirfd, name);
    if (!st) return st.fail("remove");
    if (!st->has_value()) return {};
    if (!S_ISDIR((*st)->st_mode)) return unlink_at(dirfd, name);
    UniqueFd sub(::openat(dirfd, name.c_str(), kDirFlags));
    if (!sub) return fail_errno("remove: open");
    MYR_TRY(empty_dir(sub.get(), 0), "remove " + name);
    MYR_TRY(fault::point("fsx.unlink"), "remove");
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        return fail_errno("remove");
    }
    return {};
}

}  // namespace myr::fsx
