// The downloader's decisions on FakeScheduler with a scripted HTTP fetcher: backoff between tries,
// the limit of tries, progress at most every 2 s, the socket paused while the disk is behind, the
// timeouts handed to the client, and what each answer does to the kept part. Real files in a
// temporary spool; time moves only when the test says so.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <uv.h>

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "download/http_downloader.hpp"
#include "harness.hpp"
#include "hash/sha256.hpp"
#include "loop/fake_scheduler.hpp"
#include "net/tls.hpp"

using namespace myr;
using namespace myr::download;
using namespace std::chrono_literals;

namespace {

// One scripted request: the test answers it through head()/body()/end().
struct FakeFetch final : HttpFetch {
    net::HttpRequest request;
    net::HttpOptions options;
    net::HttpClient::Handlers h;
    bool paused = false;
    bool gone = false;
    bool* alive = nullptr;
    void pause() override { paused = true; }
    void resume() override { paused = false; }
    ~FakeFetch() override {
        if (alive) *alive = false;
    }

    std::string header(const std::string& name) const {
        for (const auto& [k, v] : request.headers) {
            if (k == name) return v;
        }
        return "";
    }
};

class FakeFetcher final : public HttpFetcher {
  public:
    std::unique_ptr<HttpFetch> start(net::HttpRequest rq, net::HttpOptions o,
                                     net::HttpClient::Handlers h) override {
        auto f = std::make_unique<FakeFetch>();
        f->request = std::move(rq);
        f->options = std::move(o);
        f->h = std::move(h);
        live_.push_back(true);
        f->alive = &live_.back();
        current = f.get();
        ++started;
        return f;
    }
    // Answers the current request; returns the status of the handler (a refusal stops it).
    Status head(int status, std::vector<std::pair<std::string, std::string>> headers,
                std::string reason = "") {
        net::HttpHead hd;
        hd.status = status;
        hd.reason = std::move(reason);
        hd.headers = std::move(headers);
        return current->h.on_head(hd);
    }
    Status body(std::string_view piece) { return current->h.on_body(piece); }
    void end(Result<net::HttpResponse> r) { current->h.on_done(std::move(r)); }
    void end_ok() { end(net::HttpResponse{}); }
    void drop() { end(fail(Errc::network, "connection reset by peer")); }
    bool current_alive() const { return !live_.empty() && live_.back(); }

    FakeFetch* current = nullptr;
    int started = 0;

  private:
    std::deque<bool> live_;
};

std::string hex_of(const std::string& data) {
    return hash::to_hex(hash::sha256(data));
}

struct Rig {
    test::TempDir state;
    uv_loop_t uv;
    loop::FakeScheduler sched;
    FakeFetcher fetcher;
    std::unique_ptr<HttpDownloader> dl;
    std::optional<Result<Artifact>> done;
    std::vector<std::pair<MonoTime, Progress>> progress;
    std::unique_ptr<loop::Step> d;
    std::string scheme_;

    // Plain http unless told: TLS would need the system CA store, which a unit test must not.
    explicit Rig(DownloaderOptions o = {}, std::string scheme = "http") : scheme_(scheme) {
        REQUIRE(uv_loop_init(&uv) == 0);
        o.state_dir = statedir::StateDir::open(state.path()).value();
        o.policy.prefixes = {Url{scheme, "h", default_port(scheme), "/artifacts/"}};
        o.policy.allow_plain_http = true;
        dl = std::make_unique<HttpDownloader>(&uv, sched, o, &fetcher);
    }
    ~Rig() {
        d.reset();
        dl.reset();
        CHECK(uv_loop_close(&uv) == 0);
    }
    void start(const std::string& data, uint64_t max = 1u << 20,
               std::vector<std::pair<std::string, std::string>> headers = {},
               const std::string& query = "") {
        Downloader::Handlers h;
        h.on_progress = [this](const Progress& p) { progress.emplace_back(sched.now(), p); };
        h.on_done = [this](Result<Artifact> r) { done.emplace(std::move(r)); };
        d = dl->fetch(Request{scheme_ + "://h/artifacts/a.bin" + query, std::move(headers),
                              hex_of(data), max},
                      h);
        sched.run_pending();  // spool prepared, TLS loaded, first request started
    }
    std::string part(const std::string& data) const {
        return state.path() + "/spool/" + hex_of(data) + ".part";
    }
};

// The try in flight answers 200 with the whole of `data`; the download completes.
void serves_whole(Rig& rig, const std::string& data) {
    REQUIRE(rig.fetcher.head(200, {{"Content-Length", std::to_string(data.size())}}).ok());
    REQUIRE(rig.fetcher.body(data).ok());
    rig.fetcher.end_ok();
    rig.sched.run_pending();
    REQUIRE(rig.done);
    CHECK(rig.done->ok());
}

}  // namespace

