#include "statedir/state_dir.hpp"

#include "fsx/dir.hpp"

namespace myr::statedir {

Result<StateDir> StateDir::open(const std::string& path) {
    if (path.empty() || path[0] != '/') {
        return fail(Errc::invalid, "state directory: " + path + ": not an absolute path");
    }
    auto fd = fsx::open_or_create_dir(path);
    if (!fd) return fd.fail("state directory");
    StateDir d;
    d.path_ = path;
    d.fd_ = std::make_shared<const UniqueFd>(std::move(*fd));
    return d;
}

Result<StateDir> StateDir::open_existing(const std::string& path) {
    if (path.empty() || path[0] != '/') {
        return fail(Errc::invalid, "state directory: " + path + ": not an absolute path");
    }
    auto fd = fsx::open_dir(path);
    if (!fd) return fd.fail("state directory " + path);
    StateDir d;
    d.path_ = path;
    d.fd_ = std::make_shared<const UniqueFd>(std::move(*fd));
    return d;
}

std::string StateDir::path_of(std::string_view entry) const {
    std::string p = path_;
    p += '/';
    p += entry;
    return p;
}

}  // namespace myr::statedir
