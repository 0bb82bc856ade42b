// What /metrics exposes (docs/metrics.md): a fixed set of series, counted on the loop and written
// out in the Prometheus text format 0.0.4 at every scrape.
//
// The set is fixed on purpose. Every labelled counter has all its label values from the start
// (at 0), so that `increase()` works from the first scrape, and no label carries a free string
// from the server: the one label with a variable value, collector_info{version}, takes a version
// only in canonical form and at most version::kMaxLength bytes long ("invalid" otherwise). So the
// text has a bounded size (kMaxRenderBytes), and a scrape renders into one buffer reserved once.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myr::metrics {

// How an install or an offer ended (myriarch_update_attempts_total{result}).
enum class AttemptResult { installed, failed, rolled_back, quarantined, refused };
inline constexpr size_t kAttemptResults = 5;
// The step that refused a new version (myriarch_rollbacks_total{reason}).
enum class RollbackReason { verify, preflight, health, crashloop, trial, recovery };
inline constexpr size_t kRollbackReasons = 6;

const char* to_string(AttemptResult r);
const char* to_string(RollbackReason r);

// The upper bounds (seconds) of myriarch_download_duration_seconds: from a small binary on a
// near mirror to a 4 GiB archive over a slow link (update.downloadTimeout's range).
inline constexpr std::array<double, 7> kDownloadBuckets{1, 5, 15, 60, 300, 900, 3600};

// The largest text a scrape renders: the families with their HELP and TYPE lines (about 4 KiB
// with 15 installer states), one version label of at most 128 bytes, numbers of at most 24
// characters each. Tested in tests/unit/metrics; render() never grows its buffer past it.
inline constexpr size_t kMaxRenderBytes = 8 * 1024;

// The process, from /proc/self at scrape time (process.hpp). Absent fields are left out.
struct ProcessStats {
    std::optional<double> cpu_seconds;
    std::optional<double> resident_bytes;
    std::optional<double> virtual_bytes;
    std::optional<double> open_fds;
    std::optional<double> max_fds;
    std::optional<double> start_time_seconds;
};

// What is read at scrape time rather than counted.
struct Live {
    std::optional<uint64_t> volume_free_bytes;  // statvfs of collector.installDir
    bool opamp_connected = false;
    uint64_t child_restarts = 0;
    ProcessStats process;
};

class Registry {
  public:
    // `states`: the installer's states in order, for the one-hot myriarch_update_state.
    explicit Registry(std::vector<std::string> states);

    // An install or an offer ended; installed sets the last success time, failed and rolled_back
    // the last failure time (Unix seconds).
    void attempt(AttemptResult r, double unix_now);
    void rollback(RollbackReason r) { ++rollbacks_[static_cast<size_t>(r)]; }
    void state(size_t index) { state_ = index; }
    void downloaded(uint64_t bytes, double seconds);
    // The version `current` names; one that is not canonical or too long shows as "invalid".
    void collector_version(std::string_view v);
    // Now minus the newest validity start in the trusted root; unset when it could not be read.
    void trusted_root_since(std::optional<double> unix_seconds) { root_since_ = unix_seconds; }

    // The whole exposition into the registry's buffer (reused: no allocation once it is warm).
    const std::string& render(const Live& live, double unix_now);

    uint64_t attempts(AttemptResult r) const { return attempts_[static_cast<size_t>(r)]; }
    uint64_t rollbacks(RollbackReason r) const { return rollbacks_[static_cast<size_t>(r)]; }

  private:
    void render_histogram();
    void render_process(const ProcessStats& p);

    std::vector<std::string> states_;
    size_t state_ = 0;
    std::array<uint64_t, kAttemptResults> attempts_{};
    std::array<uint64_t, kRollbackReasons> rollbacks_{};
    double last_success_ = 0;
    double last_failure_ = 0;
    uint64_t download_bytes_ = 0;
    std::array<uint64_t, kDownloadBuckets.size()> buckets_{};  // not cumulative: rendered so
    uint64_t downloads_ = 0;
    double download_seconds_ = 0;
    std::string version_;  // "" = none yet
    std::optional<double> root_since_;
    std::string out_;
};

// A label value escaped as the text format wants it (backslash, double quote, newline).
void append_label_value(std::string& out, std::string_view v);
// A sample value: integers without a fraction, others with up to 17 significant digits.
void append_value(std::string& out, double v);

}  // namespace myr::metrics
