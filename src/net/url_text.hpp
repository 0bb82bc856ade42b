// How a URL's parts appear on the wire and in messages.
#pragma once

#include <string>

#include "core/url.hpp"

namespace myr::net {

// "host" or "[v6]" followed by ":port" unless it is the scheme's default port.
std::string host_header(const Url& url);
// "scheme://host:port/path", for messages: a query string is shown as "?…" (url_for_messages).
std::string url_label(const Url& url);
// Whether a header name or value could break out of its line (CR, LF or NUL).
bool unsafe_header_text(const std::string& s);

}  // namespace myr::net
