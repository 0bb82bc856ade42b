#include "download/http_downloader.hpp"

#include <algorithm>
#include <cerrno>
#include <limits>
#include <optional>
#include <utility>

#include "core/random.hpp"
#include "core/text.hpp"
#include "download/spool.hpp"
#include "net/http_response.hpp"
#include "net/stream.hpp"
#include "net/tls.hpp"
#include "net/url_text.hpp"

namespace myr::download {
namespace {

constexpr int kMaxRedirects = 3;

bool is_redirect(int status) {
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// "HTTP 404 Not Found", or "HTTP 404" when the reason phrase is empty.
std::string http_status(int status, const std::string& reason) {
    const std::string r = text::trim(reason);
    return "HTTP " + std::to_string(status) + (r.empty() ? "" : " " + r);
}

// `e` without the "<label>: " net puts in front of its errors.
Error without_url(const Error& e, const std::string& label) {
    const std::string prefix = label + ": ";
    if (e.message().rfind(prefix, 0) != 0) return e;
    return Error(e.code(), e.message().substr(prefix.size()), e.sys_errno());
}

}  // namespace

Duration backoff_delay(int failures, Duration base, Duration cap, double unit) {
    const int shift = std::clamp(failures - 1, 0, 20);
    Duration d = base * (int64_t{1} << shift);
    if (d > cap || d < base) d = cap;
    const double scale = 0.5 + 0.5 * std::clamp(unit, 0.0, 1.0);
    return std::chrono::duration_cast<Duration>(d * scale);
}

std::optional<Error> refused_coding(const net::HttpHead& head) {
    auto coding = head.header("Content-Encoding");
    if (!coding) return std::nullopt;
    const std::string c(text::trim(*coding));
    if (c.empty() || text::iequals(c, "identity")) return std::nullopt;
    // A server that codes the body anyway (nginx `gzip_static always`, a misconfigured CDN) would
    // hand over other bytes than the artifact's: refused by name, not left to the hash check.
    return Error(Errc::refused,
                 "the server sent the body with Content-Encoding: " + text::valid_utf8(c, 40) +
                     ", although the request accepts only the identity");
}

std::vector<std::pair<std::string, std::string>> offer_headers(
    const std::vector<std::pair<std::string, std::string>>& headers) {
    // RFC 9110 7.6.1 hop-by-hop headers, and what the downloader decides itself.
    static constexpr std::string_view dropped[] = {"connection",
                                                   "keep-alive",
                                                   "proxy-connection",
                                                   "te",
                                                   "trailer",
                                                   "transfer-encoding",
                                                   "upgrade",
                                                   "proxy-authenticate",
                                                   "proxy-authorization",
                                                   "host",
                                                   "content-length",
                                                   "range",
                                                   "if-range",
                                                   "accept-encoding",
                                                   "expect"};
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& h : headers) {
        const bool drop =
            std::any_of(std::begin(dropped), std::end(dropped),
                        [&](std::string_view d) { return text::iequals(h.first, d); });
        if (!drop) out.push_back(h);
    }
    return out;
}

std::optional<ContentRange> parse_content_range(std::string_view v) {
    auto number = [](std::string_view s) -> std::optional<uint64_t> {
        if (s.empty() || s.size() > 19) return std::nullopt;
        uint64_t n = 0;
        for (char c : s) {
            if (c < '0' || c > '9') return std::nullopt;
            n = n * 10 + static_cast<uint64_t>(c - '0');
        }
        return n;
    };
    if (v.substr(0, 6) != "bytes ") return std::nullopt;
    v.remove_prefix(6);
    const size_t dash = v.find('-'), slash = v.find('/');
    if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash) {
        return std::nullopt;
    }
    auto a = number(v.substr(0, dash));
    auto b = number(v.substr(dash + 1, slash - dash - 1));
    const std::string_view t = v.substr(slash + 1);
    auto total = t == "*" ? std::optional<uint64_t>(0) : number(t);
    if (!a || !b || !total || *b < *a || (*total != 0 && *b >= *total)) return std::nullopt;
    return ContentRange{*a, *b, *total};
}

