// What feeds /metrics in container mode (docs/metrics.md): the installer's endings counted by
// the table below, its state and downloads, at scrape time the child, the OpAMP connection and
// the process, and the volume's free bytes as last read off the loop (VolumeRoom). The table (which
// outcome counts where) is the one docs/metrics.md shows; classify() is it, pure, so that each row
// has a unit test.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "metrics/process.hpp"
#include "metrics/registry.hpp"
#include "update/events.hpp"
#include "update/ports.hpp"

namespace myr::runtime {

struct Counted {
    metrics::AttemptResult result = metrics::AttemptResult::installed;
    std::optional<metrics::RollbackReason> reason;  // the new version did not stay
};

// clang-format off
//   ending        code / rule                          attempts{result}  rollbacks{reason}
//   installed     -                                    installed         -
//   failed        policy, rule quarantined             quarantined       -
//   failed        policy (other rules), room           refused           -
//   failed        integrity, signature                 failed            verify
//   failed        preflight                            failed            preflight
//   failed        any other (download, stage, ...)     failed            -
//   rolled_back   trial                                rolled_back       trial
//   rolled_back   health, the supervisor gave up       rolled_back       crashloop
//   rolled_back   any other (health, start, ...)       rolled_back       health
// clang-format on
Counted classify(const update::Ending& e);
// An install that recovery undid at this start (last-attempt.json, container.cpp): one whose new
// version had been swapped in (`swapped`: started, checked, rolling back, or on trial until
// update.trialMaxBoots) is rolled_back{recovery}; one interrupted before the swap is failed.
Counted classify_recovered(const update::Attempt& a, bool swapped);

// The free bytes of collector.installDir, for myriarch_volume_free_bytes. statvfs of a volume on
// a network filesystem can hang for minutes, and the scrape runs on PID 1's loop; so a scrape only
// serves the last reading and, when that is older than `every` (or failed) and no reading is in
// flight, starts the next one on a thread of its own. At most one reading runs at a time, so a
// hung statvfs holds one parked thread and nothing piles up behind it. Not the work queue: the
// loop waits for its jobs at shutdown, and a TERM must not wait for a hung filesystem.
class VolumeRoom {
  public:
    using Reader = std::function<std::optional<uint64_t>(const std::string& path)>;
    static constexpr Duration kEvery = std::chrono::seconds(10);

    VolumeRoom(
        const Clock& clock, std::string path, Duration every = kEvery,
        Reader read = [](const std::string& p) { return metrics::free_bytes(p.c_str()); });
    // The last reading (nullopt until one succeeded, or when the last one failed); starts a new
    // reading when due.
    std::optional<uint64_t> get();
    // Starts a reading now unless one is in flight (the volume has just been prepared).
    void refresh();
    bool in_flight() const { return shared_->in_flight.load(); }

  private:
    // What the reading thread writes and the loop reads; the thread keeps it alive on its own.
    struct Shared {
        std::atomic<bool> in_flight{false};
        std::atomic<bool> ok{false};
        std::atomic<uint64_t> bytes{0};
    };
    const Clock& clock_;
    std::string path_;
    Duration every_;
    Reader read_;
    std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
    std::optional<MonoTime> read_at_;  // when the last reading started
};

// The registry, fed. Scrape-time readings come through `live`, which the runtime fills.
class MetricsFeed {
  public:
    // `install_dir`: collector.installDir (its free bytes).
    MetricsFeed(const Clock& clock, std::string install_dir);

    // The observer to hand to the installer.
    update::Observer observer();
    void count(const Counted& c);
    void collector_version(const std::string& v) { registry_.collector_version(v); }
    // The trusted root in use (RootWatch's, at start and at every reload): its newest validity
    // start, for myriarch_trusted_root_age_seconds; nullopt leaves the gauge out.
    void trusted_root(std::optional<int64_t> newest_start);

    // The child's restarts and the OpAMP connection, asked at every scrape.
    void set_sources(std::function<uint64_t()> child_restarts, std::function<bool()> connected);
    const std::string& render();
    // The volume is ready (recovered and seeded): read its free bytes for the first scrape.
    void volume_ready() { room_.refresh(); }

    const metrics::Registry& registry() const { return registry_; }

  private:
    const Clock& clock_;
    VolumeRoom room_;
    metrics::Registry registry_;
    metrics::ProcessReader process_;
    std::function<uint64_t()> child_restarts_;
    std::function<bool()> connected_;
};

}  // namespace myr::runtime
