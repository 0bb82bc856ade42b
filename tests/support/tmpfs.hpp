// A small volume for a test: a tmpfs of a given size mounted over a directory (root only),
// unmounted lazily at the end of the case. A process started after the mount (the updater behind
// `unshare
// --mount-proc`, whose mount namespace is a copy) sees it too.
#pragma once

#include <string>
#include <utility>

#include "harness.hpp"

namespace myr::test {

struct Tmpfs {
    Tmpfs(std::string where, const std::string& size) : at(std::move(where)) {
        mounted = run({"mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", at}).exit_code == 0;
    }
    ~Tmpfs() {
        if (mounted) run({"umount", "-l", at});
    }
    Tmpfs(const Tmpfs&) = delete;
    Tmpfs& operator=(const Tmpfs&) = delete;
    bool resize(const std::string& size) const {
        return run({"mount", "-o", "remount,size=" + size, at}).exit_code == 0;
    }
    std::string at;
    bool mounted = false;
};

}  // namespace myr::test
