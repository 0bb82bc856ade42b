#include "core/url.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "core/text.hpp"

namespace myr {

namespace {

bool is_ipv4(const std::string& s) {
    in_addr a{};
    return inet_pton(AF_INET, s.c_str(), &a) == 1;
}

bool is_ipv6(const std::string& s) {
    in6_addr a{};
    return inet_pton(AF_INET6, s.c_str(), &a) == 1;
}

// A DNS name or IPv4 literal as it may appear in a URL: letters, digits, '-', '.', '_'.
bool is_host_name(std::string_view s) {
    if (s.empty() || s.size() > 253) return false;
    for (char c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.' || c == '_';
        if (!ok) return false;
    }
    return true;
}

Result<uint16_t> parse_port(std::string_view s) {
    if (s.empty()) return fail("missing port after ':'");
    if (s.size() > 5) return fail("port \"" + std::string(s) + "\" is out of range 1..65535");
    unsigned v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return fail("port \"" + std::string(s) + "\" is not a number");
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    if (v < 1 || v > 65535) return fail("port " + std::to_string(v) + " is out of range 1..65535");
    return static_cast<uint16_t>(v);
}

std::string bracket(const std::string& host) {
    return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

}  // namespace

uint16_t default_port(std::string_view scheme) {
    if (scheme == "http" || scheme == "ws") return 80;
    if (scheme == "https" || scheme == "wss") return 443;
    return 0;
}

std::string Url::str() const {
    std::string out = scheme + "://" + bracket(host);
    if (port != default_port(scheme)) out += ":" + std::to_string(port);
    return out + path;
}

std::string Url::shown() const {
    return url_for_messages(str());
}

std::string url_for_messages(std::string_view text) {
    const size_t end = text.find_first_of("?#");
    std::string_view base = text.substr(0, end);
    std::string out;
    const size_t sep = base.find("://");
    const size_t authority = sep == std::string_view::npos ? 0 : sep + 3;
    const size_t path = std::min(base.find('/', authority), base.size());
    const size_t at = base.substr(authority, path - authority).rfind('@');
    if (at != std::string_view::npos) {
        out.append(base.substr(0, authority));
        base.remove_prefix(authority + at + 1);
    }
    out.append(base);
    if (end != std::string_view::npos && text[end] == '?') out += "?\xE2\x80\xA6";  // "?…"
    return out;
}

std::string HostPort::str() const {
    return bracket(host) + ":" + std::to_string(port);
}

Result<Url> parse_url(std::string_view text) {
    size_t sep = text.find("://");
    if (sep == std::string_view::npos) {
        return fail("not a URL (expected scheme://host[:port]/path)");
    }
    Url u;
    u.scheme = text::lower(text.substr(0, sep));
    if (u.scheme != "ws" && u.scheme != "wss" && u.scheme != "http" && u.scheme != "https") {
        return fail("unsupported URL scheme \"" + u.scheme + "\"");
    }
    for (char c : text) {
        if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
            return fail("URL contains a space, control or non-ASCII character");
        }
    }
    std::string_view rest = text.substr(sep + 3);
    if (rest.find('#') != std::string_view::npos) return fail("URL must not have a #fragment");
    size_t auth_end = rest.find_first_of("/?");
    std::string_view authority = rest.substr(0, auth_end);
    std::string_view tail = auth_end == std::string_view::npos ? "" : rest.substr(auth_end);
    if (authority.find('@') != std::string_view::npos) {
        return fail("URL must not contain user information (user@host)");
    }
    std::string_view port_text;
    bool has_port = false;
    if (!authority.empty() && authority[0] == '[') {
        size_t close = authority.find(']');
        if (close == std::string_view::npos) return fail("URL has an unclosed '[' in its host");
        u.host = text::lower(authority.substr(1, close - 1));
        if (!is_ipv6(u.host)) return fail("\"" + u.host + "\" is not an IPv6 address");
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after[0] != ':') return fail("unexpected text after ']' in the URL host");
            port_text = after.substr(1);
            has_port = true;
        }
    } else {
        size_t colon = authority.find(':');
        u.host = text::lower(authority.substr(0, colon));
        if (colon != std::string_view::npos) {
            port_text = authority.substr(colon + 1);
            has_port = true;
        }
        if (u.host.empty()) return fail("URL has no host");
        if (!is_host_name(u.host)) return fail("URL host \"" + u.host + "\" is not valid");
    }
    if (has_port) {
        auto port = parse_port(port_text);
        if (!port) return port.fail("URL");
        u.port = *port;
    } else {
        u.port = default_port(u.scheme);
    }
    if (tail.empty()) {
        u.path = "/";
    } else if (tail[0] == '?') {
        u.path = "/" + std::string(tail);
    } else {
        u.path = std::string(tail);
    }
    return u;
}

Result<HostPort> parse_host_port(std::string_view text) {
    HostPort hp;
    std::string_view port_text;
    if (!text.empty() && text[0] == '[') {
        size_t close = text.find(']');
        if (close == std::string_view::npos) return fail("unclosed '[' (expected \"[::]:13135\")");
        hp.host = text::lower(text.substr(1, close - 1));
        if (!is_ipv6(hp.host)) return fail("\"" + hp.host + "\" is not an IPv6 address");
        if (close + 1 >= text.size() || text[close + 1] != ':') {
            return fail("missing :port after the address (expected \"[::]:13135\")");
        }
        port_text = text.substr(close + 2);
    } else {
        size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) {
            return fail("expected host:port, e.g. \"0.0.0.0:13135\"");
        }
        hp.host = std::string(text.substr(0, colon));
        if (hp.host.find(':') != std::string::npos) {
            return fail("an IPv6 address needs brackets, e.g. \"[::]:13135\"");
        }
        if (hp.host.empty()) return fail("missing host (use 0.0.0.0 for every interface)");
        // A name is resolved when listening; what looks like a dotted quad must be one.
        const bool numeric = hp.host.find_first_not_of("0123456789.") == std::string::npos;
        if (numeric ? !is_ipv4(hp.host) : !is_host_name(hp.host)) {
            return fail("\"" + hp.host + "\" is not an IP address or a host name");
        }
        if (!numeric) hp.host = text::lower(hp.host);
        port_text = text.substr(colon + 1);
    }
    auto port = parse_port(port_text);
    if (!port) return port.fail();
    hp.port = *port;
    return hp;
}

bool is_loopback_host(std::string_view host) {
    std::string h = text::lower(host);
    if (h == "localhost") return true;
    in_addr a4{};
    if (inet_pton(AF_INET, h.c_str(), &a4) == 1) {
        return (ntohl(a4.s_addr) >> 24) == 127;
    }
    in6_addr a6{};
    if (inet_pton(AF_INET6, h.c_str(), &a6) == 1) {
        return std::memcmp(&a6, &in6addr_loopback, sizeof a6) == 0;
    }
    return false;
}

}  // namespace myr