TEST_CASE("transfer: a dropped connection is retried after the backoff; 5 failures end the offer") {
    DownloaderOptions o;
    o.backoff_base = 1s;
    o.backoff_max = 30s;
    Rig rig(o);
    const std::string data = "0123456789";
    rig.start(data);
    REQUIRE(rig.fetcher.started == 1);
    for (int failure = 1; failure <= 4; ++failure) {
        CAPTURE(failure);
        rig.fetcher.drop();
        rig.sched.run_pending();
        CHECK(rig.fetcher.started == failure);
        // The wait is base·2^(failure-1), scaled into [1/2, 1].
        const Duration full = std::chrono::seconds(1 << (failure - 1));
        rig.sched.advance(full / 2 - 1ms);
        CHECK(rig.fetcher.started == failure);
        rig.sched.advance(full / 2 + 1ms);
        CHECK(rig.fetcher.started == failure + 1);
        CHECK(!rig.done);
    }
    rig.fetcher.drop();
    rig.sched.run_pending();
    REQUIRE(rig.done);
    REQUIRE(!rig.done->ok());
    CHECK(rig.done->error().code() == Errc::network);
    CHECK(rig.done->error().message() ==
          "download: connection reset by peer, after 5 tries (http://h/artifacts/a.bin)");
    rig.sched.advance(60s);
    CHECK(rig.fetcher.started == 5);
}

TEST_CASE("transfer: the client gets the stall and connect timeouts and the offer's headers") {
    if (!test::exists(net::system_ca_file))
        MYR_SKIP("no system CA store at " << net::system_ca_file);
    Rig rig({}, "https");
    const std::string data = "abc";
    rig.start(data, 100, {{"Authorization", "Bearer t"}, {"Connection", "keep-alive"}});
    const FakeFetch& f = *rig.fetcher.current;
    CHECK(f.options.idle_timeout == 60s);
    CHECK(f.options.connect_timeout == 30s);
    CHECK(f.options.tls_config != nullptr);  // parsed once, off the loop
    CHECK(f.request.url.str() == "https://h/artifacts/a.bin");
    CHECK(f.header("Authorization") == "Bearer t");
    CHECK(f.header("Connection") == "");
    CHECK(f.header("Range") == "");
    CHECK(f.header("Accept-Encoding") == "identity");  // RFC 9110 12.5.3: else anything goes
    // The retry connects with the very configuration parsed for the first request.
    const auto first_tls = f.options.tls_config;
    rig.fetcher.drop();
    rig.sched.advance(2s);
    REQUIRE(rig.fetcher.started == 2);
    CHECK(rig.fetcher.current->options.tls_config == first_tls);
}

TEST_CASE("transfer: progress comes at most every 2 s, with bytes, total, percent and rate") {
    Rig rig;
    const std::string data(1000, 'x');
    rig.start(data);
    REQUIRE(rig.fetcher.head(200, {{"Content-Length", "1000"}, {"ETag", "\"e\""}}).ok());
    for (int i = 0; i < 10; ++i) {
        REQUIRE(rig.fetcher.body(std::string(100, 'x')).ok());
        rig.sched.run_pending();  // written
        rig.sched.advance(500ms);
    }
    rig.fetcher.end_ok();
    rig.sched.run_pending();
    REQUIRE(rig.done);
    REQUIRE(rig.done->ok());
    CHECK((*rig.done)->sha256_hex == hex_of(data));
    // Bytes reached the disk at 0, 0.5, …, 4.5 s: reports at 2 s and 4 s only.
    REQUIRE(rig.progress.size() == 2);
    CHECK(rig.progress[1].first - rig.progress[0].first == 2s);
    const Progress& p = rig.progress[0].second;
    CHECK(p.bytes == 500);
    CHECK(p.total == 1000);
    CHECK(p.percent == doctest::Approx(50.0));
    CHECK(p.bytes_per_second == doctest::Approx(250.0));  // 500 bytes in the first 2 s
    CHECK(rig.progress[1].second.bytes == 900);
}

