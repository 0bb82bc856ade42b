#include "net/proxy.hpp"

#include <arpa/inet.h>
#include <mbedtls/base64.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/file.hpp"
#include "core/text.hpp"

namespace myr::net {
namespace {

// A credentials file or variable holds one "user:password" line; more is not a credential.
constexpr size_t kMaxCredentials = 4096;

std::string env_first(const char* lower, const char* upper) {
    const char* v = std::getenv(lower);
    if (v == nullptr || *v == '\0') v = std::getenv(upper);
    return v != nullptr ? std::string(v) : std::string();
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

Result<std::string> percent_decode(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        const int hi = i + 2 < s.size() ? hex_digit(s[i + 1]) : -1;
        const int lo = i + 2 < s.size() ? hex_digit(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) return fail("a % not followed by two hex digits");
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

// An IPv4 or IPv6 literal as 16 bytes (IPv4 in the first 4) and its family's bit count.
struct Ip {
    unsigned char bytes[16] = {};
    int bits = 0;
};
std::optional<Ip> parse_ip(std::string_view text) {
    std::string s(text);
    Ip ip;
    if (inet_pton(AF_INET, s.c_str(), ip.bytes) == 1) {
        ip.bits = 32;
        return ip;
    }
    if (inet_pton(AF_INET6, s.c_str(), ip.bytes) == 1) {
        ip.bits = 128;
        return ip;
    }
    return std::nullopt;
}

bool prefix_equal(const Ip& a, const Ip& b, int bits) {
    for (int i = 0; i < bits; ++i) {
        const int mask = 0x80 >> (i % 8);
        if ((a.bytes[i / 8] & mask) != (b.bytes[i / 8] & mask)) return false;
    }
    return true;
}

// An entry's host part and optional port: "host", "host:port", "[v6]", "[v6]:port", "v6".
void split_entry(std::string_view e, std::string_view& host, std::optional<uint16_t>& port) {
    port.reset();
    if (!e.empty() && e.front() == '[') {
        const size_t close = e.find(']');
        if (close == std::string_view::npos) {
            host = e;
            return;
        }
        host = e.substr(1, close - 1);
        if (close + 1 < e.size() && e[close + 1] == ':') {
            const int p = std::atoi(std::string(e.substr(close + 2)).c_str());
            if (p > 0 && p < 65536) port = static_cast<uint16_t>(p);
        }
        return;
    }
    const size_t colon = e.rfind(':');
    // One colon: host:port. More: a bare IPv6 literal (or a CIDR of one).
    if (colon != std::string_view::npos && e.find(':') == colon) {
        host = e.substr(0, colon);
        const int p = std::atoi(std::string(e.substr(colon + 1)).c_str());
        if (p > 0 && p < 65536) port = static_cast<uint16_t>(p);
        return;
    }
    host = e;
}

bool host_matches(std::string_view entry, std::string_view host) {
    if (const size_t slash = entry.find('/'); slash != std::string_view::npos) {
        auto net = parse_ip(entry.substr(0, slash));
        auto ip = parse_ip(host);
        const int bits = std::atoi(std::string(entry.substr(slash + 1)).c_str());
        if (!net || !ip || net->bits != ip->bits || bits < 0 || bits > net->bits) return false;
        return prefix_equal(*net, *ip, bits);
    }
    auto entry_ip = parse_ip(entry);
    auto host_ip = parse_ip(host);
    if (entry_ip || host_ip) {
        return entry_ip && host_ip && entry_ip->bits == host_ip->bits &&
               prefix_equal(*entry_ip, *host_ip, entry_ip->bits);
    }
    while (!entry.empty() && entry.front() == '.') entry.remove_prefix(1);
    if (!host.empty() && host.back() == '.') host.remove_suffix(1);
    if (!entry.empty() && entry.back() == '.') entry.remove_suffix(1);
    if (entry.empty()) return false;
    const std::string h = text::lower(host);
    const std::string d = text::lower(entry);
    if (h == d) return true;
    return h.size() > d.size() && h.compare(h.size() - d.size(), d.size(), d) == 0 &&
           h[h.size() - d.size() - 1] == '.';
}

std::string base64(std::string_view in) {
    std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
    size_t olen = 0;
    mbedtls_base64_encode(reinterpret_cast<unsigned char*>(out.data()), out.size(), &olen,
                          reinterpret_cast<const unsigned char*>(in.data()), in.size());
    out.resize(olen);
    return out;
}

Result<std::string> check_credentials(std::string text, const std::string& where) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.find(':') == std::string::npos) {
        return fail(Errc::invalid, where + ": expected user:password (no ':' found)");
    }
    for (char c : text) {
        if (c == '\n' || c == '\r' || c == '\0') {
            return fail(Errc::invalid, where + ": expected one line user:password");
        }
    }
    return text;
}

}  // namespace

ProxyEnv ProxyEnv::from_process() {
    ProxyEnv e;
    e.http_proxy = env_first("http_proxy", "HTTP_PROXY");
    e.https_proxy = env_first("https_proxy", "HTTPS_PROXY");
    e.no_proxy = env_first("no_proxy", "NO_PROXY");
    return e;
}

std::string ProxyUrl::shown() const {
    const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return std::string("http://") + (has_credentials ? "***@" : "") + h + ":" +
           std::to_string(port);
}

Result<ProxyUrl> parse_proxy_url(std::string_view text) {
    std::string_view s = text;
    const size_t sep = s.find("://");
    if (sep != std::string_view::npos) {
        const std::string scheme = text::lower(s.substr(0, sep));
        if (scheme == "https") {
            return fail(Errc::invalid,
                        "proxy URL: https:// proxies are not supported (TLS to the proxy itself); "
                        "use http:// — TLS to the server still runs end to end through CONNECT");
        }
        if (scheme != "http") {
            return fail(Errc::invalid, "proxy URL: scheme \"" + text::single_line(scheme) +
                                           "\" is not supported (only http://)");
        }
        s.remove_prefix(sep + 3);
    }
    while (!s.empty() && s.back() == '/') s.remove_suffix(1);
    if (s.find_first_of("/?#") != std::string_view::npos) {
        return fail(Errc::invalid, "proxy URL: must be http://host:port with no path");
    }
    ProxyUrl p;
    if (const size_t at = s.rfind('@'); at != std::string_view::npos) {
        const std::string_view info = s.substr(0, at);
        const size_t colon = info.find(':');
        auto user = percent_decode(info.substr(0, colon));
        auto pass = percent_decode(colon == std::string_view::npos ? std::string_view()
                                                                   : info.substr(colon + 1));
        if (!user || !pass) return fail(Errc::invalid, "proxy URL: malformed credentials");
        p.user = std::move(*user);
        p.password = std::move(*pass);
        p.has_credentials = true;
        s.remove_prefix(at + 1);
    }
    std::string_view host;
    std::optional<uint16_t> port;
    split_entry(s, host, port);
    if (host.empty() || host.find_first_of(" \t\r\n[]@") != std::string_view::npos) {
        return fail(Errc::invalid, "proxy URL: no valid host in " + ProxyUrl{}.shown());
    }
    // A colon with no valid port after it is an error, not the default port.
    if (!port && s.size() > host.size() && s.back() != ']' && s.find(':') == s.rfind(':')) {
        return fail(Errc::invalid, "proxy URL: port must be 1..65535");
    }
    p.host = std::string(host);
    p.port = port.value_or(1080);
    return p;
}

std::vector<std::string> split_no_proxy(std::string_view text) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : text) {
        if (c == ',' || c == ' ' || c == '\t') {
            if (!cur.empty()) out.push_back(std::move(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return out;
}

bool no_proxy_matches(const std::vector<std::string>& entries, std::string_view host,
                      uint16_t port) {
    for (const std::string& e : entries) {
        if (e == "*") return true;
        std::string_view h;
        std::optional<uint16_t> p;
        split_entry(e, h, p);
        if (p && *p != port) continue;
        if (host_matches(h, host)) return true;
    }
    return false;
}

Result<std::shared_ptr<const ProxyPolicy>> ProxyPolicy::make(const ProxySettings& s,
                                                             const ProxyEnv& env) {
    auto policy = std::make_shared<ProxyPolicy>();
    auto parse = [](const std::string& text, const char* name) -> Result<std::optional<ProxyUrl>> {
        if (text.empty()) return std::optional<ProxyUrl>();
        auto u = parse_proxy_url(text);
        if (!u) return u.fail(name);
        return std::optional<ProxyUrl>(std::move(*u));
    };
    if (!s.url.empty()) {
        auto u = parse(s.url, "network.proxy.url");
        if (!u) return u.fail();
        policy->http_ = *u;
        policy->https_ = *u;
        policy->source_ = "network.proxy.url";
        policy->no_proxy_ = s.no_proxy;
    } else {
        auto h = parse(env.http_proxy, "http_proxy/HTTP_PROXY");
        if (!h) return h.fail();
        auto hs = parse(env.https_proxy, "https_proxy/HTTPS_PROXY");
        if (!hs) return hs.fail();
        policy->http_ = *h;
        policy->https_ = *hs;
        policy->source_ = "environment";
        policy->no_proxy_ = s.no_proxy.empty() ? split_no_proxy(env.no_proxy) : s.no_proxy;
    }
    policy->credentials_file_ = s.credentials_file;
    policy->credentials_env_ = s.credentials_env;
    return std::shared_ptr<const ProxyPolicy>(std::move(policy));
}

Result<std::optional<ProxyHop>> ProxyPolicy::route(const Url& target) const {
    const std::optional<ProxyUrl>& proxy = target.secure() ? https_ : http_;
    const uint16_t port = target.port != 0 ? target.port : default_port(target.scheme);
    if (!proxy || no_proxy_matches(no_proxy_, target.host, port)) {
        return std::optional<ProxyHop>();
    }
    ProxyHop hop;
    hop.host = proxy->host;
    hop.port = proxy->port;
    hop.label = proxy->shown();
    std::string credentials;
    if (!credentials_file_.empty()) {
        const std::string where = "network.proxy.credentialsFile " + credentials_file_;
        auto fd = open_regular(credentials_file_);
        if (!fd) return fd.fail(where);
        auto text = read_bounded(fd->get(), kMaxCredentials);
        if (!text) return text.fail(where);
        auto c = check_credentials(std::move(*text), where);
        if (!c) return c.fail();
        credentials = std::move(*c);
    } else if (!credentials_env_.empty()) {
        const std::string where = "network.proxy.credentialsEnv " + credentials_env_;
        const char* v = std::getenv(credentials_env_.c_str());
        if (v == nullptr || *v == '\0') return fail(Errc::invalid, where + ": not set");
        if (std::strlen(v) > kMaxCredentials) return fail(Errc::invalid, where + ": too long");
        auto c = check_credentials(v, where);
        if (!c) return c.fail();
        credentials = std::move(*c);
    } else if (proxy->has_credentials) {
        credentials = proxy->user + ":" + proxy->password;
    }
    if (!credentials.empty()) hop.authorization = "Basic " + base64(credentials);
    return std::optional<ProxyHop>(std::move(hop));
}

std::string ProxyPolicy::describe() const {
    if (!http_ && !https_) return "direct";
    std::string out;
    if (http_ && https_ && http_->shown() == https_->shown()) {
        out = http_->shown();
    } else {
        out = "http: " + (http_ ? http_->shown() : std::string("direct")) +
              ", https: " + (https_ ? https_->shown() : std::string("direct"));
    }
    out += " (" + source_ + ")";
    if (!no_proxy_.empty()) {
        out += ", noProxy:";
        for (const std::string& e : no_proxy_) out += " " + e;
    }
    if (!credentials_file_.empty()) out += ", credentials from " + credentials_file_;
    if (!credentials_env_.empty()) out += ", credentials from $" + credentials_env_;
    return out;
}

std::string authority(std::string_view host, uint16_t port) {
    const std::string h = host.find(':') != std::string_view::npos ? "[" + std::string(host) + "]"
                                                                   : std::string(host);
    return h + ":" + std::to_string(port);
}

std::string connect_request(const ProxyHop& hop, std::string_view host, uint16_t port) {
    const std::string target = authority(host, port);
    std::string out = "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n";
    if (!hop.authorization.empty()) out += "Proxy-Authorization: " + hop.authorization + "\r\n";
    out += "User-Agent: myriarch-updater\r\n\r\n";
    return out;
}

namespace {

// One head (status line and headers, without the blank line): its status and reason.
Result<ConnectReply> parse_head(std::string_view head) {
    const size_t eol = head.find("\r\n");
    const std::string_view line = head.substr(0, eol);
    // "HTTP/1.x SSS reason"
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ' || !digit(line[9]) ||
        !digit(line[10]) || !digit(line[11]) || (line.size() > 12 && line[12] != ' ')) {
        return fail("proxy answered CONNECT with something that is not an HTTP/1.x status line");
    }
    ConnectReply r;
    r.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    if (r.status < 100)
        return fail("proxy answered CONNECT with status " + std::to_string(r.status));
    std::string reason;
    for (char c : line.size() > 13 ? line.substr(13) : std::string_view()) {
        if (reason.size() >= 64) break;
        reason += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    r.reason = std::move(reason);
    return r;
}

}  // namespace

Result<std::optional<ConnectReply>> parse_connect_reply(std::string_view received) {
    size_t start = 0;
    while (true) {
        const std::string_view rest = received.substr(start);
        const size_t end = rest.find("\r\n\r\n");
        const size_t limit = kMaxConnectReplyHead - start;
        if (end == std::string_view::npos || end + 4 > limit) {
            if (received.size() >= kMaxConnectReplyHead) {
                return fail("proxy's answer to CONNECT has a head over " +
                            std::to_string(kMaxConnectReplyHead) + " bytes");
            }
            // A head that cannot become an HTTP status line is refused without waiting for more.
            const size_t n = std::min<size_t>(rest.size(), 5);
            if (rest.substr(0, n) != std::string_view("HTTP/").substr(0, n)) {
                return fail(
                    "proxy answered CONNECT with something that is not an HTTP/1.x status line");
            }
            return std::optional<ConnectReply>();
        }
        auto head = parse_head(rest.substr(0, end + 2));
        if (!head) return head.fail();
        start += end + 4;
        // Interim answers (100 Continue, 103 Early Hints) precede the real one.
        if (head->status < 200) continue;
        head->head_bytes = start;
        return std::optional<ConnectReply>(std::move(*head));
    }
}

}  // namespace myr::net
