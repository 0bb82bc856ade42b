// An HTTP/1.1 client for one request per connection (Connection: close) on the loop: plain or
// TLS, redirects returned to the caller (never followed here), caps on head and body, connect /
// idle / total timeouts, and a streaming body callback with backpressure (pause/resume) so a
// download of hundreds of MB goes to disk with flat memory.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/time.hpp"
#include "core/url.hpp"
#include "loop/scheduler.hpp"
#include "loop/step.hpp"
#include "net/http_response.hpp"
#include "net/proxy.hpp"

namespace myr::net {

class TlsConfig;

struct HttpRequest {
    std::string method = "GET";
    Url url;  // http:// or https://
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;  // sent with Content-Length when not empty (or method is POST/PUT)
};

struct HttpOptions {
    std::string ca_file;                    // "" = system store
    std::shared_ptr<TlsConfig> tls_config;  // preloaded; replaces ca_file (see StreamOptions)
    bool allow_insecure_transport = false;  // http:// to a non-loopback address
    // Which proxy each request goes through (null = direct): https:// by CONNECT, http:// by an
    // absolute-form request to the proxy (docs/net.md, "Proxies").
    std::shared_ptr<const ProxyPolicy> proxy;
    HttpLimits limits;
    Duration connect_timeout = std::chrono::seconds(30);  // resolve + TCP + TLS
    Duration idle_timeout = std::chrono::seconds(60);     // no byte received for this long
    Duration total_timeout = Duration::zero();            // whole exchange; zero = no limit
};

struct HttpResponse {
    HttpHead head;
    std::string body;  // the body when no on_body handler was given (bounded by max_body)
};

// A request in flight is a loop::Step: destroying the client cancels it (on_done does not run).
class HttpClient final : public loop::Step {
  public:
    struct Handlers {
        // Optional: the head arrived. A failure aborts the request with that error.
        std::function<Status(const HttpHead&)> on_head;
        // Optional: body pieces as they arrive; when set, HttpResponse::body stays empty.
        std::function<Status(std::string_view)> on_body;
        // Exactly once per start(), unless the client is destroyed or cancel()ed first.
        std::function<void(Result<HttpResponse>)> on_done;
    };

    HttpClient(uv_loop_t* loop, loop::Scheduler& sched, HttpRequest request, HttpOptions options,
               Handlers handlers);
    ~HttpClient() override;
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    void start();
    // Drops the request; on_done does not run.
    void cancel();
    // Backpressure: stop and resume reading the body (the idle timeout is suspended meanwhile).
    void pause();
    void resume();

    class Impl;

  private:
    Impl* impl_;
};

}  // namespace myr::net