TEST_CASE("transfer: the socket pauses while a write is pending and the buffer is full") {
    DownloaderOptions o;
    o.buffer_bytes = 8;
    Rig rig(o);
    const std::string data = "aaaabbbbccccdddd";
    rig.start(data);
    REQUIRE(rig.fetcher.head(200, {{"Content-Length", "16"}}).ok());
    REQUIRE(rig.fetcher.body("aaaa").ok());  // handed to a write job at once
    CHECK(!rig.fetcher.current->paused);
    REQUIRE(rig.fetcher.body("bbbb").ok());  // buffered: 4 of 8
    CHECK(!rig.fetcher.current->paused);
    REQUIRE(rig.fetcher.body("cccc").ok());  // buffered: 8 of 8, the write still pending
    CHECK(rig.fetcher.current->paused);
    CHECK(rig.sched.queued_work() == 1);  // one job at a time
    rig.sched.run_pending();              // the write ends, the next takes the buffer
    CHECK(!rig.fetcher.current->paused);
    REQUIRE(rig.fetcher.body("dddd").ok());
    rig.fetcher.end_ok();
    rig.sched.run_pending();
    REQUIRE(rig.done);
    REQUIRE(rig.done->ok());
    CHECK((*rig.done)->sha256_hex == hex_of(data));
    CHECK(test::read_file((*rig.done)->path) == data);
}

TEST_CASE("transfer: a cut body resumes with Range and If-Range; 200 then starts from zero") {
    Rig rig;
    const std::string data = "0123456789";
    rig.start(data);
    REQUIRE(rig.fetcher.head(200, {{"Content-Length", "10"}, {"ETag", "\"v1\""}}).ok());
    REQUIRE(rig.fetcher.body("01234").ok());
    rig.fetcher.drop();
    rig.sched.run_pending();
    CHECK(test::read_file(rig.part(data)) == "01234");
    CHECK(test::read_file(rig.part(data) + ".meta") == "synced=0\nvalidator=\"v1\"\n");
    rig.sched.advance(2s);
    REQUIRE(rig.fetcher.started == 2);
    CHECK(rig.fetcher.current->header("Range") == "bytes=5-");
    CHECK(rig.fetcher.current->header("If-Range") == "\"v1\"");
    // The file changed: the server answers 200 with the whole new file.
    REQUIRE(rig.fetcher.head(200, {{"Content-Length", "10"}, {"ETag", "\"v2\""}}).ok());
    REQUIRE(rig.fetcher.body(data).ok());
    rig.fetcher.end_ok();
    rig.sched.run_pending();
    REQUIRE(rig.done);
    REQUIRE(rig.done->ok());
    CHECK(test::read_file((*rig.done)->path) == data);
    CHECK((*rig.done)->sha256_hex == hex_of(data));
}

TEST_CASE("transfer: a 206 at the wrong offset restarts from zero without a Range") {
    Rig rig;
    const std::string data = "0123456789";
    rig.start(data);
    REQUIRE(rig.fetcher.head(200, {{"Content-Length", "10"}, {"ETag", "\"v1\""}}).ok());
    REQUIRE(rig.fetcher.body("0123").ok());
    rig.fetcher.drop();
    rig.sched.advance(2s);
    REQUIRE(rig.fetcher.started == 2);
    CHECK(!rig.fetcher.head(206, {{"Content-Range", "bytes 0-9/10"}, {"ETag", "\"v1\""}}).ok());
    rig.fetcher.end(fail(Errc::cancelled, "stopped"));
    rig.sched.run_pending();
    REQUIRE(rig.fetcher.started == 3);  // at once: a restart is no failure
    CHECK(rig.fetcher.current->header("Range") == "");
    CHECK(test::read_file(rig.part(data)).empty());
    // And a 206 to that request without Range is a server fault, not another restart.
    CHECK(!rig.fetcher.head(206, {{"Content-Range", "bytes 0-9/10"}}).ok());
    rig.fetcher.end(fail(Errc::cancelled, "stopped"));
    rig.sched.run_pending();
    CHECK(rig.fetcher.started == 3);
    CHECK(!rig.done);
}

