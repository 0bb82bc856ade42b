// Which HTTP proxy, if any, a connection goes through (docs/net.md, "Proxies"), and the proxy's
// answer to CONNECT. The decision is made here and nowhere else: the HTTP client and the WebSocket
// client ask route() for each connection (each redirect hop too), and net/stream.cpp speaks the
// CONNECT exchange.
//
// Precedence: updater.yaml's network.proxy.url, when set, is the proxy for every scheme and the
// environment is not read. Otherwise the environment as curl reads it: https_proxy, then
// HTTPS_PROXY for https:// and wss://; http_proxy, then HTTP_PROXY for http:// and ws://;
// no_proxy, then NO_PROXY. network.proxy.noProxy, when not empty, replaces the environment's list.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/url.hpp"

namespace myr::net {

// network.proxy of updater.yaml.
struct ProxySettings {
    std::string url;  // "" = from the environment
    std::vector<std::string> no_proxy;
    std::string credentials_file;  // "user:password", re-read at each connection
    std::string credentials_env;   // the name of an environment variable holding "user:password"
};

// The proxy variables of an environment (unset and empty are the same: no value).
struct ProxyEnv {
    std::string http_proxy;   // http_proxy, else HTTP_PROXY
    std::string https_proxy;  // https_proxy, else HTTPS_PROXY
    std::string no_proxy;     // no_proxy, else NO_PROXY
    static ProxyEnv from_process();
};

// A parsed proxy URL: http://[user:password@]host[:port][/]. A bare "host:port" is taken as
// http:// (as curl does); the default port is 1080 (curl's).
struct ProxyUrl {
    std::string host;  // IPv6 without brackets
    uint16_t port = 0;
    std::string user;  // percent-decoded
    std::string password;
    bool has_credentials = false;
    // "http://proxy:3128", credentials shown as "***": the only form logs and messages use.
    std::string shown() const;
};
[[nodiscard]] Result<ProxyUrl> parse_proxy_url(std::string_view text);

// One connection's way through a proxy.
struct ProxyHop {
    std::string host;
    uint16_t port = 0;
    std::string authorization;  // the Proxy-Authorization value ("Basic …"), "" = none
    std::string label;          // ProxyUrl::shown()
};

// NO_PROXY entries (comma or space separated in the environment): "*" (everything), a domain
// ("example.com" and ".example.com" both match the name and every name below it), an IP literal,
// a CIDR ("10.0.0.0/8", "fd00::/8", matched against IP literals only: names are not resolved
// for this), each optionally with ":port" ("[::1]:8080" for IPv6) to match that port only.
std::vector<std::string> split_no_proxy(std::string_view text);
bool no_proxy_matches(const std::vector<std::string>& entries, std::string_view host,
                      uint16_t port);

class ProxyPolicy {
  public:
    // Validates the proxy URLs in effect (a malformed one is an error at start, not at the first
    // download). Direct for everything when no proxy is configured.
    [[nodiscard]] static Result<std::shared_ptr<const ProxyPolicy>> make(const ProxySettings& s,
                                                                         const ProxyEnv& env);

    // The proxy for a connection to `target`, nullopt = direct. Reads the credentials file or
    // variable at each call, so a rotated secret is used by the next connection.
    [[nodiscard]] Result<std::optional<ProxyHop>> route(const Url& target) const;

    // One line for the start-up log: "http://proxy:3128 (network.proxy.url), noProxy: a, b" or
    // "direct". Never shows credentials.
    std::string describe() const;

  private:
    std::optional<ProxyUrl> http_;   // for http:// and ws://
    std::optional<ProxyUrl> https_;  // for https:// and wss://
    std::string source_;             // which setting named them
    std::vector<std::string> no_proxy_;
    std::string credentials_file_;
    std::string credentials_env_;
};

// The proxy's answer to CONNECT, parsed from what has arrived so far. The head (status line and
// headers, interim 1xx answers included) may be at most kMaxConnectReplyHead bytes.
inline constexpr size_t kMaxConnectReplyHead = 8 * 1024;
struct ConnectReply {
    int status = 0;
    std::string reason;     // printable, at most 64 characters
    size_t head_bytes = 0;  // bytes of `received` taken by the head(s); the rest is tunnel data
};
// nullopt: the head is not complete yet. An error for a head that is not HTTP/1.x, too long, or
// malformed.
[[nodiscard]] Result<std::optional<ConnectReply>> parse_connect_reply(std::string_view received);

// "host:port" as the CONNECT request target and Host header name it ("[::1]:443" for IPv6).
std::string authority(std::string_view host, uint16_t port);
// The CONNECT request for `host:port` through `hop`.
std::string connect_request(const ProxyHop& hop, std::string_view host, uint16_t port);

}  // namespace myr::net
