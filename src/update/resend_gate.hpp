// A failed offer sent again (docs/update.md, "Offers sent again"). The OpAMP agent procedure
// skips an offer only when what the agent has answers it, so an offer that ended in a failure is
// processed again when the server sends it again: a transient end is fetched again, a
// deterministic one is answered from its quarantine, a refused one is checked again once the
// operator fixed the node. Servers resend at every reconnect and some on every message, so the
// same failed offer is checked at most once per backoff step: 5 s doubling to 5 min, jittered,
// as the retries of a download (retry.hpp). A resend that comes earlier waits for its step.
#pragma once

#include <optional>
#include <string>

#include "core/time.hpp"

namespace myr::update {

class ResendGate {
  public:
    // The offer with `key` (Ledger::key_of) ended in a failure at `now`; `unit` in [0, 1] draws
    // the jitter.
    void failed(const std::string& key, MonoTime now, double unit);
    // The last offer was installed, or another offer ended: nothing is held back.
    void clear() { *this = ResendGate{}; }
    // How long the offer with `key`, arriving at `now`, waits before its Checking; nullopt: none.
    std::optional<Duration> wait(const std::string& key, MonoTime now) const;
    int failures() const { return failures_; }

  private:
    std::string key_;
    int failures_ = 0;  // of key_, in a row
    MonoTime not_before_{};
};

}  // namespace myr::update