TEST_CASE("transfer: Content-Length over the cap is refused before the body, the part removed") {
    Rig rig;
    const std::string data = "0123456789";
    rig.start(data, 9);
    auto st = rig.fetcher.head(200, {{"Content-Length", "10"}});
    CHECK(!st.ok());
    rig.fetcher.end(fail(Errc::cancelled, "stopped"));
    rig.sched.run_pending();
    REQUIRE(rig.done);
    REQUIRE(!rig.done->ok());
    CHECK(rig.done->error().code() == Errc::refused);
    CHECK(rig.done->error().message() ==
          "download: the artifact is 10 bytes, over update.maxArtifactSize (9 bytes) "
          "(http://h/artifacts/a.bin)");
    CHECK(!test::exists(rig.part(data)));
    CHECK(rig.fetcher.started == 1);
}

TEST_CASE("transfer: a 404 is named first, the URL once and without its query string") {
    Rig rig;
    const std::string query = "?X-Amz-Credential=AKIA&X-Amz-Signature=" + std::string(400, 'f');
    rig.start("data", 1u << 20, {}, query);
    CHECK(rig.fetcher.current->request.url.path == "/artifacts/a.bin" + query);
    CHECK(!rig.fetcher.head(404, {}, "Not Found").ok());
    rig.fetcher.end(fail(Errc::cancelled, "stopped"));
    rig.sched.run_pending();
    REQUIRE(rig.done);
    REQUIRE(!rig.done->ok());
    CHECK(rig.done->error().message() ==
          "download: HTTP 404 Not Found (http://h/artifacts/a.bin?\xE2\x80\xA6)");
    // The same request gets the same answer: deterministic for the installer (update/retry.hpp).
    CHECK(rig.done->error().code() == Errc::refused);
    CHECK(rig.fetcher.started == 1);
}

TEST_CASE("transfer: a 408 is retried like a 5xx") {
    DownloaderOptions o;
    o.backoff_base = 100ms;
    Rig rig(o);
    const std::string data = "0123456789";
    rig.start(data);
    CHECK(!rig.fetcher.head(408, {}, "Request Timeout").ok());
    rig.fetcher.end(fail(Errc::cancelled, "stopped"));
    rig.sched.run_pending();
    rig.sched.advance(100ms);
    REQUIRE(rig.fetcher.started == 2);
    serves_whole(rig, data);
}

TEST_CASE("transfer: destroying the download drops the request; nothing runs afterwards") {
    Rig rig;
    const std::string data = "0123456789";
    rig.start(data);
    REQUIRE(rig.fetcher.head(200, {{"Content-Length", "10"}, {"ETag", "\"v1\""}}).ok());
    REQUIRE(rig.fetcher.body("0123").ok());  // a write job is queued
    rig.d.reset();
    CHECK(!rig.fetcher.current_alive());
    rig.sched.run_pending();
    rig.sched.advance(120s);
    CHECK(!rig.done);
    CHECK(rig.progress.empty());
    CHECK(test::read_file(rig.part(data)) == "0123");  // kept for the same hash
}