// One offer being fetched. Lifetime: owned by the installer through its Step; destroying it
// drops the connection and the timers at once. Jobs already on the work queue keep the spool
// file alive through their shared_ptr and report to nobody (guard_).
class HttpDownloader::Transfer final : public loop::Step {
  public:
    Transfer(HttpDownloader& parent, Request req, Handlers h)
        : parent_(parent),
          sched_(parent.sched_),
          opts_(parent.opts_),
          req_(std::move(req)),
          h_(std::move(h)),
          backoff_timer_(sched_.timer()),
          deadline_timer_(sched_.timer()) {}
    ~Transfer() override { guard_.drop(); }

    void start();

  private:
    // What the last response asked for, decided when it ended and carried out once every byte
    // of it is on disk.
    enum class Next { none, commit, request, restart, retry, redirect };

    // Every error this transfer ends with: "download: <cause> (<url>)", the cause first so that a
    // cut keeps it, the URL once and without its query string (url_for_messages).
    Error failure(const Error& e) const {
        return Error(e.code(), "download: " + e.message() + " (" + url_.shown() + ")",
                     e.sys_errno());
    }
    Error failure(Errc code, const std::string& cause) const { return failure(Error(code, cause)); }
    void prepare_done(Result<std::shared_ptr<SpoolFile>> r);
    void request();
    void send(std::shared_ptr<net::TlsConfig> tls);
    Status on_head(const net::HttpHead& head);
    Status room_for(uint64_t body) const;
    Error refused_by(int status, const std::string& reason) const;
    Status on_body(std::string_view piece);
    void on_response(Result<net::HttpResponse> r);
    void kick();
    void on_written(Result<uint64_t> r);
    void settle();
    void report_progress(bool force);
    // Ends with an error; `remove_part` also removes the .part first (size refusal, disk errors).
    void fail_with(Error e, bool remove_part);
    void remove_and_fail(Error e);
    void deliver(Result<Artifact> r);
    void on_deadline();

    HttpDownloader& parent_;
    loop::Scheduler& sched_;
    const DownloaderOptions& opts_;
    Request req_;
    Handlers h_;
    Url offer_;  // the URL as offered, normalised: its origin gets the offer's headers
    Url url_;    // the URL being fetched (after redirects)
    int redirects_ = 0;
    int failures_ = 0;
    std::shared_ptr<SpoolFile> file_;  // shared with the job writing to it
    std::unique_ptr<HttpFetch> client_;
    std::unique_ptr<loop::Timer> backoff_timer_;
    std::unique_ptr<loop::Timer> deadline_timer_;

    // The response being read.
    uint64_t range_from_ = 0;  // the offset asked for with Range (0 = none)
    uint64_t base_ = 0;        // file offset of the response body's first byte
    uint64_t received_ = 0;    // body bytes of this response
    uint64_t total_ = 0;       // size of the whole file when known
    bool reset_pending_ = false;
    bool resumed_ = false;  // the body continues a kept part (the last answer was a 206)
    std::optional<std::string> validator_pending_;
    std::string redirect_to_;
    Duration retry_after_{};  // from the last 5xx/429 answer's Retry-After
    Next next_ = Next::none;
    std::optional<Error> outcome_error_;  // set by on_head/on_body when they stop the response
    bool response_open_ = false;

    // Bytes between the socket and the disk.
    std::string buffer_;
    bool writing_ = false;
    bool paused_ = false;
    uint64_t on_disk_ = 0;

    // Progress.
    MonoTime last_report_{};
    uint64_t last_report_bytes_ = 0;

    bool finished_ = false;
    std::optional<Error> removal_after_write_;  // fail_with(remove) while a write was running
    loop::Guard guard_;
};

namespace {

class ClientFetch final : public HttpFetch {
  public:
    ClientFetch(uv_loop_t* loop, loop::Scheduler& sched, net::HttpRequest rq, net::HttpOptions o,
                net::HttpClient::Handlers h)
        : client_(loop, sched, std::move(rq), std::move(o), std::move(h)) {}
    void start() { client_.start(); }
    void pause() override { client_.pause(); }
    void resume() override { client_.resume(); }

