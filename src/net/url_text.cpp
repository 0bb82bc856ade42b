#include "net/url_text.hpp"

namespace myr::net {

namespace {
std::string bracketed(const std::string& host) {
    return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}
}  // namespace

std::string host_header(const Url& url) {
    std::string h = bracketed(url.host);
    if (url.port != 0 && url.port != default_port(url.scheme)) h += ":" + std::to_string(url.port);
    return h;
}

std::string url_label(const Url& url) {
    // Never the query string: a presigned download URL carries its secret there.
    return url.scheme + "://" + bracketed(url.host) + ":" +
           std::to_string(url.port != 0 ? url.port : default_port(url.scheme)) +
           url_for_messages(url.path.empty() ? "/" : url.path);
}

bool unsafe_header_text(const std::string& s) {
    return s.find_first_of(std::string("\r\n\0", 3)) != std::string::npos;
}

}  // namespace myr::net
