#include "metrics/registry.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "version/version.hpp"

namespace myr::metrics {

const char* to_string(AttemptResult r) {
    switch (r) {
        case AttemptResult::installed:
            return "installed";
        case AttemptResult::failed:
            return "failed";
        case AttemptResult::rolled_back:
            return "rolled_back";
        case AttemptResult::quarantined:
            return "quarantined";
        case AttemptResult::refused:
            return "refused";
    }
    return "?";
}

const char* to_string(RollbackReason r) {
    switch (r) {
        case RollbackReason::verify:
            return "verify";
        case RollbackReason::preflight:
            return "preflight";
        case RollbackReason::health:
            return "health";
        case RollbackReason::crashloop:
            return "crashloop";
        case RollbackReason::trial:
            return "trial";
        case RollbackReason::recovery:
            return "recovery";
    }
    return "?";
}

void append_label_value(std::string& out, std::string_view v) {
    for (char c : v) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
}

void append_value(std::string& out, double v) {
    if (std::isnan(v)) {
        out += "NaN";
        return;
    }
    if (std::isinf(v)) {
        out += v > 0 ? "+Inf" : "-Inf";
        return;
    }
    char buf[32];
    // Counters and byte counts print as integers (exact up to 2^53); the rest round-trips.
    if (v == std::trunc(v) && std::fabs(v) < 9.007199254740992e15) {
        out.append(buf, std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v)).ptr);
        return;
    }
    // The fewest of 15, 16, 17 significant digits that read back as the same double (17 always
    // do). std::to_chars for double would find the shortest too, but links libstdc++'s 125 kB
    // Ryu tables; printf's float code is in the binary anyway.
    int len = 0;
    for (int digits = 15; digits <= 17; ++digits) {
        len = std::snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    out.append(buf, static_cast<size_t>(len));
}

Registry::Registry(std::vector<std::string> states) : states_(std::move(states)) {
    out_.reserve(kMaxRenderBytes);
}

void Registry::attempt(AttemptResult r, double unix_now) {
    ++attempts_[static_cast<size_t>(r)];
    if (r == AttemptResult::installed) last_success_ = unix_now;
    if (r == AttemptResult::failed || r == AttemptResult::rolled_back) last_failure_ = unix_now;
}

void Registry::downloaded(uint64_t bytes, double seconds) {
    download_bytes_ += bytes;
    ++downloads_;
    download_seconds_ += seconds;
    for (size_t i = 0; i < kDownloadBuckets.size(); ++i) {
        if (seconds <= kDownloadBuckets[i]) {
            ++buckets_[i];
            break;
        }
    }
}

void Registry::collector_version(std::string_view v) {
    // The version comes from the volume or an offer that Checking accepted; the rule is checked
    // here again so that no path can put a free string into a label.
    bool ok = v.size() <= version::kMaxLength && version::is_canonical(v);
    version_ = ok ? std::string(v) : std::string("invalid");
}

namespace {

// The writer of one exposition: families in order, HELP and TYPE first.
struct Text {
    std::string& out;

    void family(const char* name, const char* type, const char* help) {
        out += "# HELP ";
        out += name;
        out += ' ';
        out += help;
        out += "\n# TYPE ";
        out += name;
        out += ' ';
        out += type;
        out += '\n';
    }
    void sample(const char* name, double v) {
        out += name;
        out += ' ';
        append_value(out, v);
        out += '\n';
    }
    void sample(const char* name, const char* label, std::string_view value, double v) {
        out += name;
        out += '{';
        out += label;
        out += "=\"";
        append_label_value(out, value);
        out += "\"} ";
        append_value(out, v);
        out += '\n';
    }
    // A family of one unlabelled sample, left out when its value is unknown.
    void single(const char* name, const char* type, const char* help, std::optional<double> v) {
        if (!v) return;
        family(name, type, help);
        sample(name, *v);
    }
    void gauge(const char* name, const char* help, std::optional<double> v) {
        single(name, "gauge", help, v);
    }
};

}  // namespace

