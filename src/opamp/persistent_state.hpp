// The collector's instance UID, as the OpAMP Supervisor keeps it in
// `<supervisor.storageDir>/persistent_state.yaml` (`instance_id: <uuid>`).
//
// The updater only reads this file (the supervisor owns it and rewrites it by rename when the
// server assigns the collector a new uid). It is read through a directory fd without following a
// symlink in the last component, capped at kMaxPersistentStateSize, and parsed with libyaml: opamp/
// is the second libyaml user next to config/, for this one small read-only file.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/time.hpp"
#include "loop/scheduler.hpp"

namespace myr::opamp {

inline constexpr size_t kMaxPersistentStateSize = 64 * 1024;
inline constexpr const char* kPersistentStateFile = "persistent_state.yaml";

// The `instance_id` of a persistent_state.yaml document, in canonical UUID text (lower case).
// A document that is not YAML, not a mapping, has no `instance_id` scalar, or whose value is not a
// UUID is an error naming why.
[[nodiscard]] Result<std::string> parse_persistent_state(std::string_view yaml);

// Reads and parses `<storage_dir>/persistent_state.yaml`. A missing file is an error with
// sys_errno() == ENOENT.
[[nodiscard]] Result<std::string> read_collector_instance_uid(const std::string& storage_dir);

// Keeps the collector's uid current: reads the file at start() and again whenever it changes. A
// timer lstat()s the path every poll interval and re-reads when device, inode, size, mtime or ctime
// differ from what was seen just before the last read (a rename over the file is a new inode).
// uv_fs_poll is not used: its first stat only sets a silent baseline, so a file written between
// our first read and that stat would never be reported. `on_change` runs on the loop when the
// value (or its absence) changes. A missing or malformed file leaves the value empty
// and is logged as a warning once per distinct problem, never fatal.
class PersistentStateWatcher {
  public:
    PersistentStateWatcher(loop::Scheduler& sched, std::string storage_dir, Duration poll_interval,
                           std::function<void()> on_change);
    ~PersistentStateWatcher();
    PersistentStateWatcher(const PersistentStateWatcher&) = delete;
    PersistentStateWatcher& operator=(const PersistentStateWatcher&) = delete;

    void start();
    void stop();
    // "" while missing or malformed.
    const std::string& collector_uid() const { return uid_; }
    // Re-reads the file now (also what the poll callback does).
    void refresh();

  private:
    std::string stat_key() const;

    std::string storage_dir_;
    Duration interval_;
    std::function<void()> on_change_;
    std::unique_ptr<loop::Timer> timer_;
    std::string path_;
    std::string seen_;  // stat_key() taken just before the last read
    std::string uid_;
    std::string last_problem_;
};

}  // namespace myr::opamp
