#include "update/trial_watch.hpp"

#include "core/log.hpp"

namespace myr::update {

TrialWatch::TrialWatch(loop::Scheduler& sched, service::ServiceController& service)
    : sched_(sched), service_(service), deadline_(sched.timer()) {
    // Listeners stay for the life of the controller, which outlives us: tied to the guard.
    service_.on_change(guard_.bind([this] { service_changed(); }));
}

void TrialWatch::start(Duration period, uint32_t max_restarts, std::string version,
                       std::function<void(Status)> done) {
    done_ = std::move(done);
    version_ = std::move(version);
    max_restarts_ = max_restarts;
    ends_ = 0;
    waiting_seen_ = false;
    deadline_->start(period, guard_.bind([this] { end({}); }));
    // What happened before the watch began (a crash loop while packages.json was written).
    sched_.post(guard_.bind([this] { service_changed(); }));
}

void TrialWatch::stop() {
    deadline_->stop();
    done_ = nullptr;
}

void TrialWatch::service_changed() {
    if (!done_) return;
    if (service_.desired() == service::Desired::gave_up) {
        return end(fail(Errc::process, "the supervisor crash-looped during the trial of " +
                                           version_ + " (its restart policy gave up)"));
    }
    if (service_.state() != service::State::waiting_to_restart) {
        waiting_seen_ = false;
        return;
    }
    if (waiting_seen_) return;
    waiting_seen_ = true;
    ++ends_;
    log::warn("update: the supervisor ended during the trial",
              {{"version", version_}, {"ends", ends_}, {"trial_max_restarts", max_restarts_}});
    if (ends_ < max_restarts_) return;
    end(fail(Errc::process, "the supervisor ended " + std::to_string(ends_) +
                                (ends_ == 1 ? " time" : " times") + " during the trial of " +
                                version_ + " (update.trialMaxRestarts " +
                                std::to_string(max_restarts_) + ")"));
}

void TrialWatch::end(Status st) {
    deadline_->stop();
    auto done = std::move(done_);
    done_ = nullptr;
    if (done) done(std::move(st));
}

}  // namespace myr::update
