#include "store/activate.hpp"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/fault.hpp"
#include "core/hex.hpp"
#include "core/log.hpp"
#include "core/random.hpp"
#include "core/time.hpp"
#include "fsx/copy.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "hash/sha256.hpp"
#include "version/version.hpp"

namespace myr::store {
namespace {

std::string random_id() {
    uint8_t b[8];
    random_bytes(b, sizeof b);
    return hex::encode(b, sizeof b);
}

Status point(const char* name) {
    return fault::point(name);
}

Status announce(const StepHook& hook, Step s) {
    if (!hook) return {};
    return hook(s);
}

// The previousVersion a new marker records (see ActivateRequest::previous_version).
std::string default_previous(const Active& a, const std::string& version) {
    if (a.state != Active::State::intact) return "";
    if (a.version != version) return a.version;
    return a.marker ? a.marker->previous_version : "";
}

// Fills `.staging/<id>/<binary>` from the image, hashing while writing (one pass over the data).
// Returns digest and size.
Status stage_copy(const Volume& vol, const Staging& st, int image_fd, std::string* sha,
                  uint64_t* size) {
    if (::lseek(image_fd, 0, SEEK_SET) < 0) return fail_errno("seek image binary");
    hash::Sha256 h;
    MYR_TRY(point("store.activate.copy.before"), "stage");
    auto copied = fsx::copy_file_atomic(image_fd, st.fd.get(), vol.binary(), 0755,
                                        [&h](const uint8_t* d, size_t n) { h.update(d, n); });
    if (!copied) return copied.fail("copy to .staging/" + st.id + "/" + vol.binary());
    MYR_TRY(point("store.activate.copy.after"), "stage");
    *sha = hash::to_hex(h.finish());
    *size = *copied;
    return {};
}

// Adopts a binary the caller extracted into `.staging/<id>/`: made executable, synced and hashed.
Status stage_adopt(const Volume& vol, const Staging& st, std::string* sha, uint64_t* size) {
    const std::string where = ".staging/" + st.id + "/" + vol.binary();
    auto bin = fsx::open_regular_at(st.fd.get(), vol.binary());
    if (!bin) return bin.fail(where);
    MYR_TRY(point("store.activate.adopt.before"), "stage");
    if (::fchmod(bin->get(), 0755) != 0) return fail_errno(where + ": chmod");
    if (::fsync(bin->get()) != 0) return fail_errno(where + ": fsync");
    MYR_TRY(fsx::fsync_dir(st.fd.get()), where);
    MYR_TRY(point("store.activate.adopt.after"), "stage");
    auto digest = hash::sha256_fd(bin->get(), size);
    if (!digest) return digest.fail(where + ": hash");
    *sha = hash::to_hex(*digest);
    return {};
}

// renameat2(RENAME_EXCHANGE): both names stay valid at every instant. Not in fsx because only the
// store swaps whole directories.
int exchange_at(int dir1, const std::string& a, int dir2, const std::string& b) {
    return ::renameat2(dir1, a.c_str(), dir2, b.c_str(), RENAME_EXCHANGE);
}

// Moves the complete staging directory to versions/<version>. An existing entry of that name (a
// broken directory, other bytes, a planted symlink) is exchanged for it and then removed from
// .staging, so versions/<version> is at every instant either the old entry or the new directory.
Status install(const Volume& vol, const Staging& st, const std::string& version) {
    auto existing = fsx::stat_at(vol.versions_fd(), version);
    if (!existing) return existing.fail("stat versions/" + version);
    if (!existing->has_value()) {
        MYR_TRY(point("store.activate.rename.before"), "install");
        MYR_TRY(fsx::rename_at(vol.staging_fd(), st.id, vol.versions_fd(), version, true),
                "rename .staging/" + st.id + " to versions/" + version);
        MYR_TRY(fsx::fsync_dir(vol.versions_fd()), "install");
        MYR_TRY(fsx::fsync_dir(vol.staging_fd()), "install");
        MYR_TRY(point("store.activate.rename.after"), "install");
        return {};
    }
    log::warn("volume: replacing a version directory that is broken or holds other bytes",
              {{"version", version}});
    MYR_TRY(point("store.activate.exchange.before"), "install");
    if (exchange_at(vol.staging_fd(), st.id, vol.versions_fd(), version) != 0) {
        int err = errno;
        if (err != EINVAL && err != ENOSYS && err != EOPNOTSUPP) {
            return fail_errno("exchange versions/" + version, err);
        }
        // No atomic exchange on this file system: move the old entry into .staging first. A crash
        // in between leaves no versions/<version>; recovery and seeding then treat it as missing.
        const std::string old = st.id + ".old";
        MYR_TRY(fsx::rename_at(vol.versions_fd(), version, vol.staging_fd(), old, true),
                "move aside versions/" + version);
        MYR_TRY(fsx::rename_at(vol.staging_fd(), st.id, vol.versions_fd(), version, true),
                "rename .staging/" + st.id + " to versions/" + version);
        MYR_TRY(fsx::fsync_dir(vol.versions_fd()), "install");
        MYR_TRY(fsx::fsync_dir(vol.staging_fd()), "install");
        MYR_TRY(point("store.activate.exchange.after"), "install");
        return fsx::remove_tree_at(vol.staging_fd(), old);
    }
    MYR_TRY(fsx::fsync_dir(vol.versions_fd()), "install");
    MYR_TRY(fsx::fsync_dir(vol.staging_fd()), "install");
    MYR_TRY(point("store.activate.exchange.after"), "install");
    // The old entry now sits at .staging/<id>.
    return discard_staging(vol, st.id);
}

}  // namespace

const char* to_string(Step s) {
    switch (s) {
        case Step::stage:
            return "staging";
        case Step::install:
            return "installing";
        case Step::switch_current:
            return "switching";
    }
    return "staging";
}

Result<Staging> create_staging(const Volume& vol) {
    Staging st;
    st.id = random_id();
    MYR_TRY(point("store.stage.mkdir.before"), "create staging");
    MYR_TRY(fsx::make_dir_at(vol.staging_fd(), st.id, 0755), "create .staging/" + st.id);
    Status after = point("store.stage.mkdir.after");
    auto fd = after ? fsx::open_dir_at(vol.staging_fd(), st.id) : Result<UniqueFd>(after.fail());
    if (!fd) {
        // Nobody else knows the id: remove the directory now rather than leave it to recovery.
        (void)fsx::remove_tree_at(vol.staging_fd(), st.id);
        return fd.fail("open .staging/" + st.id);
    }
    st.fd = std::move(*fd);
    return st;
}

std::string staging_dir_path(const Volume& vol, const std::string& id) {
    return vol.path() + "/.staging/" + id;
}

std::string staged_binary_path(const Volume& vol, const std::string& id) {
    return staging_dir_path(vol, id) + "/" + vol.binary();
}

Status discard_staging(const Volume& vol, const std::string& id) {
    MYR_TRY(point("store.stage.discard.before"), "discard staging");
    MYR_TRY(fsx::remove_tree_at(vol.staging_fd(), id), "remove .staging/" + id);
    MYR_TRY(fsx::fsync_dir(vol.staging_fd()), "discard staging");
    MYR_TRY(point("store.stage.discard.after"), "discard staging");
    return {};
}

Result<int> clear_staging(const Volume& vol) {
    auto names = fsx::list_dir(vol.staging_fd());
    if (!names) return names.fail("list .staging");
    // Leftovers are never read again: one that cannot be removed (an immutable file, a tree too
    // deep) is left with a warning rather than failing the start while `current` is intact.
    int removed = 0;
    for (const std::string& n : *names) {
        if (auto st = discard_staging(vol, n); !st) {
            std::string why = st.error().message();
            if (why.size() > 300) why = why.substr(0, 300) + "…";
            log::warn("cannot remove a staging leftover; leaving it",
                      {{"path", ".staging/" + n}, {"error", why}});
            continue;
        }
        ++removed;
    }
    return removed;
}

Result<Activation> activate(const Volume& vol, const ActivateRequest& req, const StepHook& hook) {
    const std::string ctx = "activate " + req.version;
    if (!version::is_canonical(req.version)) return fail(ctx + ": not a canonical version");
    if ((req.image_fd >= 0) == !req.staged_id.empty()) {
        return fail(ctx + ": give either an image file or a staging id");
    }
    std::string expected_hex;  // "" only for an image file taken as it is
    if (req.image_fd < 0 || !req.expected_sha256.empty()) {
        auto expected = hash::digest_from_hex(req.expected_sha256);
        if (!expected) return expected.fail(ctx + ": expected hash");
        expected_hex = hash::to_hex(*expected);
    }

    auto now_active = req.known_active ? Result<Active>(*req.known_active) : active(vol);
    if (!now_active) return now_active.fail(ctx);
    Activation out;
    out.was_active = now_active->version;
    std::string previous =
        req.previous_version ? *req.previous_version : default_previous(*now_active, req.version);

    Marker m;
    m.version = req.version;
    m.binary = vol.binary();
    m.source = req.source;
    m.previous_version = previous;
    m.installed_at = format_rfc3339(wall_now());

    // Without an expected hash nothing can be reused: no need to hash versions/<version>. When it
    // is the active version, active() has just checked it: no need to hash it a second time.
    const bool active_is_it = now_active->state == Active::State::intact &&
                              now_active->version == req.version && now_active->marker;
    auto existing = expected_hex.empty() ? Result<Marker>(fail("no expected hash"))
                    : active_is_it       ? Result<Marker>(*now_active->marker)
                                         : check_intact(vol, req.version);
    out.reused = existing.ok() && existing->sha256 == expected_hex;

    MYR_TRY(announce(hook, Step::stage), ctx);
    if (out.reused) {
        // Same bytes already installed: no copy. Only the marker's provenance may change.
        if (!req.staged_id.empty()) MYR_TRY(discard_staging(vol, req.staged_id), ctx);
        m.sha256 = existing->sha256;
        m.size = existing->size;
        MYR_TRY(announce(hook, Step::install), ctx);
        if (existing->source != m.source || existing->previous_version != m.previous_version) {
            auto dir = fsx::open_dir_at(vol.versions_fd(), req.version);
            if (!dir) return dir.fail(ctx);
            MYR_TRY(point("store.activate.remark.before"), ctx);
            MYR_TRY(fsx::write_file_atomic(dir->get(), "install.json", render_marker(m), 0644),
                    ctx + ": rewrite versions/" + req.version + "/install.json");
            MYR_TRY(point("store.activate.remark.after"), ctx);
        } else {
            m.installed_at = existing->installed_at;
        }
    } else {
        Staging st;
        if (req.image_fd >= 0) {
            auto created = create_staging(vol);
            if (!created) return created.fail(ctx);
            st = std::move(*created);
        } else {
            st.id = req.staged_id;
            auto fd = fsx::open_dir_at(vol.staging_fd(), st.id);
            if (!fd) return fd.fail(ctx + ": .staging/" + st.id);
            st.fd = std::move(*fd);
        }
        // From here on a failure removes the staging directory: nothing half-done stays behind.
        auto staged = [&]() -> Status {
            std::string sha;
            uint64_t size = 0;
            if (req.image_fd >= 0) {
                MYR_TRY(stage_copy(vol, st, req.image_fd, &sha, &size), "stage");
            } else {
                MYR_TRY(stage_adopt(vol, st, &sha, &size), "stage");
            }
            if (!expected_hex.empty() && sha != expected_hex) {
                return fail(Errc::integrity,
                            "stage: SHA-256 " + sha + " differs from the expected " + expected_hex);
            }
            m.sha256 = sha;
            m.size = size;
            MYR_TRY(point("store.activate.marker.before"), "stage");
            MYR_TRY(fsx::write_file_atomic(st.fd.get(), "install.json", render_marker(m), 0644),
                    "write marker");
            MYR_TRY(point("store.activate.marker.after"), "stage");
            MYR_TRY(announce(hook, Step::install), "install");
            return install(vol, st, req.version);
        }();
        if (!staged) {
            Status cleaned = discard_staging(vol, st.id);
            if (!cleaned) {
                log::warn("volume: staging left for recovery",
                          {{"id", st.id}, {"error", cleaned.error().message()}});
            }
            return staged.fail(ctx);
        }
    }
    MYR_TRY(announce(hook, Step::switch_current), ctx);
    MYR_TRY(switch_current(vol, req.version, true), ctx);
    out.marker = std::move(m);
    log::info("volume: version activated", {{"version", req.version},
                                            {"source", to_string(req.source)},
                                            {"previous", previous},
                                            {"was_active", out.was_active},
                                            {"reused", out.reused}});
    return out;
}

}  // namespace myr::store