  private:
    net::HttpClient client_;
};

class ClientFetcher final : public HttpFetcher {
  public:
    ClientFetcher(uv_loop_t* loop, loop::Scheduler& sched) : loop_(loop), sched_(sched) {}
    std::unique_ptr<HttpFetch> start(net::HttpRequest rq, net::HttpOptions o,
                                     net::HttpClient::Handlers h) override {
        auto f =
            std::make_unique<ClientFetch>(loop_, sched_, std::move(rq), std::move(o), std::move(h));
        f->start();
        return f;
    }

  private:
    uv_loop_t* loop_;
    loop::Scheduler& sched_;
};

}  // namespace

HttpDownloader::HttpDownloader(uv_loop_t* loop, loop::Scheduler& sched, DownloaderOptions options,
                               HttpFetcher* fetcher)
    : sched_(sched),
      opts_(std::move(options)),
      own_fetcher_(fetcher ? nullptr : std::make_unique<ClientFetcher>(loop, sched)),
      fetcher_(fetcher ? fetcher : own_fetcher_.get()) {}
HttpDownloader::~HttpDownloader() = default;

Status HttpDownloader::check_url(const std::string& url) const {
    auto checked = check_download_url(url, opts_.policy);
    if (!checked) return checked.fail();
    return {};
}

std::unique_ptr<loop::Step> HttpDownloader::fetch(Request request, Handlers handlers) {
    auto t = std::make_unique<Transfer>(*this, std::move(request), std::move(handlers));
    t->start();
    return t;
}

void HttpDownloader::with_tls(std::function<void(Result<std::shared_ptr<net::TlsConfig>>)> cb) {
    if (tls_) {
        cb(tls_);
        return;
    }
    tls_waiters_.push_back(std::move(cb));
    if (tls_loading_) return;
    tls_loading_ = true;
    net::load_tls_client(sched_, opts_.ca_file,
                         guard_.bind([this](Result<std::shared_ptr<net::TlsConfig>> r) {
                             tls_loading_ = false;
                             if (r) tls_ = *r;
                             auto waiters = std::move(tls_waiters_);
                             tls_waiters_.clear();
                             for (auto& w : waiters) w(r);
                         }));
}

void HttpDownloader::Transfer::start() {
    last_report_ = sched_.now();
    auto checked = check_download_url(req_.url, opts_.policy);
    if (!checked) {
        sched_.post(
            guard_.bind([this, e = checked.error()] { deliver(fail(e.context("download"))); }));
        return;
    }
    offer_ = url_ = *checked;
    if (!valid_content_hash(req_.content_hash_hex)) {
        sched_.post(guard_.bind([this] {
            deliver(fail(failure(Errc::invalid, "content hash \"" + req_.content_hash_hex +
                                                    "\" is not 64 lower-case hex digits")));
        }));
        return;
    }
    if (opts_.deadline.count() > 0)
        deadline_timer_->start(opts_.deadline, [this] { on_deadline(); });
    auto slot = std::make_shared<std::optional<Result<std::shared_ptr<SpoolFile>>>>();
    sched_.post_work([slot, dir = opts_.state_dir,
                      hex = req_.content_hash_hex] { slot->emplace(SpoolFile::open(dir, hex)); },
                     guard_.bind([this, slot](bool cancelled) {
                         if (cancelled || !*slot) {
                             deliver(fail(failure(Errc::cancelled, "cancelled")));
                             return;
                         }
                         prepare_done(std::move(**slot));
                     }));
}

void HttpDownloader::Transfer::prepare_done(Result<std::shared_ptr<SpoolFile>> r) {
    if (!r) {
        deliver(fail(failure(r.error())));
        return;
    }
    file_ = std::move(*r);
    if (file_->complete()) {
        deliver(*file_->complete());
        return;
    }
    if (req_.fresh && file_->size() > 0) {
        if (auto st = file_->truncate(); !st) {
            deliver(fail(failure(st.error())));
            return;
        }
    }
    on_disk_ = file_->size();
    last_report_bytes_ = on_disk_;
    request();
}

void HttpDownloader::Transfer::request() {
    if (url_.scheme != "https") {
        send(nullptr);
        return;
    }
    // The TLS configuration comes from the downloader's cache, parsed off the loop once.
    parent_.with_tls(guard_.bind([this](Result<std::shared_ptr<net::TlsConfig>> tls) {
        if (!tls) {
            fail_with(tls.error(), false);
            return;
        }
        send(*tls);
    }));
}

