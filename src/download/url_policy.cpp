#include "download/url_policy.hpp"

#include <utility>

#include "core/hex.hpp"

namespace myr::download {
namespace {

// The URL as messages show it: a presigned URL's query string is its secret.
Failure refuse(std::string_view text, const char* rule, const std::string& why) {
    return fail(Errc::refused, url_for_messages(text) + ": refused (rule " + rule + "): " + why);
}

std::string_view path_only(std::string_view path) {
    return path.substr(0, path.find('?'));
}

// The segments after the leading '/': "/a/b/" -> {"a", "b", ""}.
std::vector<std::string_view> segments(std::string_view path) {
    std::vector<std::string_view> out;
    if (!path.empty() && path[0] == '/') path.remove_prefix(1);
    size_t start = 0;
    while (true) {
        const size_t slash = path.find('/', start);
        out.push_back(path.substr(start, slash == std::string_view::npos ? slash : slash - start));
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    return out;
}

}  // namespace

bool plain_http_allowed(const Url* endpoint, bool allow_insecure_transport) {
    return allow_insecure_transport || (endpoint != nullptr && is_loopback_host(endpoint->host));
}

Result<Url> normalize_download_url(std::string_view text) {
    for (char c : text) {
        const auto b = static_cast<unsigned char>(c);
        if (b <= 0x20 || b >= 0x7f) {
            return refuse("URL", "control-character",
                          "the URL holds a space, a control or a non-ASCII byte");
        }
    }
    const size_t sep = text.find("://");
    if (sep == std::string_view::npos) {
        return refuse(text, "syntax", "not an absolute http:// or https:// URL");
    }
    const std::string_view rest = text.substr(sep + 3);
    if (rest.substr(0, rest.find_first_of("/?#")).find('@') != std::string_view::npos) {
        return refuse(text, "userinfo", "user information (user@host) is not allowed");
    }
    auto parsed = parse_url(text);
    if (!parsed) return refuse(text, "syntax", parsed.error().message());
    Url u = std::move(*parsed);
    if (u.scheme != "http" && u.scheme != "https") {
        return refuse(text, "syntax", "not an http:// or https:// URL");
    }
    const std::string_view path = path_only(u.path);
    for (size_t i = 0; i < path.size(); ++i) {
        if (path[i] == '\\') {
            return refuse(text, "encoded-separator", "the path holds a backslash");
        }
        if (path[i] != '%') continue;
        const int hi = i + 1 < path.size() ? hex::digit(path[i + 1]) : -1;
        const int lo = i + 2 < path.size() ? hex::digit(path[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            return refuse(text, "encoded-separator", "the path holds a malformed %-escape");
        }
        const int v = hi * 16 + lo;
        if (v == '.' || v == '/' || v == '\\') {
            return refuse(text, "encoded-separator",
                          "the path holds a percent-encoded '.', '/' or '\\'");
        }
        if (v < 0x20 || v >= 0x7f) {
            return refuse(text, "control-character",
                          "the path holds a percent-encoded control or non-ASCII byte");
        }
    }
    for (std::string_view seg : segments(path)) {
        if (seg == "." || seg == "..") {
            return refuse(text, "dot-segment", "the path holds a \".\" or \"..\" segment");
        }
    }
    return u;
}

bool below_prefix(const Url& url, const Url& prefix) {
    if (url.scheme != prefix.scheme || url.host != prefix.host || url.port != prefix.port) {
        return false;
    }
    std::vector<std::string_view> want = segments(path_only(prefix.path));
    const bool directory = !want.empty() && want.back().empty();
    if (directory) want.pop_back();
    const std::vector<std::string_view> have = segments(path_only(url.path));
    if (have.size() < want.size() + (directory ? 1 : 0)) return false;
    for (size_t i = 0; i < want.size(); ++i) {
        if (have[i] != want[i]) return false;
    }
    return true;
}

Result<Url> check_download_url(std::string_view text, const UrlPolicy& policy) {
    auto u = normalize_download_url(text);
    if (!u) return u;
    const std::string canon = u->str();
    if (u->scheme == "http" && !policy.allow_plain_http) {
        return refuse(canon, "plain-http",
                      "http:// is allowed only when the endpoint is on a loopback host or "
                      "server.allowInsecureTransport is true");
    }
    for (const Url& p : policy.prefixes) {
        if (below_prefix(*u, p)) return u;
    }
    std::string allowed;
    for (const Url& p : policy.prefixes) allowed += (allowed.empty() ? "" : ", ") + p.shown();
    return refuse(canon, "prefix",
                  "not below any allowed download prefix (" +
                      (allowed.empty() ? std::string("none configured") : allowed) + ")");
}

std::string resolve_location(const Url& base, std::string_view location) {
    const size_t scheme_end = location.find("://");
    if (scheme_end != std::string_view::npos && location.find_first_of("/?#") > scheme_end) {
        return std::string(location);
    }
    if (location.substr(0, 2) == "//") return base.scheme + ":" + std::string(location);
    Url out = base;
    if (!location.empty() && location[0] == '/') {
        out.path = std::string(location);
    } else if (!location.empty() && location[0] == '?') {
        out.path = std::string(path_only(base.path)) + std::string(location);
    } else {
        const std::string_view dir = path_only(base.path);
        out.path = std::string(dir.substr(0, dir.rfind('/') + 1)) + std::string(location);
    }
    return out.str();
}

bool same_origin(const Url& a, const Url& b) {
    return a.scheme == b.scheme && a.host == b.host && a.port == b.port;
}

}  // namespace myr::download