const std::string& Registry::render(const Live& live, double unix_now) {
    out_.clear();
    Text t{out_};
    t.family("myriarch_update_attempts_total", "counter",
             "Installs and offers by how they ended (docs/metrics.md).");
    for (size_t i = 0; i < kAttemptResults; ++i) {
        t.sample("myriarch_update_attempts_total", "result",
                 to_string(static_cast<AttemptResult>(i)), static_cast<double>(attempts_[i]));
    }
    t.family("myriarch_rollbacks_total", "counter",
             "New versions that did not stay, by the step that refused them.");
    for (size_t i = 0; i < kRollbackReasons; ++i) {
        t.sample("myriarch_rollbacks_total", "reason", to_string(static_cast<RollbackReason>(i)),
                 static_cast<double>(rollbacks_[i]));
    }
    t.gauge("myriarch_update_last_success_timestamp_seconds",
            "When the last install succeeded (Unix seconds; 0: not since the start).",
            last_success_);
    t.gauge("myriarch_update_last_failure_timestamp_seconds",
            "When the last install failed or was rolled back (Unix seconds; 0: not since the "
            "start).",
            last_failure_);
    if (!version_.empty()) {
        t.family("myriarch_collector_info", "gauge", "The collector version current names.");
        t.sample("myriarch_collector_info", "version", version_, 1);
    }
    t.family("myriarch_update_state", "gauge", "The installer's state (1 for the one it is in).");
    for (size_t i = 0; i < states_.size(); ++i) {
        t.sample("myriarch_update_state", "state", states_[i], i == state_ ? 1 : 0);
    }
    t.family("myriarch_download_bytes_total", "counter", "Bytes of completed downloads.");
    t.sample("myriarch_download_bytes_total", static_cast<double>(download_bytes_));
    render_histogram();
    std::optional<double> age;
    if (root_since_) age = unix_now - *root_since_;
    t.gauge("myriarch_trusted_root_age_seconds",
            "Seconds since the newest validity start among the trusted root's keys and CAs.", age);
    std::optional<double> free;
    if (live.volume_free_bytes) free = static_cast<double>(*live.volume_free_bytes);
    t.gauge("myriarch_volume_free_bytes", "Bytes free for the updater on collector.installDir.",
            free);
    t.family("myriarch_child_restarts_total", "counter",
             "Restarts of the supervisor after it ended unexpectedly.");
    t.sample("myriarch_child_restarts_total", static_cast<double>(live.child_restarts));
    t.gauge("myriarch_opamp_connected", "1 while the OpAMP connection is up.",
            live.opamp_connected ? 1 : 0);
    render_process(live.process);
    return out_;
}

void Registry::render_histogram() {
    Text t{out_};
    const char* name = "myriarch_download_duration_seconds";
    t.family(name, "histogram", "How long completed downloads took.");
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kDownloadBuckets.size(); ++i) {
        cumulative += buckets_[i];
        out_ += "myriarch_download_duration_seconds_bucket{le=\"";
        append_value(out_, kDownloadBuckets[i]);
        out_ += "\"} ";
        append_value(out_, static_cast<double>(cumulative));
        out_ += '\n';
    }
    out_ += "myriarch_download_duration_seconds_bucket{le=\"+Inf\"} ";
    append_value(out_, static_cast<double>(downloads_));
    out_ += "\nmyriarch_download_duration_seconds_sum ";
    append_value(out_, download_seconds_);
    out_ += "\nmyriarch_download_duration_seconds_count ";
    append_value(out_, static_cast<double>(downloads_));
    out_ += '\n';
}

void Registry::render_process(const ProcessStats& p) {
    Text t{out_};
    t.single("process_cpu_seconds_total", "counter", "User and system CPU time spent in seconds.",
             p.cpu_seconds);
    t.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", p.resident_bytes);
    t.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", p.virtual_bytes);
    t.gauge("process_open_fds", "Number of open file descriptors.", p.open_fds);
    t.gauge("process_max_fds", "Maximum number of open file descriptors.", p.max_fds);
    t.gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
            p.start_time_seconds);
}

}  // namespace myr::metrics
