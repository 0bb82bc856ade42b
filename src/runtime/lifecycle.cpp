#include "runtime/lifecycle.hpp"

#include "core/log.hpp"

namespace myr::runtime {
namespace {

const char* signal_name(int sig) {
    switch (sig) {
        case SIGTERM:
            return "TERM";
        case SIGINT:
            return "INT";
        case SIGHUP:
            return "HUP";
        case SIGUSR1:
            return "USR1";
        case SIGUSR2:
            return "USR2";
        default:
            return "?";
    }
}

}  // namespace

const char* to_string(Stage s) {
    switch (s) {
        case Stage::recovering:
            return "recovering";
        case Stage::probing_image:
            return "probing_image";
        case Stage::seeding:
            return "seeding";
        case Stage::running:
            return "running";
        case Stage::stopping:
            return "stopping";
    }
    return "?";
}

Lifecycle::Lifecycle(loop::Scheduler& sched, service::ServiceController& service,
                     LifecycleSteps steps)
    : sched_(sched), service_(service), steps_(std::move(steps)) {
    service_.on_change(guard_.bind([this] { service_changed(); }));
}

Lifecycle::~Lifecycle() = default;

void Lifecycle::start(std::function<void(int)> finished) {
    finished_ = std::move(finished);
    enter(Stage::recovering);
}

void Lifecycle::signal(int sig) {
    if (sig == SIGTERM || sig == SIGINT) return stop(0, std::string("signal ") + signal_name(sig));
    forward(sig);
}

// Each stage starts one asynchronous step; its completion, bound to this lifecycle, moves on.
void Lifecycle::enter(Stage s) {
    stage_ = s;
    switch (s) {
        case Stage::recovering:
            steps_.recovering(guard_.bind([this](Status st) { step_done(Stage::recovering, st); }));
            return;
        case Stage::probing_image:
            steps_.probing_image(guard_.bind([this] { step_done(Stage::probing_image, {}); }));
            return;
        case Stage::seeding:
            steps_.seeding(guard_.bind([this](Status st) { step_done(Stage::seeding, st); }));
            return;
        case Stage::running:
            if (auto* c = steps_.start_installer()) critical_ = c;
            service_.start([](Status) {});  // failures are logged and count as unexpected ends
            steps_.start_agent();
            return;
        case Stage::stopping:
            steps_.stop_installer();
            if (critical_->active()) {
                log::info("shutdown: waiting for the install's critical section to end");
            }
            critical_->on_end(guard_.bind([this] { stop_service_and_agent(); }));
            return;
    }
}

// A completion that arrives after the stage moved on (a TERM during start-up) is dropped.
void Lifecycle::step_done(Stage from, Status st) {
    if (stage_ != from) return;
    if (!st) {
        log::error("volume preparation failed",
                   {{"stage", to_string(from)}, {"error", st.error().message()}});
        return stop(
            1, "start-up failed",
            std::string("start-up failed while ") + to_string(from) + ": " + st.error().message());
    }
    switch (from) {
        case Stage::recovering:
            return enter(Stage::probing_image);
        case Stage::probing_image:
            return enter(Stage::seeding);
        case Stage::seeding:
            return enter(Stage::running);
        case Stage::running:
        case Stage::stopping:
            return;
    }
}

void Lifecycle::service_changed() {
    if (stage_ != Stage::running || service_.desired() != service::Desired::gave_up) return;
    if (!steps_.exit_on_crash_loop) return;
    if (!critical_->handles_crash_loop()) return stop(1, "crash loop", "crash loop");
    // A new version that crash-loops is the installer's to roll back, not a reason to exit; once
    // the section is over and the service still gave up, it ends the process as usual.
    if (crash_check_waits_) return;
    crash_check_waits_ = true;
    log::info("crash loop inside the install's critical section: left to the installer");
    critical_->on_end(guard_.bind([this] {
        // on_end runs inside the installer's transition: decide on a later turn, not in it.
        sched_.post(guard_.bind([this] { check_crash_loop(); }));
    }));
}

void Lifecycle::check_crash_loop() {
    crash_check_waits_ = false;
    service_changed();
}

// TERM/INT, a crash loop or a failed start. A second request while the first runs changes
// nothing (nor the exit code): the stop sequence always runs to its end.
void Lifecycle::stop(int exit_code, const std::string& why, std::string exit_reason) {
    if (stage_ == Stage::stopping) {
        log::info("shutdown already in progress", {{"reason", why}});
        return;
    }
    log::info("shutdown: begin", {{"reason", why}});
    exit_code_ = exit_code;
    exit_reason_ = std::move(exit_reason);
    enter(Stage::stopping);
}

// The service and the agent stop side by side; the stop is complete when both are.
void Lifecycle::stop_service_and_agent() {
    pending_stops_ = steps_.leave_service_running ? 1 : 2;
    auto one_done = guard_.bind([this] {
        if (--pending_stops_ > 0) return;
        log::info("shutdown: complete", {{"exit_code", exit_code_}});
        if (finished_) finished_(exit_code_);
    });
    if (steps_.leave_service_running) {
        log::info("shutdown: leaving the service running",
                  {{"state", service::to_string(service_.state())}});
    } else {
        log::info("shutdown: stopping child", {{"state", service::to_string(service_.state())}});
        service_.stop([one_done](Status) mutable { one_done(); });
    }
    steps_.stop_agent(one_done);
}

void Lifecycle::forward(int sig) {
    auto pid = service_.forward(sig);
    log::info(pid ? "signal forwarded" : "signal not forwarded: no child",
              {{"signal", signal_name(sig)}, {"pid", pid.value_or(-1)}});
}

}  // namespace myr::runtime
