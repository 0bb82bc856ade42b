// libFuzzer target for the download URL policy: normalise and check arbitrary text against a few
// prefixes, resolve it as a Location against a base URL, and hold the policy's promises: an
// admitted URL is http(s), below an allowed prefix, free of dot segments, encoded separators and
// control bytes, and admitting its own canonical form again gives the same URL.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "download/url_policy.hpp"

using namespace myr;
using namespace myr::download;

namespace {

const UrlPolicy& policy() {
    static const UrlPolicy p = [] {
        UrlPolicy q;
        q.prefixes = {Url{"https", "h", 443, "/artifacts/"}, Url{"http", "127.0.0.1", 8080, "/a"}};
        q.allow_plain_http = true;
        return q;
    }();
    return p;
}

void check_admitted(const Url& u) {
    if (u.scheme != "http" && u.scheme != "https") std::abort();
    bool below = false;
    for (const Url& p : policy().prefixes) below = below || below_prefix(u, p);
    if (!below) std::abort();
    const std::string_view path = std::string_view(u.path).substr(0, u.path.find('?'));
    if (path.find("/../") != std::string_view::npos || path.find("/./") != std::string_view::npos ||
        path.ends_with("/..") || path.ends_with("/.") ||
        path.find('\\') != std::string_view::npos) {
        std::abort();
    }
    for (char c : u.str()) {
        if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
            std::abort();
        }
    }
    auto again = check_download_url(u.str(), policy());
    if (!again || !(*again == u)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    if (auto u = check_download_url(text, policy())) check_admitted(*u);
    if (auto n = normalize_download_url(text)) {
        auto twice = normalize_download_url(n->str());
        if (!twice || !(*twice == *n)) std::abort();
    }
    const Url base{"https", "h", 443, "/artifacts/v1/x.tar.gz?t=1"};
    if (auto r = check_download_url(resolve_location(base, text), policy())) check_admitted(*r);
    return 0;
}
