#include "update/health_rounds.hpp"

#include <algorithm>

namespace myr::update {

HealthRounds::HealthRounds(loop::Scheduler& sched, HealthProbe& probe,
                           const service::ServiceController& service,
                           std::vector<HealthCheck> checks, RoundsSettings settings)
    : sched_(sched),
      probe_(probe),
      service_(service),
      checks_(std::move(checks)),
      settings_(settings),
      round_timer_(sched.timer()),
      deadline_(sched.timer()) {}

void HealthRounds::start(std::function<void(HealthVerdict)> done) {
    stop();
    done_ = std::move(done);
    passes_ = 0;
    last_failure_.clear();
    failure_repeats_ = 0;
    deadline_->start(settings_.timeout, guard_.bind([this] { give_up(); }));
    round_timer_->start(settings_.interval, guard_.bind([this] { round(); }));
}

void HealthRounds::stop() {
    guard_.drop();
    round_timer_->stop();
    deadline_->stop();
    in_flight_.reset();
    done_ = nullptr;
}

void HealthRounds::round() {
    if (service_.state() != service::State::running) {
        return round_result(false, std::string("supervisor not running (") +
                                       service::to_string(service_.state()) + ")");
    }
    next_check_ = 0;
    probe_next();
}

void HealthRounds::probe_next() {
    if (next_check_ >= checks_.size()) return round_result(true, "");
    const HealthCheck& check = checks_[next_check_];
    std::string what = check.name + " " + check.url.str();
    Duration timeout = std::min(settings_.probe_timeout, settings_.interval);
    if (timeout <= Duration::zero()) timeout = settings_.probe_timeout;
    in_flight_ = probe_.get(check.url, timeout, guard_.bind([this, what](Result<int> r) {
        // The probe's client is still on the stack that called us: let it go on a later turn.
        sched_.post([done = std::shared_ptr<Step>(std::move(in_flight_))] {});
        if (!r) return round_result(false, what + ": " + r.error().message());
        if (*r < 200 || *r > 299) return round_result(false, what + ": " + std::to_string(*r));
        ++next_check_;
        probe_next();
    }));
}

void HealthRounds::round_result(bool passed, const std::string& why) {
    if (passed) {
        if (++passes_ >= settings_.successes) return answer(HealthVerdict{true, {}});
    } else {
        passes_ = 0;  // only rounds in a row count
        if (why == last_failure_) {
            ++failure_repeats_;
        } else {
            last_failure_ = why;
            failure_repeats_ = 1;
        }
        // A crash loop is over for good: waiting for the deadline would only delay the verdict.
        if (service_.desired() == service::Desired::gave_up) return give_up();
    }
    round_timer_->start(settings_.interval, guard_.bind([this] { round(); }));
}

void HealthRounds::give_up() {
    std::string why;
    if (!last_failure_.empty()) {
        why = last_failure_ + " x" + std::to_string(failure_repeats_);
    } else {
        why = std::to_string(passes_) + " of " + std::to_string(settings_.successes) +
              " rounds passed within " + format_duration(settings_.timeout);
    }
    answer(HealthVerdict{false, std::move(why), service_.desired() == service::Desired::gave_up});
}

// Everything is stopped before the answer, which may start the rounds again (the rollback's
// health step follows a failed health check) or destroy this object's owner's state.
void HealthRounds::answer(HealthVerdict v) {
    auto done = std::move(done_);
    stop();
    if (done) done(std::move(v));
}

}  // namespace myr::update
