// Which URLs the updater may download from: the one rule the installer (the offered URL), the
// downloader (every redirect target) and the tests share. A URL is normalised first (scheme and
// host lower-cased, the default port made explicit), then compared with the allowed prefixes by
// whole path segments, so `https://h/artifacts` never admits `https://h/artifacts-evil/x`.
//
// Refused, each with the name of its rule in the message (Errc::invalid):
//   syntax             not an absolute http:// or https:// URL core/url.hpp accepts
//   control-character  a byte <= 0x20 or >= 0x7f (CR/LF would reach the request line)
//   userinfo           user@host (a credential in a URL, or a host that reads like another one)
//   dot-segment        a "." or ".." path segment (servers resolve them; prefixes would not)
//   encoded-separator  %2e, %2f or %5c in the path, a literal '\', or a malformed %-escape:
//                      decoded by some servers into a dot segment or a separator
//   plain-http         http:// while the endpoint must be TLS (not loopback, insecure off)
//   prefix             not below any of update.allowedDownloadPrefixes
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/url.hpp"

namespace myr::download {

struct UrlPolicy {
    std::vector<Url> prefixes;      // config::effective_download_prefixes(); empty admits nothing
    bool allow_plain_http = false;  // the endpoint itself may be plain (see plain_http_allowed)
};

// http:// is allowed exactly where ws:// to the endpoint is: the endpoint is on a loopback host,
// or server.allowInsecureTransport is true.
bool plain_http_allowed(const Url* endpoint, bool allow_insecure_transport);

// The URL in canonical form, or the rule it breaks (the rules above except plain-http and
// prefix). The query, when present, is kept as it is and not compared.
[[nodiscard]] Result<Url> normalize_download_url(std::string_view text);

// Whether `url` (normalised) lies below `prefix`: same scheme, host and port, and the prefix's
// path segments are the first segments of the URL's path. A prefix that ends in '/' names a
// directory and needs at least one more segment.
bool below_prefix(const Url& url, const Url& prefix);

// normalize_download_url, then plain-http and prefix. A refusal reads (one line):
//   https://h/x: refused (rule prefix): not below any allowed download prefix
//   (https://h/artifacts/)
[[nodiscard]] Result<Url> check_download_url(std::string_view text, const UrlPolicy& policy);

// A Location header resolved against the URL it answered (absolute, scheme-relative "//h/p",
// absolute path "/p", or relative path "p"), as text for check_download_url.
std::string resolve_location(const Url& base, std::string_view location);

// Whether two URLs share scheme, host and port (the offer's headers go to its origin only).
bool same_origin(const Url& a, const Url& b);

}  // namespace myr::download
