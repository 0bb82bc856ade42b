// Preflight: two short runs of the staged binary through proc::run_capture (the Reaper collects
// them, a timer kills their process group), one after the other, on the loop. What the binary
// printed is kept to its tail (what a failing validate says last is why it failed) and cut to a
// few lines for the reason.
#include "stage/preflight.hpp"

#include <signal.h>
#include <unistd.h>

#include <optional>
#include <string_view>

#include "core/log.hpp"
#include "loop/scheduler.hpp"
#include "proc/reaper.hpp"
#include "store/precedence.hpp"
#include "version/version.hpp"

namespace myr::stage {

namespace {

constexpr size_t kKeptOutput = 16 * 1024;  // read from the pipe, the tail kept
constexpr size_t kReasonLines = 10;
constexpr size_t kReasonBytes = 2 * 1024;
constexpr Duration kBackstop = std::chrono::seconds(5);

// The last lines of `output` (at most kReasonLines, kReasonBytes) on one line, " | " between them,
// control bytes shown as '?', so that a reason fits a log line and an OpAMP error message.
std::string last_lines(std::string_view output) {
    std::vector<std::string_view> lines;
    size_t end = output.size();
    size_t bytes = 0;
    while (end > 0 && lines.size() < kReasonLines) {
        size_t start = output.rfind('\n', end - 1);
        start = start == std::string_view::npos ? 0 : start + 1;
        std::string_view line = output.substr(start, end - start);
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
        end = start == 0 ? 0 : start - 1;
        if (line.empty()) continue;
        if (bytes + line.size() > kReasonBytes) {
            if (lines.empty()) lines.push_back(line.substr(line.size() - kReasonBytes));
            break;
        }
        bytes += line.size();
        lines.push_back(line);
    }
    std::string out;
    for (size_t i = lines.size(); i-- > 0;) {
        if (!out.empty()) out += " | ";
        for (char c : lines[i]) {
            out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
        }
    }
    return out;
}

std::string with_output(std::string what, const proc::Captured& c) {
    std::string tail = last_lines(c.output);
    if (tail.empty()) return what + " (no output)";
    return what + ": " + tail;
}

std::string canonical(const std::string& v) {
    auto p = version::parse(v);
    return p ? version::to_string(*p) : v;
}

class RunningPreflight final : public loop::Step {
  public:
    RunningPreflight(proc::Reaper& reaper, loop::Scheduler& sched, PreflightRequest req,
                     PreflightDone done)
        : reaper_(reaper), sched_(sched), req_(std::move(req)), done_(std::move(done)) {}

    ~RunningPreflight() override {
        // The guard keeps the run's callback from reaching us; the group goes now. The Reaper
        // still collects the process, and run_capture frees its job once the process is gone.
        guard_.drop();
        if (running_pid_ > 0) ::kill(-running_pid_, SIGKILL);
    }

    void start() {
        run({req_.binary, "--version"}, req_.version_timeout, &RunningPreflight::on_version);
    }

  private:
    using Step = void (RunningPreflight::*)(Result<proc::Captured>);

    // One run at a time; its answer comes back only while we exist (the guard). The timeout is
    // ours, not run_capture's: killed by our timer, the run still ends with its output, and the
    // last lines of a hanging validate say where it hangs. run_capture's own timeout is only a
    // backstop for a process that outlives SIGKILL's group (it left the group).
    void run(const std::vector<std::string>& argv, Duration timeout, Step then) {
        proc::CaptureOptions o;
        o.timeout = timeout + kBackstop;
        o.max_output = kKeptOutput;
        o.keep_tail = true;
        o.run_as = run_as();
        o.env = req_.env;
        timed_out_ = false;
        timeout_ = timeout;
        argv_text_ = argv.size() > 1 ? argv[0] + " " + argv[1] : argv[0];
        running_pid_ = proc::run_capture(reaper_, sched_, argv, o,
                                         guard_.bind([this, then](Result<proc::Captured> r) {
                                             running_pid_ = -1;
                                             timer_->stop();
                                             if (r && r->left_processes) warn_left(argv_text_);
                                             (this->*then)(std::move(r));
                                         }));
        if (running_pid_ <= 0) return;
        timer_->start(timeout, [this] {
            timed_out_ = true;
            ::kill(-running_pid_, SIGKILL);
        });
    }

