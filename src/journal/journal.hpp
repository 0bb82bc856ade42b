// The operation journal `<stateDir>/journal.json` (volume.md, "Journal").
//
// Written durably (temp file, fsync, rename, fsync of the directory) before each side effect of a
// seed, an update or a rollback, removed when the operation is over. Its presence at start
// therefore means the last operation was cut short by a hard kill or a power loss, and `recover`
// (recover.hpp) reads it to put the volume back in a known state before anything else happens.
// The rule goes by the op alone, whatever the phase (.staging/, temp files and the spool are
// cleaned in every case):
//
// clang-format off
//   op          recovery
//   seed        `current` is either the old or the new complete version; seeding then runs again
//   update      `current` back to `from` (idempotent: before the installer's switch it still
//               points there); the update is reported failed ("interrupted"); `to` stays on disk
//               until GC. Phase "trial" (the new version passed its health check) instead: past
//               `trialUntil` the trial is over (journal cleared, `to` kept); else one more boot is
//               counted, and at `trialMaxBoots` boots `current` goes back to `from` ("rolled back
//               after commit"), below it `to` stays and the journal is kept with the new count
//   rollback    finish: switch `current` to `to`
//   unparsable  moved aside to journal.json.corrupt-<ts>; `current` kept (seeding replaces it
//               when it is not intact)
// clang-format on
//
// A phase is free text for the log and the "interrupted" reason: the installer journals its own
// states under its own names (update/machine.hpp); the ones below are this module's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "statedir/state_dir.hpp"

namespace myr::journal {

enum class Op { seed, update, rollback };
const char* to_string(Op op);

namespace phase {
// Seeding and the store's activation steps (store::to_string(store::Step)), and the journaled
// rollback.
inline constexpr std::string_view staging = "staging";
inline constexpr std::string_view installing = "installing";
inline constexpr std::string_view switching = "switching";
// The one installer phase recovery reads: a version on trial after its health check.
inline constexpr std::string_view trial = "trial";
}  // namespace phase

struct Record {
    std::string id;  // UUID (v4), one per operation
    Op op = Op::seed;
    std::string phase;
    std::string from;  // version active when the operation began ("" when none)
    std::string to;    // version the operation moves to
    std::string started_at;
    uint32_t attempt = 1;
    // Phase "trial" only (update/machine.hpp): the trial's deadline in Unix seconds and the
    // starts recovery counted during it ("trialUntil", "boots"; 0 and absent otherwise).
    int64_t trial_until = 0;
    int64_t boots = 0;
};

// The most boots a record may count (parse refuses more): far above update.trialMaxBoots' own
// maximum, at which recovery has already rolled the trial back.
inline constexpr int64_t kMaxBoots = 1000000;

// A new record with a fresh id and the current time.
Record begin(Op op, std::string from, std::string to, std::string phase);

// Strict: unknown op, a missing field, a from/to that is not empty or a canonical version (a
// hostile "../x") all fail.
[[nodiscard]] Result<Record> parse(std::string_view json);
std::string render(const Record& r);

// What is on disk.
struct Loaded {
    enum class Kind { absent, ok, corrupt };
    Kind kind = Kind::absent;
    Record record;       // when ok
    std::string reason;  // when corrupt
};

// `journal.json` in the state directory (statedir::entry::journal).
class Journal {
  public:
    explicit Journal(statedir::StateDir state) : state_(std::move(state)) {}

    const statedir::StateDir& state() const { return state_; }
    const std::string& dir() const { return state_.path(); }
    int dir_fd() const { return state_.fd(); }

    // absent, ok, or corrupt (unparsable, larger than 64 KiB, not a regular file).
    [[nodiscard]] Result<Loaded> load() const;
    // Durable replace. Fault points `journal.write.before`/`.after`.
    [[nodiscard]] Status write(const Record& r);
    // Durable removal. Fault points `journal.clear.before`/`.after`.
    [[nodiscard]] Status clear();
    // Renames journal.json to journal.json.corrupt-<UTC timestamp> (evidence is never deleted) and
    // returns the new name. Fault points `journal.aside.before`/`.after`.
    [[nodiscard]] Result<std::string> move_aside();

  private:
    statedir::StateDir state_;
};

}  // namespace myr::journal