void HttpDownloader::Transfer::send(std::shared_ptr<net::TlsConfig> tls) {
    net::HttpOptions o;
    o.tls_config = std::move(tls);
    o.ca_file = opts_.ca_file;
    o.allow_insecure_transport = opts_.allow_insecure_transport;
    o.proxy = opts_.proxy;
    o.connect_timeout = opts_.connect_timeout;
    o.idle_timeout = opts_.stall_timeout;
    o.limits.max_body = std::numeric_limits<uint64_t>::max();  // capped in on_body
    net::HttpRequest rq;
    rq.url = url_;
    // The offer's headers (a bearer token, say) go to the offer's origin only.
    if (same_origin(url_, offer_)) rq.headers = offer_headers(req_.headers);
    // Without Accept-Encoding any content coding is acceptable (RFC 9110 12.5.3); the artifact's
    // hash is over its bytes as stored, so only the identity is.
    rq.headers.emplace_back("Accept-Encoding", "identity");
    range_from_ = 0;
    if (file_->size() > 0 && !file_->validator().empty()) {
        range_from_ = file_->size();
        rq.headers.emplace_back("Range", "bytes=" + std::to_string(range_from_) + "-");
        rq.headers.emplace_back("If-Range", file_->validator());
    }
    net::HttpClient::Handlers ch;
    ch.on_head = [this](const net::HttpHead& h) { return on_head(h); };
    ch.on_body = [this](std::string_view p) { return on_body(p); };
    // The client may not be destroyed inside its own handler: its answer is taken on a later
    // turn.
    ch.on_done = [this](Result<net::HttpResponse> res) {
        sched_.post(
            guard_.bind([this, res = std::move(res)]() mutable { on_response(std::move(res)); }));
    };
    received_ = 0;
    base_ = 0;
    next_ = Next::none;
    outcome_error_.reset();
    response_open_ = true;
    client_ = parent_.fetcher_->start(std::move(rq), std::move(o), std::move(ch));
}

// Room first, from the response's Content-Length, before a byte of the body is written: the body
// plus what the install still needs on the same filesystem (Request::reserve) against the spool's
// room (a part that a 200 replaces is counted as free). The error carries ENOSPC, as the write
// that would have failed: the installer counts it transient, and the part is removed.
Status HttpDownloader::Transfer::room_for(uint64_t body) const {
    auto sp = file_->space();
    if (!sp) return {};  // unknown: the writes will tell
    const uint64_t have = sp->available + (reset_pending_ ? file_->size() : 0);
    const uint64_t need = body + req_.reserve;
    if (have >= need) return {};
    return fail(Error(Errc::refused, "not enough space on " + file_->dir_path() + ": need " +
                                         std::to_string(need) + ", have " + std::to_string(have)));
}

// A plain http:// request through a forward proxy is answered by the proxy itself when it
// refuses (407, an ACL's 403): the answer names it, so that the operator looks at the proxy and
// not at the artifact server. A 407 is always the proxy's; another 4xx may be either's.
Error HttpDownloader::Transfer::refused_by(int status, const std::string& reason) const {
    std::string what = http_status(status, reason);
    std::optional<net::ProxyHop> hop;
    if (opts_.proxy && url_.scheme == "http") {
        if (auto r = opts_.proxy->route(url_)) hop = *r;
    }
    if (hop && status == 407) {
        what = "the proxy " + hop->label + " refused the request: " + what +
               " (network.proxy credentials)";
    } else if (hop) {
        what += " (from the proxy " + hop->label + " or the server behind it)";
    }
    return Error(Errc::refused, what);
}

