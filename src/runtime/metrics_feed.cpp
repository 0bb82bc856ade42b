#include "runtime/metrics_feed.hpp"

#include <algorithm>
#include <system_error>
#include <thread>

namespace myr::runtime {

using metrics::AttemptResult;
using metrics::RollbackReason;

namespace {

// The order of update::State, for the one-hot myriarch_update_state.
std::vector<std::string> state_names() {
    std::vector<std::string> names;
    for (size_t i = 0; i < update::kStateCount; ++i) {
        names.emplace_back(update::to_string(static_cast<update::State>(i)));
    }
    return names;
}

double unix_now(const Clock& clock) {
    return std::chrono::duration<double>(clock.wall().time_since_epoch()).count();
}

Counted classify_failed(const update::Ending& e) {
    using update::Failure;
    // What our policy or the node refused, at Checking or later (a 4xx, the transport rule, the
    // room known short, no usable trusted root): the operator's to fix, not the package's.
    if (e.cls == update::FailureClass::refused) return {AttemptResult::refused, std::nullopt};
    switch (e.code) {
        case Failure::policy:
            return {e.rule == update::Rule::quarantined ? AttemptResult::quarantined
                                                        : AttemptResult::refused,
                    std::nullopt};
        case Failure::room:
            return {AttemptResult::refused, std::nullopt};
        case Failure::integrity:
        case Failure::signature:
            return {AttemptResult::failed, RollbackReason::verify};
        case Failure::preflight:
            return {AttemptResult::failed, RollbackReason::preflight};
        default:
            return {AttemptResult::failed, std::nullopt};
    }
}

}  // namespace

Counted classify(const update::Ending& e) {
    switch (e.kind) {
        case update::Ending::Kind::installed:
            return {AttemptResult::installed, std::nullopt};
        case update::Ending::Kind::failed:
            return classify_failed(e);
        case update::Ending::Kind::rolled_back:
            if (e.code == update::Failure::trial) {
                return {AttemptResult::rolled_back, RollbackReason::trial};
            }
            return {AttemptResult::rolled_back,
                    e.crash_loop ? RollbackReason::crashloop : RollbackReason::health};
    }
    return {AttemptResult::failed, std::nullopt};
}

Counted classify_recovered(const update::Attempt& a, bool swapped) {
    if (swapped || a.outcome == update::Outcome::rolled_back) {
        return {AttemptResult::rolled_back, RollbackReason::recovery};
    }
    return {AttemptResult::failed, std::nullopt};
}

VolumeRoom::VolumeRoom(const Clock& clock, std::string path, Duration every, Reader read)
    : clock_(clock), path_(std::move(path)), every_(every), read_(std::move(read)) {}

std::optional<uint64_t> VolumeRoom::get() {
    // Read before a refresh starts, so a scrape serves what was there when it asked.
    const bool ok = shared_->ok.load(std::memory_order_acquire);
    const uint64_t bytes = shared_->bytes.load(std::memory_order_relaxed);
    if (!ok || !read_at_ || clock_.now() - *read_at_ >= every_) refresh();
    if (!ok) return std::nullopt;
    return bytes;
}

void VolumeRoom::refresh() {
    if (shared_->in_flight.load(std::memory_order_acquire)) return;
    shared_->in_flight.store(true);
    read_at_ = clock_.now();
    try {
        std::thread([shared = shared_, read = read_, path = path_] {
            std::optional<uint64_t> got = read(path);
            if (got) shared->bytes.store(*got, std::memory_order_relaxed);
            shared->ok.store(got.has_value(), std::memory_order_release);
            shared->in_flight.store(false, std::memory_order_release);
        }).detach();
    } catch (const std::system_error&) {
        // No thread to be had (RLIMIT_NPROC, memory): the scrape goes on without the reading.
        shared_->in_flight.store(false);
    }
}

MetricsFeed::MetricsFeed(const Clock& clock, std::string install_dir)
    : clock_(clock), room_(clock, std::move(install_dir)), registry_(state_names()) {}

void MetricsFeed::trusted_root(std::optional<int64_t> newest_start) {
    registry_.trusted_root_since(newest_start ? std::optional<double>(*newest_start)
                                              : std::nullopt);
}

update::Observer MetricsFeed::observer() {
    update::Observer o;
    o.state = [this](update::State s) { registry_.state(static_cast<size_t>(s)); };
    o.ended = [this](const update::Ending& e) { count(classify(e)); };
    o.downloaded = [this](uint64_t bytes, Duration took) {
        registry_.downloaded(bytes, std::chrono::duration<double>(took).count());
    };
    return o;
}

void MetricsFeed::count(const Counted& c) {
    registry_.attempt(c.result, unix_now(clock_));
    if (c.reason) registry_.rollback(*c.reason);
}

void MetricsFeed::set_sources(std::function<uint64_t()> child_restarts,
                              std::function<bool()> connected) {
    child_restarts_ = std::move(child_restarts);
    connected_ = std::move(connected);
}

const std::string& MetricsFeed::render() {
    metrics::Live live;
    live.volume_free_bytes = room_.get();
    live.opamp_connected = connected_ && connected_();
    live.child_restarts = child_restarts_ ? child_restarts_() : 0;
    live.process = process_.read();
    return registry_.render(live, unix_now(clock_));
}

}  // namespace myr::runtime