namespace myr::store {

Result<std::string> rollback_target(const Volume& vol) {
    auto cur = current_target(vol);
    if (!cur) return cur.fail("rollback");
    if (cur->empty()) return fail("rollback: no version is active");
    auto dir = fsx::open_dir_at(vol.versions_fd(), *cur);
    if (!dir) return dir.fail("rollback: versions/" + *cur);
    auto text = fsx::read_file_at(dir->get(), "install.json", kMaxMarkerSize);
    if (!text) return text.fail("rollback: versions/" + *cur + "/install.json");
    auto m = parse_marker(*text);
    if (!m) return m.fail("rollback: versions/" + *cur + "/install.json");
    if (m->previous_version.empty()) {
        return fail("rollback: versions/" + *cur + "/install.json names no previous version");
    }
    return m->previous_version;
}

Result<std::string> rollback(const Volume& vol) {
    auto target = rollback_target(vol);
    if (!target) return target.fail();
    auto marker = check_intact(vol, *target);
    if (!marker) return marker.fail("rollback to " + *target);
    MYR_TRY(fault::point("store.rollback.switch.before"), "rollback");
    MYR_TRY(switch_current(vol, *target, true), "rollback to " + *target);
    MYR_TRY(fault::point("store.rollback.switch.after"), "rollback");
    log::info("volume: rolled back", {{"version", *target}});
    return *target;
}

}  // namespace myr::store
