#include "service/systemd_unit.hpp"

#include <charconv>
#include <cstring>

#include "core/log.hpp"

namespace myr::service {

namespace {

constexpr Duration show_timeout = std::chrono::seconds(10);

// The last line systemctl printed: enough to say why, short enough for one log line.
std::string last_line(const std::string& output) {
    std::string_view s = output;
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
    auto nl = s.rfind('\n');
    return std::string(nl == std::string_view::npos ? s : s.substr(nl + 1));
}

// "systemctl stop x.service" and what went wrong, or ok.
Status outcome(const std::string& what, const Result<proc::Captured>& r) {
    if (!r) return fail(r.error().context(what));
    if (r->exit_code() == 0) return {};
    std::string why =
        r->exit_code() < 0 ? "killed by a signal" : "exit " + std::to_string(r->exit_code());
    std::string said = last_line(r->output);
    return fail(Errc::process, what + ": " + why + (said.empty() ? "" : ": " + said));
}

}  // namespace

std::vector<std::string> unit_args(std::vector<std::string> verb_and_options,
                                   const std::string& unit) {
    verb_and_options.insert(verb_and_options.end(), {"--", unit});
    return verb_and_options;
}

const char* unit_status_properties() {
    return "LoadState,ActiveState,SubState,Result,NRestarts,MainPID";
}

void for_each_property(std::string_view text,
                       const std::function<void(std::string_view, std::string_view)>& fn) {
    while (!text.empty()) {
        auto nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        auto eq = line.find('=');
        if (eq != std::string_view::npos) fn(line.substr(0, eq), line.substr(eq + 1));
    }
}

Result<UnitStatus> parse_unit_status(std::string_view text) {
    UnitStatus st;
    bool have_active = false;
    for_each_property(text, [&](std::string_view key, std::string_view value) {
        auto number = [&](auto& out) {
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
            if (ec != std::errc() || p != value.data() + value.size()) out = 0;
        };
        if (key == "LoadState") st.load_state = value;
        if (key == "ActiveState") st.active_state = value, have_active = true;
        if (key == "SubState") st.sub_state = value;
        if (key == "Result") st.result = value;
        if (key == "NRestarts") number(st.n_restarts);
        if (key == "MainPID") number(st.main_pid);
    });
    if (!have_active) return fail(Errc::invalid, "systemctl show: no ActiveState in its answer");
    return st;
}

State to_state(const UnitStatus& st) {
    const std::string& a = st.active_state;
    if (a == "active" || a == "reloading") return State::running;
    if (a == "activating")
        return st.sub_state == "auto-restart" ? State::waiting_to_restart : State::running;
    if (a == "deactivating" || a == "maintenance") return State::stopping;
    return State::stopped;  // inactive, failed, and whatever a newer systemd adds
}

bool gave_up(const UnitStatus& st) {
    return st.active_state == "failed" && st.sub_state != "auto-restart";
}

SystemctlRunner systemctl_runner(proc::Reaper& reaper, loop::Scheduler& sched,
                                 std::vector<std::string> systemctl) {
    return [&reaper, &sched, systemctl = std::move(systemctl)](
               const std::vector<std::string>& args, Duration timeout,
               std::function<void(Result<proc::Captured>)> done) {
        std::vector<std::string> argv = systemctl;
        argv.insert(argv.end(), {"--no-pager", "--no-ask-password"});
        argv.insert(argv.end(), args.begin(), args.end());
        proc::CaptureOptions o;
        o.timeout = timeout;
        o.max_output = 16 * 1024;
        o.keep_tail = true;
        proc::run_capture(reaper, sched, argv, o, std::move(done));
    };
}

SystemdUnit::SystemdUnit(SystemctlRunner systemctl, loop::Scheduler& sched, UnitSettings settings)
    : systemctl_(std::move(systemctl)),
      settings_(std::move(settings)),
      poll_timer_(sched.timer()),
      announcer_(sched) {}

SystemdUnit::~SystemdUnit() = default;

void SystemdUnit::on_change(std::function<void()> listener) {
    announcer_.add(std::move(listener));
}

void SystemdUnit::watch() {
    poll_timer_->start_repeating(settings_.poll_interval, [this] { poll(); });
    poll();
}

void SystemdUnit::poll() {
    refresh({});
}

void SystemdUnit::refresh(std::function<void()> then) {
    if (then) after_refresh_.push_back(std::move(then));
    // A read already under way may have started before the change the caller waits for: one
    // more read follows it, and the waiters go with that one.
    if (polling_) return;
    polling_ = true;
    auto waiters = std::move(after_refresh_);
    after_refresh_.clear();
    systemctl_(unit_args({"show", "-p", unit_status_properties()}, settings_.name), show_timeout,
               guard_.bind([this, waiters](Result<proc::Captured> r) {
                   polling_ = false;
                   Status ok = outcome("systemctl show " + settings_.name, r);
                   auto st =
                       ok ? parse_unit_status(r->output) : Result<UnitStatus>(fail(ok.error()));
                   if (st) {
                       apply(*st);
                   } else {
                       log::warn(st.error().message());
                   }
                   for (auto& w : waiters) w();
                   if (!after_refresh_.empty()) refresh({});
               }));
}

void SystemdUnit::apply(const UnitStatus& st) {
    State next = to_state(st);
    Desired want = desired_;
    // The updater finds the supervisor's unit already running (systemd started it at boot): that
    // is a unit meant to run, as if start() had been called.
    if (!seen_ && want == Desired::not_started && next != State::stopped) want = Desired::running;
    if (want == Desired::running && gave_up(st)) want = Desired::gave_up;
    // An operator's `systemctl restart` after a crash loop: meant to run again.
    if (want == Desired::gave_up && next != State::stopped) want = Desired::running;
    bool changed = next != state_ || want != desired_ || st.n_restarts != status_.n_restarts ||
                   st.main_pid != status_.main_pid;
    if (want == Desired::gave_up && desired_ != Desired::gave_up)
        log::warn(describe_gave_up(settings_.name, st));
    seen_ = true;
    status_ = st;
    state_ = next;
    desired_ = want;
    if (changed) announcer_.changed();
}

void SystemdUnit::run_job(const char* verb, Duration timeout, Done done) {
    std::string what = std::string("systemctl ") + verb + " " + settings_.name;
    systemctl_(unit_args({verb}, settings_.name), timeout,
               guard_.bind([this, what, done = std::move(done)](Result<proc::Captured> r) {
                   Status st = outcome(what, r);
                   refresh([done, st] { done(st); });
               }));
}

void SystemdUnit::stop(Done done) {
    if (desired_ != Desired::stopped) {
        desired_ = Desired::stopped;
        announcer_.changed();
    }
    run_job("stop", settings_.stop_timeout, std::move(done));
}

void SystemdUnit::start(Done done) {
    if (desired_ != Desired::running) {
        desired_ = Desired::running;
        announcer_.changed();
    }
    if (status_.active_state != "failed") {
        run_job("start", settings_.start_timeout, std::move(done));
        return;
    }
    // A unit that hit its start limit refuses `start` until its failure is cleared.
    systemctl_(unit_args({"reset-failed"}, settings_.name), show_timeout,
               guard_.bind([this, done = std::move(done)](Result<proc::Captured>) mutable {
                   run_job("start", settings_.start_timeout, std::move(done));
               }));
}

std::optional<pid_t> SystemdUnit::forward(int sig) {
    if (status_.main_pid <= 0) return std::nullopt;
    // Through systemd, not kill(2): the MainPID read up to a poll interval ago may have been
    // reused since, and systemd signals the main process it knows now, in its own PID namespace.
    const char* name = sigabbrev_np(sig);
    std::string signal = name ? name : std::to_string(sig);
    systemctl_(unit_args({"kill", "--kill-whom=main", "--signal=" + signal}, settings_.name),
               show_timeout, guard_.bind([this, signal](Result<proc::Captured> r) {
                   Status st =
                       outcome("systemctl kill --signal=" + signal + " " + settings_.name, r);
                   if (!st) log::warn(st.error().message());
               }));
    return status_.main_pid;
}

std::string describe_gave_up(const std::string& name, const UnitStatus& st) {
    return "unit " + name + " failed and will not be restarted (Result=" + st.result + ", " +
           std::to_string(st.n_restarts) + " restarts)";
}

std::string SystemdUnit::give_up_reason() const {
    return desired_ == Desired::gave_up ? describe_gave_up(settings_.name, status_) : "";
}

std::string SystemdUnit::describe() const {
    const std::string unit = "unit " + settings_.name;
    if (!seen_) return unit + ": state not read yet";
    if (status_.load_state == "not-found") return unit + " not found";
    switch (state_) {
        case State::running:
            return unit + " running" +
                   (status_.main_pid > 0 ? " (pid " + std::to_string(status_.main_pid) + ")" : "");
        case State::waiting_to_restart:
            return unit + " not running: restarting (" + std::to_string(status_.n_restarts) +
                   " restarts)";
        case State::stopping:
            return unit + " stopping";
        case State::stopped:
            if (desired_ == Desired::gave_up) return describe_gave_up(settings_.name, status_);
            return unit + " not running: " + status_.active_state;
    }
    return unit;
}

}  // namespace myr::service