Status HttpDownloader::Transfer::on_head(const net::HttpHead& head) {
    // Returning a failure stops the response; on_response then acts on next_.
    auto stop = [this](Next n, std::optional<Error> e = std::nullopt) -> Status {
        next_ = n;
        outcome_error_ = std::move(e);
        return fail(Errc::cancelled, "stopped");
    };
    const int st = head.status;
    if (is_redirect(st)) {
        auto loc = head.header("Location");
        if (!loc) {
            return stop(Next::none, Error(Errc::network, "HTTP " + std::to_string(st) +
                                                             " without a Location header"));
        }
        redirect_to_ = resolve_location(url_, *loc);
        return stop(Next::redirect);
    }
    // Without a Range sent, neither 416 nor 206 can mean "start from zero": that would ask the
    // same again for ever. It is a server fault, retried within the budget of tries.
    if (st == 416 && range_from_ == 0) {
        return stop(Next::retry, Error(Errc::network, "HTTP 416 without a Range"));
    }
    if (st == 416) return stop(Next::restart);
    // 408 (the server timed the request out) is the link's fault as much as a 5xx is.
    if (st >= 500 || st == 429 || st == 408) {
        // The server's Retry-After is honoured up to backoff_max, never below the backoff.
        retry_after_ = Duration::zero();
        if (auto ra = head.header("Retry-After")) {
            retry_after_ = net::parse_retry_after(*ra, sched_.wall()).value_or(Duration::zero());
        }
        return stop(Next::retry, Error(Errc::network, http_status(st, head.reason)));
    }
    // Any other answer is the request refused (404, 403, 407, …): the same request gets the same
    // answer, so it is not tried again, but it says nothing against the package's bytes (an
    // expired presigned URL, a proxy's password, a list to fix): `refused`, ended at once and
    // not quarantined (docs/update.md, "Failure classes").
    if (st != 200 && st != 206) return stop(Next::none, refused_by(st, head.reason));
    if (auto coding = refused_coding(head)) return stop(Next::none, std::move(*coding));
    std::optional<uint64_t> length;
    if (auto cl = head.header("Content-Length")) {
        const std::string s(*cl);
        if (!s.empty() && s.size() <= 19 &&
            s.find_first_not_of("0123456789") == std::string::npos) {
            length = std::stoull(s);
        }
    }
    if (st == 206) {
        auto cr = head.header("Content-Range");
        auto range = cr ? parse_content_range(*cr) : std::nullopt;
        if (range_from_ == 0) {
            return stop(Next::retry, Error(Errc::network, "HTTP 206 without a Range"));
        }
        // Other bytes than asked (or no readable Content-Range): start from zero.
        if (!range || range->first != range_from_) return stop(Next::restart);
        base_ = range_from_;
        total_ = range->total;
        resumed_ = true;
    } else {
        // 200: the whole file. After a Range request that means the kept part is stale.
        base_ = 0;
        total_ = length.value_or(0);
        resumed_ = false;
        if (file_->size() > 0) reset_pending_ = true;
    }
    const uint64_t end = length ? base_ + *length : total_;
    if (end > req_.max_size) {
        return stop(Next::none,
                    Error(Errc::refused, "the artifact is " + std::to_string(end) +
                                             " bytes, over update.maxArtifactSize (" +
                                             std::to_string(req_.max_size) + " bytes)"));
    }
    if (length) {
        if (auto room = room_for(*length); !room) return stop(Next::none, room.error());
    }
    // If-Range needs a strong validator: a weak ETag is never sent back, Last-Modified is.
    std::string validator;
    auto etag = head.header("ETag");
    if (etag && etag->substr(0, 2) != "W/") {
        validator = std::string(*etag);
    } else if (auto lm = head.header("Last-Modified")) {
        validator = std::string(*lm);
    }
    if (!validator.empty() && !valid_validator(validator)) validator.clear();  // not resumable
    if (reset_pending_ || validator != file_->validator()) validator_pending_ = validator;
    return {};
}

Status HttpDownloader::Transfer::on_body(std::string_view piece) {
    received_ += piece.size();
    if (base_ + received_ > req_.max_size) {
        next_ = Next::none;
        outcome_error_ = Error(Errc::refused, "the body grew past update.maxArtifactSize (" +
                                                  std::to_string(req_.max_size) + " bytes)");
        return fail(Errc::cancelled, "stopped");
    }
    buffer_.append(piece);
    if (writing_ && buffer_.size() >= opts_.buffer_bytes && !paused_) {
        paused_ = true;
        client_->pause();
    }
    kick();
    return {};
}

