#include "update/rollback.hpp"

#include "core/log.hpp"

namespace myr::update {

std::string rolled_back_reason(const std::string& why, const std::string& from,
                               const RollbackResult& r) {
    if (!r.switched) return why + "; rollback failed: " + r.failure;
    if (!r.healthy) {
        return why + "; rolled back to " + from +
               ", which fails its health check too: " + r.failure;
    }
    return why + "; rolled back to " + from;
}

std::string unhealthy_after(const std::string& from, const RollbackResult& r) {
    if (!r.switched) return "rollback to " + from + " failed: " + r.failure;
    if (!r.healthy) return "rolled back to " + from + ", unhealthy: " + r.failure;
    return "";
}

void Rollback::start(std::string from, std::function<void()> on_switched,
                     std::function<void(RollbackResult)> done) {
    cancel();
    from_ = std::move(from);
    on_switched_ = std::move(on_switched);
    done_ = std::move(done);
    result_ = RollbackResult{};
    run(Step::stop);
}

void Rollback::cancel() {
    guard_.drop();
    in_flight_.reset();
    rounds_.stop();
    done_ = nullptr;
}

void Rollback::run(Step s) {
    switch (s) {
        case Step::stop:
            if (service_.state() == service::State::stopped) return run(Step::switch_back);
            service_.stop(guard_.bind([this](Status st) {
                if (!st) log::warn("update: rollback: stop", {{"error", st.error().message()}});
                run(Step::switch_back);
            }));
            return;
        case Step::switch_back:
            if (from_.empty()) return end("nothing was active before");
            in_flight_ = volume_.switch_back(from_, guard_.bind([this](Status st) {
                if (!st) return end("switch back to " + from_ + ": " + st.error().message());
                result_.switched = true;
                if (on_switched_) on_switched_();
                run(Step::start);
            }));
            return;
        case Step::start:
            service_.start(guard_.bind([this](Status st) {
                if (!st) return end("start " + from_ + ": " + st.error().message());
                run(Step::health);
            }));
            return;
        case Step::health:
            rounds_.start(guard_.bind([this](HealthVerdict v) {
                result_.healthy = v.healthy;
                end(v.healthy ? "" : "health check failed: " + v.why);
            }));
            return;
    }
}

void Rollback::end(std::string failure) {
    result_.failure = std::move(failure);
    auto done = std::move(done_);
    done_ = nullptr;
    if (done) done(result_);
}

}  // namespace myr::update
