// How a URL's parts appear on the wire and in messages (net's own, so that net needs only the
// config::Url struct, not the config loader).
#pragma once

#include <string>

#include "config/config.hpp"

namespace myr::net {

// "host" or "[v6]" followed by ":port" unless it is the scheme's default port.
std::string host_header(const config::Url& url);
// "scheme://host:port/path", for messages.
std::string url_label(const config::Url& url);
// The scheme's default port (80/443), 0 when unknown.
uint16_t default_port(const std::string& scheme);
// Whether a header name or value could break out of its line (CR, LF or NUL).
bool unsafe_header_text(const std::string& s);

}  // namespace myr::net
