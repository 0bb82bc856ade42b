#include "runtime/root_watch.hpp"

#include "core/log.hpp"

namespace myr::runtime {
namespace {

// The age as the log shows it: whole days and hours ("412d 3h"), or "unknown".
std::string age_text(const std::optional<int64_t>& newest_start, int64_t now) {
    if (!newest_start) return "unknown (no key or CA has a validity start)";
    const int64_t s = now - *newest_start;
    if (s < 0) return "0s (newest validity start is in the future)";
    return std::to_string(s / 86400) + "d " + std::to_string(s % 86400 / 3600) + "h";
}

}  // namespace

RootWatch::RootWatch(loop::Scheduler& sched, std::string path, Duration poll)
    : sched_(sched), path_(std::move(path)), every_(poll) {}

Status RootWatch::start() {
    if (path_.empty()) {
        problem_ = "trusted root: update.trustedRootFile is not set";
        return {};
    }
    auto loaded = verify::load_usable_root(path_);
    if (auto stamp = verify::stamp_file(path_)) seen_ = *stamp;
    if (loaded) {
        seen_ = loaded->stamp;
        take(std::move(*loaded), "loaded");
    } else {
        refuse(loaded.error().message(), true);
    }
    timer_ = sched_.timer();
    timer_->start_repeating(every_, [this] { poll(); });
    if (!loaded) return loaded.fail();
    return {};
}

void RootWatch::stop() {
    timer_.reset();
    reading_.reset();
}

void RootWatch::poll() {
    if (reading_) return;  // the answer of the last look is still to come
    auto stamp = verify::stamp_file(path_);
    if (!stamp) {
        // Gone (or unreachable): the root in use stays; reported once per disappearance.
        if (seen_ || problem_.empty()) refuse("trusted root: " + stamp.error().message(), false);
        seen_.reset();
        return;
    }
    if (seen_ && *seen_ == *stamp) return;
    seen_ = *stamp;
    reading_ = loop::post_job<verify::LoadedRoot>(
        sched_, "trusted root reload", [path = path_] { return verify::load_usable_root(path); },
        [this](Result<verify::LoadedRoot> r) {
            reading_.reset();
            if (!r) return refuse(r.error().message(), false);
            take(std::move(*r), "reloaded");
        });
}

void RootWatch::take(verify::LoadedRoot loaded, const char* how) {
    const int64_t now = unix_seconds(sched_.wall());
    log::info(
        std::string("trusted root ") + how,
        {{"file", loaded.path},
         {"age", age_text(loaded.newest_start, now)},
         {"newest_start", loaded.newest_start
                              ? format_rfc3339(from_unix_seconds(*loaded.newest_start))
                              : std::string()},
         {"certificate_authorities", std::to_string(loaded.root->certificate_authorities.size())},
         {"tlogs", std::to_string(loaded.root->tlogs.size())}});
    current_ = std::make_shared<const verify::LoadedRoot>(std::move(loaded));
    problem_.clear();
    if (changed_) changed_(*current_);
}

void RootWatch::refuse(const std::string& why, bool first) {
    problem_ = why;
    if (current_) {
        log::warn("trusted root: new file ignored; the previous one stays in use",
                  {{"file", path_},
                   {"error", why},
                   {"in_use_age", age_text(current_->newest_start, unix_seconds(sched_.wall()))}});
        return;
    }
    if (!first) log::warn("trusted root still unusable", {{"file", path_}, {"error", why}});
}

}  // namespace myr::runtime