    // run_capture killed what the run left in its process group; that is worth a line, since a
    // validate that daemonises would otherwise have kept running beside the collector.
    static void warn_left(const std::string& what) {
        log::warn("preflight: the staged binary left processes behind; killed its process group",
                  {{"command", what}});
    }

    // The run was killed at its timeout: Errc::timeout, with what it had printed.
    bool timed_out(const std::string& what, const proc::Captured& c) {
        if (!timed_out_) return false;
        fail_with(
            Errc::timeout,
            with_output(what + " timed out after " + format_duration(timeout_) + " (killed)", c));
        return true;
    }

    std::optional<proc::RunAs> run_as() const {
        // Switching users needs root; a non-root updater runs everything as itself anyway.
        if ((req_.uid == 0 && req_.gid == 0) || ::geteuid() != 0) return std::nullopt;
        return proc::RunAs{req_.uid, req_.gid};
    }

    std::string cmd(const std::string& what) const { return req_.binary + " " + what; }

    void finish(Result<PreflightReport> r) {
        PreflightDone d = std::move(done_);
        done_ = nullptr;
        if (d) d(std::move(r));
    }

    void fail_with(Errc code, std::string message) { finish(fail(code, "preflight: " + message)); }

    void on_version(Result<proc::Captured> r) {
        const std::string what = cmd("--version");
        if (!r) return finish(r.fail("preflight"));
        if (timed_out(what, *r)) return;
        if (r->exit_code() != 0) {
            return fail_with(
                Errc::process,
                with_output(what + " ended with " + proc::describe_status(r->wait_status), *r));
        }
        auto v = store::version_from_output(r->output);
        if (!v) return fail_with(Errc::invalid, with_output(what + " printed no version", *r));
        const std::string expected = canonical(req_.expected_version);
        if (*v != expected) {
            return fail_with(Errc::invalid,
                             what + " reports version " + *v + ", expected " + expected);
        }
        report_.version = *v;
        if (req_.validate_args.empty()) return finish(report_);  // nothing to validate with

        std::vector<std::string> argv{req_.binary};
        argv.insert(argv.end(), req_.validate_args.begin(), req_.validate_args.end());
        validate_started_ = sched_.now();
        run(argv, req_.validate_timeout, &RunningPreflight::on_validate);
    }

    void on_validate(Result<proc::Captured> r) {
        std::string what = cmd(req_.validate_args.front());
        if (!r) return finish(r.fail("preflight: validate"));
        if (timed_out("validate (" + what + ")", *r)) return;
        report_.validate_time =
            std::chrono::duration_cast<Duration>(sched_.now() - validate_started_);
        report_.peak_rss_kib = r->max_rss_kib;
        if (r->exit_code() != 0) {
            return fail_with(Errc::process, with_output("validate (" + what + ") ended with " +
                                                            proc::describe_status(r->wait_status),
                                                        *r));
        }
        log::info("preflight passed", {{"binary", req_.binary},
                                       {"version", report_.version},
                                       {"validate_peak_rss_kib", report_.peak_rss_kib},
                                       {"validate_time", format_duration(report_.validate_time)}});
        finish(report_);
    }

    proc::Reaper& reaper_;
    loop::Scheduler& sched_;
    PreflightRequest req_;
    PreflightDone done_;
    PreflightReport report_;
    MonoTime validate_started_{};
    pid_t running_pid_ = -1;
    std::unique_ptr<loop::Timer> timer_ = sched_.timer();
    bool timed_out_ = false;
    Duration timeout_{};
    std::string argv_text_;  // the running command's first two words, for the log
    loop::Guard guard_;      // last: dropped first
};

}  // namespace

std::unique_ptr<loop::Step> ReaperPreflighter::run(PreflightRequest request, PreflightDone done) {
    auto p =
        std::make_unique<RunningPreflight>(reaper_, sched_, std::move(request), std::move(done));
    p->start();
    return p;
}

}  // namespace myr::stage