TEST_CASE("transfer: 503 and 429 are retried, waiting Retry-After up to backoff_max") {
    DownloaderOptions o;
    o.backoff_base = 100ms;
    o.backoff_max = 10s;
    Rig rig(o);
    const std::string data = "0123456789";
    rig.start(data);
    CHECK(!rig.fetcher.head(503, {{"Retry-After", "5"}}).ok());
    rig.fetcher.end(fail(Errc::cancelled, "stopped"));
    rig.sched.run_pending();
    rig.sched.advance(4999ms);
    CHECK(rig.fetcher.started == 1);
    rig.sched.advance(1ms);
    REQUIRE(rig.fetcher.started == 2);
    // A Retry-After of an hour waits backoff_max.
    CHECK(!rig.fetcher.head(429, {{"Retry-After", "3600"}}).ok());
    rig.fetcher.end(fail(Errc::cancelled, "stopped"));
    rig.sched.run_pending();
    rig.sched.advance(9999ms);
    CHECK(rig.fetcher.started == 2);
    rig.sched.advance(1ms);
    REQUIRE(rig.fetcher.started == 3);
    serves_whole(rig, data);
}

TEST_CASE("transfer: a body that drips is ended at the deadline, retries and waits included") {
    DownloaderOptions o;
    o.deadline = 10s;
    Rig rig(o);
    const std::string data(100, 'x');
    rig.start(data);
    REQUIRE(rig.fetcher.head(200, {{"Content-Length", "100"}, {"ETag", "\"e\""}}).ok());
    // A byte a second is never a stall; one cut and its backoff count against the deadline too.
    for (int i = 0; i < 4; ++i) {
        REQUIRE(rig.fetcher.body("x").ok());
        rig.sched.run_pending();
        rig.sched.advance(1s);
    }
    rig.fetcher.drop();
    rig.sched.run_pending();
    rig.sched.advance(2s);
    REQUIRE(rig.fetcher.started == 2);
    REQUIRE(rig.fetcher.head(206, {{"Content-Range", "bytes 4-99/100"}, {"ETag", "\"e\""}}).ok());
    for (int i = 0; i < 3; ++i) {
        REQUIRE(rig.fetcher.body("x").ok());
        rig.sched.run_pending();
        rig.sched.advance(1s);
    }
    CHECK(!rig.done);
    rig.sched.advance(1s);  // 10 s since the start
    rig.sched.run_pending();
    REQUIRE(rig.done);
    REQUIRE(!rig.done->ok());
    CHECK(rig.done->error().code() == Errc::timeout);
    CHECK(
        rig.done->error().message() ==
        "download: exceeded update.downloadTimeout (10s) after 7 bytes (http://h/artifacts/a.bin)");
    CHECK(!rig.fetcher.current_alive());
    // The part is kept, as after a cut: the same offer can resume it.
    CHECK(test::read_file(rig.part(data)) == "xxxxxxx");
    rig.sched.advance(60s);
    CHECK(rig.fetcher.started == 2);
}

TEST_CASE("transfer: no deadline when none is set") {
    Rig rig;
    const std::string data = "abc";
    rig.start(data);
    REQUIRE(rig.fetcher.head(200, {{"Content-Length", "3"}}).ok());
    REQUIRE(rig.fetcher.body("a").ok());
    rig.sched.advance(std::chrono::hours(24 * 4));
    CHECK(!rig.done);
    REQUIRE(rig.fetcher.body("bc").ok());
    rig.fetcher.end_ok();
    rig.sched.run_pending();
    REQUIRE(rig.done);
    CHECK(rig.done->ok());
}

// --- Issue 43 items 3, 5 and 6 -----------------------------------------------------------------

TEST_CASE("transfer: a proxy's 407 to a plain http:// request names the proxy and is refused") {
    DownloaderOptions o;
    auto policy = net::ProxyPolicy::make(
        net::ProxySettings{"http://proxy.example:3128", {}, "", ""}, net::ProxyEnv{});
    REQUIRE(policy.ok());
    o.proxy = *policy;
    Rig rig(o);
    rig.start("data");
    CHECK(!rig.fetcher
               .head(407, {{"Proxy-Authenticate", "Basic realm=\"squid\""}},
                     "Proxy Authentication Required")
               .ok());
    rig.fetcher.end(fail(Errc::cancelled, "stopped"));
    rig.sched.run_pending();
    REQUIRE(rig.done);
    REQUIRE(!rig.done->ok());
    // Not the artifact's 4xx: the proxy is named, and the class is refused (not quarantined).
    CHECK(rig.done->error().code() == Errc::refused);
    CHECK(rig.done->error().message().find("the proxy http://proxy.example:3128 refused the "
                                           "request: HTTP 407 Proxy Authentication Required") !=
          std::string::npos);
    CHECK(rig.fetcher.started == 1);
}

