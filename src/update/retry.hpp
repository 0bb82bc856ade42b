// The outer retry of a download (docs/update.md, "Failure classes"). The downloader already tries
// one fetch a few times (docs/download.md, "Limits, retries, budgets"); what it still gives up on
// is classified here: a transient failure (the link, the server, a full disk that may clear) is
// fetched again within the same install, after a backoff, until update.retryFor has passed since
// the install's first try; a deterministic one ends the install. Each new fetch resumes the kept
// `.part` (same content hash), so a retry costs only the bytes not yet on the volume.
#pragma once

#include <optional>

#include "core/result.hpp"
#include "core/time.hpp"
#include "update/outcome.hpp"

namespace myr::update {

// The class of an error the installer's ports answer (docs/update.md, "Failure classes", whose
// table this switch is): network (refused, reset, DNS, TLS, 408/429/5xx after the downloader's
// tries, a stall) and timeout (update.downloadTimeout) are transient, and so is a disk that is
// full or over quota while writing; what our policy or the node refused (the transport rule, an
// allowlist, a size limit, room known short in advance, a 4xx, a proxy's refusal, no usable
// trusted root) and any other system error (the node's state: a read-only or broken spool) are
// refused; what is wrong with the package (a digest, a signature, a malformed offer, a failed
// process) is deterministic.
FailureClass classify(const Error& e);
inline bool transient(const Error& e) {
    return classify(e) == FailureClass::transient;
}

// The wait before outer retry number `retry` (1, 2, …): 5 s doubling up to 5 min, with jitter
// (`unit` in [0, 1] scales it to between half and all of that) so that a fleet whose server came
// back does not return in the same second.
inline constexpr Duration kRetryBase = std::chrono::seconds(5);
inline constexpr Duration kRetryCap = std::chrono::minutes(5);
Duration retry_delay(int retry, double unit);

// When to try again, or nullopt when the budget is spent: `elapsed` since the install's first
// try, `budget` = update.retryFor. The last wait is cut to what is left, so a retry always
// happens at the end of the budget rather than not at all.
std::optional<Duration> next_retry(int retry, Duration elapsed, Duration budget, double unit);

}  // namespace myr::update
