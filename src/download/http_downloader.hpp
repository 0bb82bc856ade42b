// The real Downloader: HTTP(S) over net::HttpClient into the spool (docs/download.md).
//
// One offer, one Transfer:
//   prepare (work queue: open the spool, drop other offers' files, cut a kept part back to its
//            last sync and re-hash it)
//   → request (Range/If-Range when a part and its validator are kept)
//   → head: 3xx → policy check of the target → request again (at most 3 redirects)
//           200 → (after a Range: start from zero) / 206 at the right offset → body
//           206 at a wrong offset or 416 → start from zero; 5xx → retry; other → fail
//   → body pieces into one bounded buffer, written (and hashed) on the work queue one job at a
//     time; the socket is paused while a write is pending and the buffer is full
//   → end: dropped connection, stall (no byte for stall_timeout) → retry with backoff and jitter,
//     at most max_tries requests that fail in total
//   → over all of it, the deadline (update.downloadTimeout): a drip that is never a stall ends
//   → commit (work queue: fsync, rename, fsync dir) → on_done.
// The Downloader must outlive its Downloads. Two Downloads of the same hash at once are not
// supported (the installer runs one offer at a time).
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "download/downloader.hpp"
#include "download/url_policy.hpp"
#include "loop/scheduler.hpp"
#include "loop/step.hpp"
#include "net/http_client.hpp"
#include "statedir/state_dir.hpp"

namespace myr::download {

struct DownloaderOptions {
    statedir::StateDir state_dir;  // holds the spool
    UrlPolicy policy;
    std::string ca_file;                    // server.caFile; "" = system store
    bool allow_insecure_transport = false;  // server.allowInsecureTransport
    // network.proxy or the environment; asked again for every request, redirects included.
    std::shared_ptr<const net::ProxyPolicy> proxy;
    Duration stall_timeout = std::chrono::seconds(60);
    Duration connect_timeout = std::chrono::seconds(30);
    int max_tries = 5;  // requests per offer that may fail before the offer fails
    Duration backoff_base = std::chrono::seconds(1);
    Duration backoff_max = std::chrono::seconds(30);
    Duration progress_interval = std::chrono::seconds(2);
    // The whole of one offer's download, retries and backoff waits included
    // (update.downloadTimeout); past it the download ends with Errc::timeout, its part kept. Zero:
    // no deadline.
    Duration deadline{0};
    // Received bytes waiting for the disk: past this the socket is paused. With one write in
    // flight, a download holds at most 2 × this plus one socket read (64 KiB) of body bytes.
    size_t buffer_bytes = 256u << 10;
};

// The wait before retry number `failures` (1 = after the first failure): base·2^(failures-1)
// capped at `cap`, then scaled into [½, 1] by `unit` (uniform in [0, 1)) so that many updaters
// cut off at once do not come back in step.
Duration backoff_delay(int failures, Duration base, Duration cap, double unit);

// The offer's headers as sent: without hop-by-hop headers, Host, Content-Length, Range, If-Range
// and Accept-Encoding (the downloader sets those itself; Accept-Encoding is always `identity`).
std::vector<std::pair<std::string, std::string>> offer_headers(
    const std::vector<std::pair<std::string, std::string>>& headers);

// The refusal of an answer whose Content-Encoding is not the identity (the body would not be the
// artifact's bytes); nullopt for none or `identity`.
std::optional<Error> refused_coding(const net::HttpHead& head);

// "bytes A-B/T" or "bytes A-B/*": A, and T (0 when "*"). nullopt when malformed.
struct ContentRange {
    uint64_t first = 0;
    uint64_t last = 0;
    uint64_t total = 0;
};
std::optional<ContentRange> parse_content_range(std::string_view value);

// One HTTP request as the downloader sees it: net::HttpClient in the product, a script in the
// unit tests (so retries, backoff, progress and back-pressure run on FakeScheduler). A step with
// back-pressure: destroying it drops the request; no handler runs afterwards.
class HttpFetch : public loop::Step {
  public:
    virtual void pause() = 0;
    virtual void resume() = 0;
};

class HttpFetcher {
  public:
    virtual ~HttpFetcher() = default;
    // Starts the request; handlers as net::HttpClient's (on_done never from inside start()).
    [[nodiscard]] virtual std::unique_ptr<HttpFetch> start(net::HttpRequest request,
                                                           net::HttpOptions options,
                                                           net::HttpClient::Handlers handlers) = 0;
};

class HttpDownloader final : public Downloader {
  public:
    // `fetcher` null: requests go through net::HttpClient on `loop` (the product).
    HttpDownloader(uv_loop_t* loop, loop::Scheduler& sched, DownloaderOptions options,
                   HttpFetcher* fetcher = nullptr);
    ~HttpDownloader() override;
    HttpDownloader(const HttpDownloader&) = delete;
    HttpDownloader& operator=(const HttpDownloader&) = delete;

    [[nodiscard]] Status check_url(const std::string& url) const override;
    [[nodiscard]] std::unique_ptr<loop::Step> fetch(Request request, Handlers handlers) override;

    class Transfer;

  private:
    friend class Transfer;
    // The client TLS configuration, parsed once on the work queue and then shared (cached after
    // the first success; a failure is retried by the next request).
    void with_tls(std::function<void(Result<std::shared_ptr<net::TlsConfig>>)> cb);

    loop::Scheduler& sched_;
    DownloaderOptions opts_;
    std::unique_ptr<HttpFetcher> own_fetcher_;  // the net::HttpClient one, unless given
    HttpFetcher* fetcher_;
    std::shared_ptr<net::TlsConfig> tls_;
    bool tls_loading_ = false;
    std::vector<std::function<void(Result<std::shared_ptr<net::TlsConfig>>)>> tls_waiters_;
    loop::Guard guard_;
};

}  // namespace myr::download
