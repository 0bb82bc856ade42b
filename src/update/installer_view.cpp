// The updater's own health (Installer::view): read-only, kept out of installer.cpp, which runs the
// machine.
#include "update/installer.hpp"
#include "update/state_files.hpp"

namespace myr::update {

UpdateView Installer::view() const {
    UpdateView v;
    v.state = to_string(state_);
    if (state_ == State::idle && !resumed_version_.empty()) {
        v.state = to_string(State::trial);
        v.target_version = resumed_version_;
    } else if (pkg_ && state_ != State::idle) {
        v.target_version = pkg_->version;
        v.previous_version = from_;
    }
    if (!trial_text().empty()) v.trial_until = format_rfc3339(trial_until_);
    if (state_ == State::downloading && retries_ > 0 && settings_.retry_for > Duration(0)) {
        const auto left = settings_.retry_for - (sched_.now() - first_try_);
        v.retry_until = format_rfc3339(saturating_add(
            sched_.wall(), std::max(std::chrono::duration_cast<Duration>(left), Duration(0))));
    }
    if (const auto& last = ledger_.last_attempt(); last && quarantines(*last)) {
        auto end = quarantine_end(*last, settings_.quarantine_for);
        if (!end) {
            v.quarantine_until = "until the offer changes";
        } else if (*end > sched_.wall()) {
            v.quarantine_until = format_rfc3339(*end);
        }
    }
    if (state_ != State::idle && !why_.text.empty()) {
        v.last_error = why_.text;
    } else if (const auto& last = ledger_.last_attempt();
               last && last->outcome != Outcome::installed) {
        v.last_error = last->reason;
    }
    return v;
}

}  // namespace myr::update