void HttpDownloader::Transfer::kick() {
    if (writing_ || finished_) return;
    if (buffer_.empty() && !reset_pending_ && !validator_pending_) return;
    writing_ = true;
    auto slot = std::make_shared<std::optional<Result<uint64_t>>>();
    std::string data;
    data.swap(buffer_);
    std::optional<std::string> validator = std::move(validator_pending_);
    validator_pending_.reset();
    const bool reset = std::exchange(reset_pending_, false);
    sched_.post_work(
        [slot, file = file_, data = std::move(data), validator = std::move(validator), reset] {
            auto run = [&]() -> Result<uint64_t> {
                if (reset) MYR_TRY(file->truncate(), "restart from zero");
                if (validator) MYR_TRY(file->set_validator(*validator), "store validator");
                if (!data.empty()) MYR_TRY(file->append(data), "spool");
                return file->size();
            };
            slot->emplace(run());
        },
        guard_.bind([this, slot](bool cancelled) {
            writing_ = false;
            if (removal_after_write_) {
                remove_and_fail(*std::exchange(removal_after_write_, std::nullopt));
                return;
            }
            if (cancelled || !*slot) {
                fail_with(Error(Errc::cancelled, "cancelled"), false);
                return;
            }
            on_written(std::move(**slot));
        }));
}

void HttpDownloader::Transfer::on_written(Result<uint64_t> r) {
    if (finished_) return;
    if (!r) {
        // Disk failures end this fetch at once: retrying now would fill the disk again. The
        // installer retries an ENOSPC later (update/retry.hpp), when room may have been made.
        fail_with(r.error(), true);
        return;
    }
    on_disk_ = *r;
    report_progress(false);
    // The next write takes the buffer first, so reading resumes while it runs.
    kick();
    if (paused_ && buffer_.size() < opts_.buffer_bytes) {
        paused_ = false;
        if (client_) client_->resume();
    }
    settle();
}

void HttpDownloader::Transfer::on_response(Result<net::HttpResponse> r) {
    if (finished_) return;
    response_open_ = false;
    paused_ = false;
    if (r) {
        next_ = Next::commit;
    } else if (next_ == Next::none && !outcome_error_) {
        // The connection failed, dropped or stalled: worth another try. What our own rules or
        // the proxy refused (Errc::refused) gets the same answer again: it ends the fetch.
        next_ = r.error().code() == Errc::refused ? Next::none : Next::retry;
        // net names the URL first (url_label); the transfer's failure() names it once, last.
        outcome_error_ = without_url(r.error(), net::url_label(url_));
        if (next_ == Next::none) {
            fail_with(*outcome_error_, false);  // nothing was answered: the part stays good
            return;
        }
    }
    if (next_ == Next::none) {
        // The response refused (over the size cap or the room, a 4xx): the part is of no use to
        // a later fetch, as after a write that hit ENOSPC.
        const bool refused = outcome_error_ && (outcome_error_->code() == Errc::invalid ||
                                                outcome_error_->code() == Errc::refused ||
                                                outcome_error_->sys_errno() == ENOSPC);
        fail_with(*outcome_error_, refused);
        return;
    }
    settle();
}

