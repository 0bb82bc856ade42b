#include "runtime/notify.hpp"

#include "core/log.hpp"

namespace myr::runtime {

UnitNotifier::UnitNotifier(loop::Scheduler& sched, service::Notifier notifier)
    : notifier_(std::move(notifier)), watchdog_(sched.timer()) {}

void UnitNotifier::start() {
    if (!notifier_.enabled()) return;
    auto every = notifier_.watchdog_interval();
    if (!every) return;
    log::info("systemd watchdog: notifying", {{"every", format_duration(*every)}});
    watchdog_->start_repeating(*every, [this] { send("WATCHDOG=1"); });
}

void UnitNotifier::ready(std::string_view status) {
    send("READY=1\nSTATUS=" + std::string(status));
}

void UnitNotifier::stopping() {
    send("STOPPING=1\nSTATUS=stopping");
}

void UnitNotifier::status(std::string_view text) {
    send("STATUS=" + std::string(text));
}

// A lost notification is not worth stopping for: systemd's own timeouts say it (the start
// times out, the watchdog fires). Said once, not at every tick.
void UnitNotifier::send(const std::string& message) {
    Status st = notifier_.send(message);
    if (st || warned_) return;
    warned_ = true;
    log::warn("systemd notify failed", {{"error", st.error().message()}});
}

}  // namespace myr::runtime
