// Instance UIDs: UUIDv7 generation, canonical text, and the updater's own UID in stateDir.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/time.hpp"
#include "statedir/state_dir.hpp"

namespace myr::opamp {

using Uid = std::array<uint8_t, 16>;

// A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds from `now`, version 7, variant 10, and 74
// random bits.
Uid new_uuid_v7(WallTime now);

// "0190a6f4-6c1e-7a3b-9c2d-0123456789ab" (lower case).
std::string uid_to_text(const Uid& uid);
// Accepts the canonical 36-character form in either case; anything else is an error.
[[nodiscard]] Result<Uid> uid_from_text(std::string_view text);
// The 16 raw bytes of a uid, as carried in protobuf bytes fields.
std::string uid_bytes(const Uid& uid);
// 16 raw bytes to a Uid; other lengths are an error.
[[nodiscard]] Result<Uid> uid_from_bytes(std::string_view bytes);

// The updater's own instance UID, kept as canonical text in the state directory
// (statedir::entry::instance_uid). load_or_create() reads it, or creates it once (UUIDv7) and
// stores it durably; a file that is not a UUID is replaced by a new one with a warning, so a
// damaged file never stops the updater. store() replaces it (a server-assigned new_instance_uid).
// Both write with fsx::write_file_atomic: temp file O_EXCL 0600, fsync, rename, fsync of the
// directory.
[[nodiscard]] Result<Uid> load_or_create_instance_uid(const statedir::StateDir& state,
                                                      WallTime now);
[[nodiscard]] Status store_instance_uid(const statedir::StateDir& state, const Uid& uid);

}  // namespace myr::opamp
