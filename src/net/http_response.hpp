// Incremental HTTP/1.1 response parsing (llhttp) with caps on the head and the body: chunked,
// Content-Length and read-until-close bodies, streamed to a callback so memory stays flat.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/time.hpp"

namespace myr::net {

struct HttpHead {
    int status = 0;
    std::string reason;
    std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent
    // The first header of that name (case-insensitive).
    std::optional<std::string_view> header(std::string_view name) const;
    // Whether a comma-separated header (e.g. Connection) holds `token` (case-insensitive).
    bool header_has_token(std::string_view name, std::string_view token) const;
};

struct HttpLimits {
    size_t max_head = 64u << 10;     // status line + headers
    uint64_t max_body = 1ull << 30;  // decoded body bytes
};

class ResponseParser {
  public:
    struct Handlers {
        // The status line and headers are complete.
        std::function<Status(const HttpHead&)> on_head;
        // A piece of the decoded body.
        std::function<Status(std::string_view)> on_body;
    };
    // `stop_at_upgrade`: a 101 answer ends parsing after its head (the rest is the new protocol).
    // `head_request`: the request was HEAD, so the answer has no body whatever its headers say.
    ResponseParser(HttpLimits limits, Handlers handlers, bool stop_at_upgrade = false,
                   bool head_request = false);
    ~ResponseParser();
    ResponseParser(const ResponseParser&) = delete;
    ResponseParser& operator=(const ResponseParser&) = delete;

    // Parses bytes. Returns how many were used: all of them, unless the response ended (a 101
    // upgrade, or bytes after a complete response). Fails on malformed input, caps, or a failure
    // from a handler (returned with its own message).
    [[nodiscard]] Result<size_t> feed(std::string_view data);
    // The peer closed the connection: completes a read-until-close body, fails on a truncated one.
    [[nodiscard]] Status finish();
    bool head_done() const;
    bool complete() const;  // the whole response (or a 101 head) has been parsed
    const HttpHead& head() const;

    struct State;

  private:
    std::unique_ptr<State> state_;
};

// Retry-After: delta-seconds ("120") or an HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT", also the
// obsolete RFC 850 and asctime forms), as a delay from `now` (0 for a date in the past, at most
// one year for any value, however far in the future).
std::optional<Duration> parse_retry_after(std::string_view value, WallTime now);

}  // namespace myr::net
