#include "store/volume.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/fault.hpp"
#include "core/log.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "hash/sha256.hpp"
#include "version/version.hpp"

namespace myr::store {
namespace {

constexpr const char* kVersionsPrefix = "versions/";

// Opens `name` in `parent` as a real directory, replacing any other kind of entry by a fresh
// directory: only the entry is removed, whatever a symlink points to.
Result<UniqueFd> ensure_dir(int parent, const std::string& name, const std::string& where) {
    auto st = fsx::stat_at(parent, name);
    if (!st) return st.fail("stat " + where);
    if (st->has_value() && !S_ISDIR((*st)->st_mode)) {
        log::warn("volume: replacing an entry that is not a directory",
                  {{"path", where}, {"type", file_type_name((*st)->st_mode)}});
        MYR_TRY(fsx::remove_tree_at(parent, name), "remove " + where);
    }
    MYR_TRY(fsx::make_dir_at(parent, name, 0755, true), "create " + where);
    auto fd = fsx::open_dir_at(parent, name);
    if (!fd) return fd.fail("open " + where);
    return std::move(*fd);
}

bool is_file_name(const std::string& s) {
    return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos;
}

}  // namespace

const char* to_string(Active::State s) {
    switch (s) {
        case Active::State::none:
            return "none";
        case Active::State::intact:
            return "intact";
        case Active::State::broken:
            return "broken";
    }
    return "broken";
}

// The names checked, nothing opened yet: what open() and open_read_only() share.
Result<Volume> Volume::unopened(const std::string& install_dir, const std::string& binary) {
    if (install_dir.empty() || install_dir[0] != '/') {
        return fail("install directory: " + install_dir + ": not an absolute path");
    }
    if (!is_file_name(binary)) return fail("binary name: " + binary + ": not a file name");
    Volume v;
    v.path_ = install_dir;
    v.binary_ = binary;
    return v;
}

Result<Volume> Volume::open(const std::string& install_dir, const std::string& binary) {
    auto v = unopened(install_dir, binary);
    if (!v) return v.fail();
    auto root = fsx::open_or_create_dir(install_dir);
    if (!root) return root.fail();
    v->root_ = std::move(*root);
    auto versions = ensure_dir(v->root_.get(), "versions", install_dir + "/versions");
    if (!versions) return versions.fail();
    v->versions_ = std::move(*versions);
    auto staging = ensure_dir(v->root_.get(), ".staging", install_dir + "/.staging");
    if (!staging) return staging.fail();
    v->staging_ = std::move(*staging);
    return v;
}

Result<Volume> Volume::open_read_only(const std::string& install_dir, const std::string& binary) {
    auto v = unopened(install_dir, binary);
    if (!v) return v.fail();
    auto root = fsx::open_dir(install_dir);
    if (!root) return root.fail("open " + install_dir);
    v->root_ = std::move(*root);
    auto versions = fsx::open_dir_at(v->root_.get(), "versions");
    if (!versions) return versions.fail("open " + install_dir + "/versions");
    v->versions_ = std::move(*versions);
    return v;
}

namespace {

// A version directory that passed every check of check_intact but the hash.
struct Candidate {
    Marker marker;
    UniqueFd bin;
    std::string bin_path;  // for messages
};

Result<Candidate> open_candidate(const Volume& vol, const std::string& version) {
    if (!version::is_canonical(version)) return fail("not a canonical version name: " + version);
    auto dir = fsx::open_dir_at(vol.versions_fd(), version);
    if (!dir) return dir.fail("versions/" + version);
    auto text = fsx::read_file_at(dir->get(), "install.json", kMaxMarkerSize);
    if (!text) return text.fail("versions/" + version + "/install.json");
    auto marker = parse_marker(*text);
    if (!marker) return marker.fail("versions/" + version + "/install.json");
    if (marker->version != version) {
        return fail("versions/" + version + "/install.json: names version " + marker->version);
    }
    if (marker->binary != vol.binary()) {
        return fail("versions/" + version + "/install.json: names binary " + marker->binary +
                    ", expected " + vol.binary());
    }
    const std::string bin_path = "versions/" + version + "/" + vol.binary();
    auto bin = fsx::open_regular_at(dir->get(), vol.binary());
    if (!bin) return bin.fail(bin_path);
    struct stat st {};
    if (::fstat(bin->get(), &st) != 0) return fail_errno(bin_path + ": fstat");
    if ((st.st_mode & S_IXUSR) == 0) return fail(bin_path + ": not executable");
    if (static_cast<uint64_t>(st.st_size) != marker->size) {
        return fail(Errc::integrity, bin_path + ": size " + std::to_string(st.st_size) +
                                         " differs from marker " + std::to_string(marker->size));
    }
    return Candidate{std::move(*marker), std::move(*bin), bin_path};
}

Result<Marker> accept_if(Candidate& c, const hash::Digest& digest) {
    if (hash::to_hex(digest) != c.marker.sha256) {
        return fail(Errc::integrity, c.bin_path + ": SHA-256 differs from the marker");
    }
    return std::move(c.marker);
}

Result<Marker> hash_and_accept(Candidate& c) {
    auto digest = hash::sha256_fd(c.bin.get());
    if (!digest) return digest.fail(c.bin_path + ": hash");
    return accept_if(c, *digest);
}

// check_intact, hashing `image_fd` on the way (see active(vol, image_fd, …)).
Result<Marker> check_intact_beside(const Volume& vol, const std::string& version, int image_fd,
                                   std::string* image_sha256) {
    auto c = open_candidate(vol, version);
    if (!c) return c.fail();
    struct stat st {};
    if (::fstat(image_fd, &st) == 0 && static_cast<uint64_t>(st.st_size) == c->marker.size &&
        ::lseek(image_fd, 0, SEEK_SET) == 0) {
        bool same = false;
        auto image = hash::sha256_fd_twin(image_fd, c->bin.get(), &same);
        // A failed read of the image is left to the caller, which hashes the image itself then.
        if (image) {
            *image_sha256 = hash::to_hex(*image);
            if (same) return accept_if(*c, *image);
        }
        if (::lseek(c->bin.get(), 0, SEEK_SET) != 0) return fail_errno(c->bin_path + ": seek");
    }
    return hash_and_accept(*c);
}

}  // namespace

Result<Marker> check_intact(const Volume& vol, const std::string& version) {
    auto c = open_candidate(vol, version);
    if (!c) return c.fail();
    return hash_and_accept(*c);
}

Result<Marker> check_present(const Volume& vol, const std::string& version) {
    auto c = open_candidate(vol, version);
    if (!c) return c.fail();
    return std::move(c->marker);
}

bool intact(const Volume& vol, const std::string& version) {
    return check_intact(vol, version).ok();
}

Result<std::string> current_target(const Volume& vol) {
    auto st = fsx::stat_at(vol.root_fd(), "current");
    if (!st) return st.fail("stat current");
    if (!st->has_value() || !S_ISLNK((*st)->st_mode)) return std::string();
    auto target = fsx::read_link_at(vol.root_fd(), "current");
    if (!target) return target.fail("read current");
    const std::string& t = *target;
    if (t.rfind(kVersionsPrefix, 0) != 0) return std::string();
    std::string name = t.substr(std::string(kVersionsPrefix).size());
    if (!version::is_canonical(name)) return std::string();
    return name;
}

Result<Active> active(const Volume& vol) {
    return active(vol, -1, nullptr);
}

Result<Active> active(const Volume& vol, int image_fd, std::string* image_sha256) {
    Active a;
    auto st = fsx::stat_at(vol.root_fd(), "current");
    if (!st) return st.fail("stat current");
    if (!st->has_value()) return a;  // nothing ever activated
    a.state = Active::State::broken;
    if (!S_ISLNK((*st)->st_mode)) {
        a.reason =
            std::string("current is a ") + file_type_name((*st)->st_mode) + ", not a symlink";
        return a;
    }
    auto target = fsx::read_link_at(vol.root_fd(), "current");
    if (!target) return target.fail("read current");
    const std::string& t = *target;
    if (t.rfind(kVersionsPrefix, 0) != 0) {
        a.reason = "current points outside versions/: " + t;
        return a;
    }
    std::string name = t.substr(std::string(kVersionsPrefix).size());
    if (!version::is_canonical(name)) {
        a.reason = "current points to a name that is not a version: " + t;
        return a;
    }
    a.version = name;
    auto marker = image_fd >= 0 ? check_intact_beside(vol, name, image_fd, image_sha256)
                                : check_intact(vol, name);
    if (!marker) {
        a.reason = marker.error().message();
        return a;
    }
    a.state = Active::State::intact;
    a.marker = std::move(*marker);
    return a;
}

Status switch_current(const Volume& vol, const std::string& version, bool verified) {
    if (!verified) {
        auto marker = check_intact(vol, version);
        if (!marker) return marker.fail("switch current to " + version);
    } else if (!version::is_canonical(version)) {
        return fail("switch current to " + version + ": not a canonical version");
    }
    auto st = fsx::stat_at(vol.root_fd(), "current");
    if (!st) return st.fail("stat current");
    if (st->has_value() && S_ISDIR((*st)->st_mode)) {
        // A real directory cannot be replaced by rename(2) with a symlink; it is not ours anyway.
        log::warn("volume: removing a directory planted as current", {{"path", vol.path()}});
        MYR_TRY(fault::point("store.switch.clear.before"), "switch current");
        MYR_TRY(fsx::remove_tree_at(vol.root_fd(), "current"), "remove planted current");
        MYR_TRY(fault::point("store.switch.clear.after"), "switch current");
    }
    MYR_TRY(fault::point("store.switch.link.before"), "switch current");
    MYR_TRY(fsx::replace_symlink(vol.root_fd(), "current", kVersionsPrefix + version),
            "switch current to " + version);
    MYR_TRY(fault::point("store.switch.link.after"), "switch current");
    return {};
}

Status remove_current(const Volume& vol) {
    MYR_TRY(fault::point("store.switch.unlink.before"), "remove current");
    MYR_TRY(fsx::remove_tree_at(vol.root_fd(), "current"), "remove current");
    MYR_TRY(fsx::fsync_dir(vol.root_fd()), "remove current");
    MYR_TRY(fault::point("store.switch.unlink.after"), "remove current");
    return {};
}

}  // namespace myr::store
