// URLs and listen addresses as values: parsed once (the configuration loader does it), then handed
// to net/, health/ and opamp/ without the configuration model. The scheme's default port is
// decided here and nowhere else.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace myr {

// A parsed ws://, wss://, http:// or https:// URL.
struct Url {
    std::string scheme;  // lower case: "ws", "wss", "http", "https"
    std::string host;    // without brackets for IPv6 literals
    uint16_t port = 0;   // explicit or the scheme's default
    std::string path;    // starts with "/"; includes the query, if any
    bool secure() const { return scheme == "wss" || scheme == "https"; }
    std::string str() const;  // canonical form
    // The canonical form for messages and logs: url_for_messages(str()).
    std::string shown() const;
    friend bool operator==(const Url&, const Url&) = default;
};

// host:port for a listening socket. IPv6 as "[::]:13135".
struct HostPort {
    std::string host;  // without brackets
    uint16_t port = 0;
    bool ipv6() const { return host.find(':') != std::string::npos; }
    std::string str() const;
    friend bool operator==(const HostPort&, const HostPort&) = default;
};

// A URL as messages and logs may show it: without user information or fragment, and with its
// query string (a presigned URL's signature, a token) replaced by "?…". Any text, parsed or not:
// the one rule for every message that names a URL a server handed over.
std::string url_for_messages(std::string_view text);

// 80 for http and ws, 443 for https and wss, 0 for any other scheme (no default).
uint16_t default_port(std::string_view scheme);

// A ws://, wss://, http:// or https:// URL: no user info, no fragment, port 1..65535.
[[nodiscard]] Result<Url> parse_url(std::string_view text);
// host:port: "127.0.0.1:13135", "[::]:13135" or "localhost:13135" (a name is resolved by whoever
// listens on it), and a port 1..65535.
[[nodiscard]] Result<HostPort> parse_host_port(std::string_view text);
// 127.0.0.0/8, ::1 (any spelling) or "localhost" (any case).
bool is_loopback_host(std::string_view host);

}  // namespace myr
