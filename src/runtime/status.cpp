#include "runtime/status.hpp"

namespace myr::runtime {
namespace {

uint64_t unix_nano(WallTime t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
}

}  // namespace

opamp::SubHealth updater_health(const update::UpdateView& v, const std::string& describe) {
    opamp::SubHealth h;
    h.healthy = v.last_error.empty();
    h.status = describe;
    h.last_error = v.last_error;
    const std::pair<const char*, const std::string*> fields[] = {
        {"myriarch.update.state", &v.state},
        {"myriarch.update.target_version", &v.target_version},
        {"myriarch.update.previous_version", &v.previous_version},
        {"myriarch.update.trial_until", &v.trial_until},
        {"myriarch.update.retry_until", &v.retry_until},
        {"myriarch.update.quarantine_until", &v.quarantine_until},
        {"myriarch.update.last_error", &v.last_error},
    };
    for (const auto& [key, value] : fields) {
        if (value->empty()) continue;
        h.attributes.push_back({key, *value});  // the encoder cuts and cleans every value
    }
    return h;
}

CollectorStatus::CollectorStatus(const Clock& clock, service::ServiceController& service)
    : clock_(clock), service_(service) {
    health_.healthy = false;
    health_.status = "starting: preparing the collector volume";
    health_.status_time_unix_nano = unix_nano(clock_.wall());
    service_.on_change([this] { service_changed(); });
}

void CollectorStatus::set_versions(const Versions& v) {
    versions_ = v;
    if (on_change_) on_change_();
}

void CollectorStatus::set_install_problem(const std::string& reason) {
    if (reason == install_problem_) return;
    install_problem_ = reason;
    if (on_change_) on_change_();
}

void CollectorStatus::set_updater(opamp::SubHealth h) {
    if (updater_) {
        h.status_time_unix_nano = updater_->status_time_unix_nano;
        h.start_time_unix_nano = updater_->start_time_unix_nano;
        if (h == *updater_) return;
    } else {
        h.start_time_unix_nano = unix_nano(clock_.wall());
    }
    h.status_time_unix_nano = unix_nano(clock_.wall());
    updater_ = std::move(h);
    if (on_change_) on_change_();
}

opamp::ComponentHealth CollectorStatus::health() const {
    opamp::ComponentHealth h = health_;
    if (updater_) h.components.emplace_back(kUpdaterComponent, *updater_);
    if (install_problem_.empty()) return h;
    h.healthy = false;
    h.status = "collector unhealthy: " + install_problem_;
    h.last_error = install_problem_;
    return h;
}

void CollectorStatus::follow() {
    following_ = true;
    service_changed();
}

void CollectorStatus::service_changed() {
    if (!following_) return;
    service::State state = service_.state();
    pid_t pid = service_.pid();
    const bool gave_up = service_.desired() == service::Desired::gave_up;
    if (reported_ && state == last_state_ && pid == last_pid_ && gave_up == last_gave_up_) return;
    bool was_running = reported_ && last_state_ == service::State::running;
    // The give-up usually follows a wait to restart, not a run (a systemd unit that hit its
    // start limit): it is the error to report then, not the restart before it.
    bool gave_up_now = gave_up && !(reported_ && last_gave_up_);
    reported_ = true;
    last_state_ = state;
    last_pid_ = pid;
    last_gave_up_ = gave_up;
    uint64_t now = unix_nano(clock_.wall());
    health_.healthy = state == service::State::running;
    health_.status = "supervisor " + service_.describe();
    health_.status_time_unix_nano = now;
    if (health_.healthy && (!was_running || health_.start_time_unix_nano == 0)) {
        health_.start_time_unix_nano = now;
    }
    if ((was_running && !health_.healthy) || gave_up_now) {
        health_.last_error = "supervisor ended: " + service_.describe();
    }
    if (on_change_) on_change_();
}

}  // namespace myr::runtime