void HttpDownloader::Transfer::settle() {
    if (finished_ || response_open_ || writing_) return;
    if (!buffer_.empty() || reset_pending_ || validator_pending_) {
        kick();
        return;
    }
    client_.reset();
    const Next n = std::exchange(next_, Next::none);
    switch (n) {
        case Next::none:
            return;
        case Next::commit: {
            finished_ = true;
            auto slot = std::make_shared<std::optional<Result<Artifact>>>();
            sched_.post_work([slot, file = file_] { slot->emplace(file->commit()); },
                             guard_.bind([this, slot](bool cancelled) {
                                 finished_ = false;
                                 if (cancelled || !*slot) {
                                     deliver(fail(failure(Errc::cancelled, "cancelled")));
                                     return;
                                 }
                                 if (!**slot) {
                                     fail_with((*slot)->error(), true);
                                     return;
                                 }
                                 Artifact a = std::move(***slot);
                                 a.resumed = resumed_;
                                 deliver(std::move(a));
                             }));
            return;
        }
        case Next::restart:
            // The server cannot continue the kept part: truncate it, then ask for the whole file.
            reset_pending_ = true;
            next_ = Next::request;
            kick();
            return;
        case Next::request:
            request();
            return;
        case Next::redirect: {
            if (++redirects_ > kMaxRedirects) {
                fail_with(Error(Errc::refused,
                                "more than " + std::to_string(kMaxRedirects) + " redirects"),
                          false);
                return;
            }
            auto target = check_download_url(redirect_to_, opts_.policy);
            if (!target) {
                fail_with(target.error().context("redirect"), false);
                return;
            }
            url_ = *target;
            request();
            return;
        }
        case Next::retry: {
            ++failures_;
            if (failures_ >= opts_.max_tries) {
                const Error& e = *outcome_error_;
                fail_with(
                    Error(e.code(), e.message() + ", after " + std::to_string(failures_) + " tries",
                          e.sys_errno()),
                    false);
                return;
            }
            // Each try starts at the offered URL again with its own 3 redirects: a CDN that
            // redirects every request to a fresh signed URL must not use up the offer's budget.
            url_ = offer_;
            redirects_ = 0;
            const Duration wait = std::max(
                backoff_delay(failures_, opts_.backoff_base, opts_.backoff_max, random_unit()),
                std::min(std::exchange(retry_after_, Duration::zero()), opts_.backoff_max));
            backoff_timer_->start(wait, [this] { request(); });
            return;
        }
    }
}

void HttpDownloader::Transfer::report_progress(bool force) {
    const MonoTime now = sched_.now();
    const Duration since = std::chrono::duration_cast<Duration>(now - last_report_);
    if (!h_.on_progress || (!force && since < opts_.progress_interval)) return;
    Progress p;
    p.bytes = on_disk_;
    p.total = total_;
    if (total_ > 0) p.percent = 100.0 * static_cast<double>(on_disk_) / static_cast<double>(total_);
    const double secs = std::chrono::duration<double>(since).count();
    if (secs > 0 && on_disk_ >= last_report_bytes_) {
        p.bytes_per_second = static_cast<double>(on_disk_ - last_report_bytes_) / secs;
    }
    last_report_ = now;
    last_report_bytes_ = on_disk_;
    auto cb = h_.on_progress;
    cb(p);
}

void HttpDownloader::Transfer::fail_with(Error cause, bool remove_part) {
    if (finished_) return;
    Error e = failure(cause);
    finished_ = true;
    client_.reset();
    backoff_timer_->stop();
    deadline_timer_->stop();
    buffer_.clear();
    if (!remove_part || !file_) {
        // on_done always on a later turn, never from inside a handler of ours.
        sched_.post(guard_.bind([this, e = std::move(e)] { deliver(fail(e)); }));
        return;
    }
    // One job at a time on the file: a write still running finishes first (jobs run on
    // different pool threads, and the part must not be removed under a write).
    if (writing_) {
        removal_after_write_ = std::move(e);
        return;
    }
    remove_and_fail(std::move(e));
}

void HttpDownloader::Transfer::remove_and_fail(Error e) {
    // The error is reported once the part is gone, so the caller never sees it half there.
    sched_.post_work([file = file_] { file->remove(); },
                     guard_.bind([this, e = std::move(e)](bool) { deliver(fail(e)); }));
}

// A server that drips (a byte a second is never a stall) or a link too slow for the artifact:
// the offer ends here whatever the tries left. Errc::timeout marks it transient (it may pass
// another time); the part is kept, as after a cut.
void HttpDownloader::Transfer::on_deadline() {
    const uint64_t bytes = on_disk_ + buffer_.size();
    fail_with(
        Error(Errc::timeout, "exceeded update.downloadTimeout (" + format_duration(opts_.deadline) +
                                 ") after " + std::to_string(bytes) + " bytes"),
        false);
}

void HttpDownloader::Transfer::deliver(Result<Artifact> r) {
    finished_ = true;
    client_.reset();
    backoff_timer_->stop();
    deadline_timer_->stop();
    guard_.drop();
    if (auto cb = h_.on_done) cb(std::move(r));
}

}  // namespace myr::download