TEST_CASE("transfer: what the transport rule refuses is not tried again") {
    Rig rig;
    rig.start("data");
    rig.fetcher.end(fail(Errc::refused,
                         "http://h/artifacts/a.bin: refusing a plaintext connection to 10.0.0.1, "
                         "which is not a loopback address (allowInsecureTransport is off)"));
    rig.sched.run_pending();
    rig.sched.advance(1min);  // no backoff, no second try
    REQUIRE(rig.done);
    REQUIRE(!rig.done->ok());
    CHECK(rig.done->error().code() == Errc::refused);
    CHECK(rig.fetcher.started == 1);
}

TEST_CASE("transfer: a kept validator with a CR or a NUL is not sent; the part starts from zero") {
    const std::string data = "0123456789";
    for (std::string validator : {std::string("\"v1\"\r\nX-Evil: 1"), std::string("\"v\0\"", 4)}) {
        CAPTURE(validator.size());
        Rig rig;
        REQUIRE(::mkdir((rig.state.path() + "/spool").c_str(), 0755) == 0);
        test::write_file(rig.state.path() + "/spool/" + hex_of(data) + ".part", "01234", 0600);
        test::write_file(rig.part(data) + ".meta", "synced=5\nvalidator=" + validator + "\n", 0600);
        rig.start(data);
        // Before: five tries failed with `invalid request header "If-Range"` and the release was
        // quarantined. Now the request asks for the whole file.
        CHECK(rig.fetcher.current->header("Range").empty());
        CHECK(rig.fetcher.current->header("If-Range").empty());
        serves_whole(rig, data);
        REQUIRE(rig.done);
        CHECK(rig.done->ok());
    }
}

TEST_CASE("transfer: a 206 marks the artifact resumed; a fresh request drops the kept part") {
    const std::string data = "0123456789";
    {
        Rig rig;
        rig.start(data);
        REQUIRE(rig.fetcher.head(200, {{"Content-Length", "10"}, {"ETag", "\"v1\""}}).ok());
        REQUIRE(rig.fetcher.body("01234").ok());
        rig.fetcher.drop();
        rig.sched.run_pending();
        rig.sched.advance(2s);
        REQUIRE(rig.fetcher.current->header("Range") == "bytes=5-");
        REQUIRE(
            rig.fetcher.head(206, {{"Content-Range", "bytes 5-9/10"}, {"ETag", "\"v1\""}}).ok());
        REQUIRE(rig.fetcher.body("56789").ok());
        rig.fetcher.end_ok();
        rig.sched.run_pending();
        REQUIRE(rig.done);
        REQUIRE(rig.done->ok());
        CHECK((*rig.done)->resumed);
    }
    Rig rig;
    REQUIRE(::mkdir((rig.state.path() + "/spool").c_str(), 0755) == 0);
    test::write_file(rig.state.path() + "/spool/" + hex_of(data) + ".part", "XXXXX", 0600);
    test::write_file(rig.part(data) + ".meta", "synced=5\nvalidator=\"v1\"\n", 0600);
    Downloader::Handlers h;
    h.on_done = [&rig](Result<Artifact> r) { rig.done.emplace(std::move(r)); };
    Request req{"http://h/artifacts/a.bin", {}, hex_of(data), 1u << 20};
    req.fresh = true;
    rig.d = rig.dl->fetch(std::move(req), std::move(h));
    rig.sched.run_pending();
    for (int i = 0; i < 100 && rig.fetcher.started == 0; ++i) {
        uv_run(&rig.uv, UV_RUN_NOWAIT);
        rig.sched.run_pending();
    }
    REQUIRE(rig.fetcher.started == 1);
    CHECK(rig.fetcher.current->header("Range").empty());
    serves_whole(rig, data);
    REQUIRE(rig.done);
    REQUIRE(rig.done->ok());
    CHECK_FALSE((*rig.done)->resumed);
}
