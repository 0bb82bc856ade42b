// What feeds /metrics in container mode (docs/metrics.md): the installer's endings counted by
// the table below, its state and downloads, and at scrape time the volume, the child, the OpAMP
// connection and the process. The table (which outcome counts where) is the one docs/metrics.md
// shows; classify() is it, pure, so that each row has a unit test.
#pragma once

#include <functional>
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

    const metrics::Registry& registry() const { return registry_; }

  private:
    const Clock& clock_;
    std::string install_dir_;
    metrics::Registry registry_;
    metrics::ProcessReader process_;
    std::function<uint64_t()> child_restarts_;
    std::function<bool()> connected_;
};

}  // namespace myr::runtime
