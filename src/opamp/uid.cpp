#include "opamp/uid.hpp"

#include "core/hex.hpp"
#include "core/log.hpp"
#include "core/random.hpp"
#include "core/text.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"

namespace myr::opamp {

Uid new_uuid_v7(WallTime now) {
    Uid u{};
    random_bytes(u.data() + 6, 10);
    auto ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count());
    for (int i = 0; i < 6; ++i) u[i] = static_cast<uint8_t>(ms >> (8 * (5 - i)));
    u[6] = static_cast<uint8_t>(0x70 | (u[6] & 0x0f));
    u[8] = static_cast<uint8_t>(0x80 | (u[8] & 0x3f));
    return u;
}

std::string uid_to_text(const Uid& uid) {
    std::string s;
    s.reserve(36);
    for (size_t i = 0; i < uid.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
        hex::append(s, uid[i]);
    }
    return s;
}

Result<Uid> uid_from_text(std::string_view text) {
    if (text.size() != 36) return fail("not a UUID (expected 36 characters)");
    Uid u{};
    size_t pos = 0;
    for (size_t i = 0; i < u.size(); ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            if (text[pos] != '-') return fail("not a UUID (misplaced '-')");
            ++pos;
        }
        int hi = hex::digit(text[pos]);
        int lo = hex::digit(text[pos + 1]);
        if (hi < 0 || lo < 0) return fail("not a UUID (not a hex digit)");
        u[i] = static_cast<uint8_t>(hi << 4 | lo);
        pos += 2;
    }
    return u;
}

std::string uid_bytes(const Uid& uid) {
    return std::string(reinterpret_cast<const char*>(uid.data()), uid.size());
}

Result<Uid> uid_from_bytes(std::string_view bytes) {
    if (bytes.size() != 16) {
        return fail("instance uid of " + std::to_string(bytes.size()) + " bytes (expected 16)");
    }
    Uid u{};
    for (size_t i = 0; i < 16; ++i) u[i] = static_cast<uint8_t>(bytes[i]);
    return u;
}

Status store_instance_uid(const statedir::StateDir& state, const Uid& uid) {
    const char* name = statedir::entry::instance_uid;
    MYR_TRY(fsx::write_file_atomic(state.fd(), name, uid_to_text(uid) + "\n", 0600),
            "store instance uid: " + state.path_of(name));
    return {};
}

Result<Uid> load_or_create_instance_uid(const statedir::StateDir& state, WallTime now) {
    const char* name = statedir::entry::instance_uid;
    const std::string path = state.path_of(name);
    auto exists = fsx::exists_at(state.fd(), name);
    if (!exists) return exists.fail("instance uid: " + path);
    if (*exists) {
        auto text = fsx::read_file_at(state.fd(), name, 256);
        if (!text) {
            // A FIFO, a directory, a symlink (never followed) or an oversized file: moved aside,
            // not deleted, for whoever looks later. A new identity beats an agent that never
            // starts, as for journal.json.
            std::string aside =
                std::string(name) + ".damaged-" + std::to_string(now.time_since_epoch().count());
            MYR_TRY(fsx::rename_at(state.fd(), name, state.fd(), aside, true),
                    "instance uid: move " + path + " aside");
            MYR_TRY(fsx::fsync_dir(state.fd()), "instance uid: move " + path + " aside");
            log::warn(
                "instance uid file is not a readable regular file; moved aside, creating a "
                "new identity",
                {{"path", path}, {"error", text.error().message()}, {"moved_to", aside}});
        } else if (auto uid = uid_from_text(text::trim(*text)); uid) {
            return uid;
        } else {
            log::warn("instance uid file is damaged, creating a new identity",
                      {{"path", path}, {"error", uid.error().message()}});
        }
    }
    Uid uid = new_uuid_v7(now);
    MYR_TRY(store_instance_uid(state, uid), "instance uid");
    log::info("created instance uid", {{"instance_uid", uid_to_text(uid)}, {"path", path}});
    return uid;
}

}  // namespace myr::opamp
