// The real downloader on 127.0.0.1 against tests/servers/artifact_server.py (http, and https
// with a CA made by openssl at test time): framings, resume, restarts, redirects, retries, caps,
// stalls, disk full, cancel. Each case counts what the server served.
#include <doctest/doctest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "download/http_downloader.hpp"
#include "harness.hpp"
#include "hash/sha256.hpp"
#include "../net/test_server.hpp"

using namespace myr;
using namespace myr::download;
using namespace myr::test;
using namespace std::chrono_literals;

namespace {

// Bytes that differ at every offset, so a splice at the wrong offset changes the hash.
std::string pattern(size_t n, uint32_t seed) {
    std::string s(n, '\0');
    uint32_t x = seed;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        s[i] = static_cast<char>(x >> 24);
    }
    return s;
}

std::string hex_of(const std::string& data) {
    return hash::to_hex(hash::sha256(data));
}

class ArtifactServer {
  public:
    explicit ArtifactServer(const std::string& dir, const TestPki* pki = nullptr) : dir_(dir) {
        std::vector<std::string> argv = {"python3",
                                         source_dir() + "/tests/servers/artifact_server.py",
                                         "--dir",
                                         dir,
                                         "--port-file",
                                         dir + "/port",
                                         "--stats",
                                         dir + "/stats.json"};
        if (pki != nullptr) {
            argv.insert(argv.end(), {"--tls-cert", pki->server_cert, "--tls-key", pki->server_key});
        }
        proc_.emplace(Process::spawn(argv));
        REQUIRE(wait_until([&] { return exists(dir + "/port"); }, 10s));
        port_ = std::stoi(read_file(dir + "/port"));
    }
    int port() const { return port_; }
    std::string url(const std::string& scheme, const std::string& rest) const {
        return scheme + "://127.0.0.1:" + std::to_string(port_) + "/artifacts/" + rest;
    }
    // The server's record once no answer is being sent any more (each byte counted).
    std::string stats() const {
        std::string s;
        wait_until(
            [&] {
                s = read_file(dir_ + "/stats.json");
                return s.empty() || s.find("\"active\": 0") != std::string::npos;
            },
            5s);
        return s;
    }
    uint64_t bytes_served() const {
        std::smatch m;
        const std::string s = stats();
        if (!std::regex_search(s, m, std::regex("\"bytes\": ([0-9]+)"))) return 0;
        return std::stoull(m[1]);
    }
    size_t requests() const {
        const std::string s = stats();
        size_t n = 0;
        for (size_t at = s.find("\"path\""); at != std::string::npos; at = s.find("\"path\"", at + 1)) {
            ++n;
        }
        return n;
    }

  private:
    std::string dir_;
    std::optional<Process> proc_;
    int port_ = 0;
};

struct Fetch {
    std::optional<Result<Artifact>> done;
    std::vector<Progress> progress;
};

DownloaderOptions quick(const std::string& state, std::vector<std::string> prefixes) {
    DownloaderOptions o;
    o.state_dir = state;
    for (const auto& p : prefixes) o.policy.prefixes.push_back(*parse_url(p));
    o.policy.allow_plain_http = true;  // the endpoint of these tests is loopback
    o.stall_timeout = 1s;
    o.connect_timeout = 5s;
    o.backoff_base = 10ms;
    o.backoff_max = 50ms;
    return o;
}

// Runs one download to its end on `loop`.
Fetch fetch(TestLoop& loop, const DownloaderOptions& o, Request r,
            std::chrono::milliseconds timeout = 30s) {
    Fetch f;
    HttpDownloader dl(loop.get(), loop.sched(), o);
    Downloader::Handlers h;
    h.on_progress = [&](const Progress& p) { f.progress.push_back(p); };
    h.on_done = [&](Result<Artifact> a) { f.done.emplace(std::move(a)); };
    auto d = dl.start(std::move(r), h);
    REQUIRE(loop.run_until([&] { return f.done.has_value(); }, timeout));
    return f;
}

// One machine: files, server, loop, spool, all in one temporary directory.
struct Rig {
    TempDir tmp;
    std::string files = tmp / "files";
    std::string state = tmp / "state";
    std::string data = pattern(1u << 20, 7);
    std::string hex = hex_of(data);
    std::optional<TestPki> pki;
    std::optional<ArtifactServer> server;
    TestLoop loop;

    explicit Rig(bool tls = false) {
        ::mkdir(files.c_str(), 0755);
        ::mkdir(state.c_str(), 0755);
        write_file(files + "/a.bin", data);
        if (tls) {
            ::mkdir((tmp / "pki").c_str(), 0755);
            pki.emplace(make_test_pki(tmp / "pki"));
        }
        server.emplace(files, pki ? &*pki : nullptr);
    }
    ~Rig() { CHECK(loop.close() == 0); }
    std::string scheme() const { return pki ? "https" : "http"; }
    DownloaderOptions options() const {
        DownloaderOptions o =
            quick(state, {scheme() + "://127.0.0.1:" + std::to_string(server->port()) +
                          "/artifacts/"});
        if (pki) o.ca_file = pki->ca;
        return o;
    }
    Request request(const std::string& query, uint64_t max = 1u << 30) const {
        return Request{server->url(scheme(), "a.bin" + query), {}, hex, max};
    }
    Fetch get(const std::string& query) { return fetch(loop, options(), request(query)); }
    std::string part() const { return state + "/spool/" + hex + ".part"; }
};

void require_ok(const Fetch& f, const std::string& hex, size_t size) {
    REQUIRE(f.done);
    if (!f.done->ok()) FAIL(f.done->error().message());
    CHECK((*f.done)->sha256_hex == hex);
    CHECK((*f.done)->size == size);
    CHECK(hex_of(read_file((*f.done)->path)) == hex);
}

const Error& require_error(const Fetch& f) {
    REQUIRE(f.done);
    REQUIRE(!f.done->ok());
    return f.done->error();
}

bool contains(const std::string& s, const std::string& what) {
    return s.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("download: Content-Length, until-close and chunked bodies land in the spool") {
    Rig rig;
    for (const char* q : {"", "?len=0", "?chunked"}) {
        CAPTURE(q);
        auto f = rig.get(q);
        require_ok(f, rig.hex, rig.data.size());
        CHECK((*f.done)->path == rig.state + "/spool/" + rig.hex);
        CHECK(list_dir(rig.state + "/spool") == std::vector<std::string>{rig.hex});
        ::unlink((*f.done)->path.c_str());
    }
    CHECK(rig.server->requests() == 3);
}

TEST_CASE("download: https verified against server.caFile; another CA is refused") {
    Rig rig(true);
    require_ok(rig.get(""), rig.hex, rig.data.size());
    ::unlink((rig.state + "/spool/" + rig.hex).c_str());
    DownloaderOptions o = rig.options();
    o.ca_file = rig.pki->other_ca;
    o.max_tries = 1;
    auto f = fetch(rig.loop, o, rig.request(""));
    const Error& e = require_error(f);
    CHECK(e.code() == Errc::network);
    CHECK(contains(e.message(), "not trusted"));
}

TEST_CASE("download: a file cut three times resumes to the right hash, each byte served once") {
    Rig rig(true);
    auto f = rig.get("?cut=200000,300000,250000");
    require_ok(f, rig.hex, rig.data.size());
    CHECK(rig.server->requests() == 4);
    CHECK(rig.server->bytes_served() == rig.data.size());
    const std::string s = rig.server->stats();
    CHECK(contains(s, "\"range\": \"bytes=200000-\""));
    CHECK(contains(s, "\"range\": \"bytes=500000-\""));
    CHECK(contains(s, "\"range\": \"bytes=750000-\""));
    CHECK(contains(s, "\"if_range\": \"\\\""));  // the ETag seen before
    CHECK(!exists(rig.part() + ".meta"));
}

TEST_CASE("download: a kept part from an earlier run is continued") {
    Rig rig;
    // The first run fails for good after one cut; the second (a restart of the updater) resumes.
    DownloaderOptions o = rig.options();
    o.max_tries = 1;
    auto first = fetch(rig.loop, o, rig.request("?cut=400000"));
    CHECK(require_error(first).code() == Errc::network);
    REQUIRE(exists(rig.part()));
    CHECK(read_file(rig.part()).size() == 400000);
    auto second = fetch(rig.loop, rig.options(), rig.request("?cut=400000"));
    require_ok(second, rig.hex, rig.data.size());
    CHECK(rig.server->bytes_served() == rig.data.size());
}

TEST_CASE("download: 200 instead of 206, a wrong Content-Range and 416 restart from zero") {
    for (const char* q : {"?cut=300000&norange", "?cut=300000&wrong206", "?cut=300000&r416"}) {
        CAPTURE(q);
        Rig rig;
        auto f = rig.get(q);
        require_ok(f, rig.hex, rig.data.size());
        CHECK(rig.server->bytes_served() >= rig.data.size() + 300000);
    }
}

TEST_CASE("download: a file changed between requests (new ETag) is fetched anew") {
    Rig rig;
    const std::string v2 = pattern(700000, 99);
    write_file(rig.files + "/a.bin.v2", v2);
    auto f = rig.get("?cut=300000&change=2");
    // The result is the new file, hashed whole; the caller compares it with the offer's hash.
    require_ok(f, hex_of(v2), v2.size());
    CHECK(rig.server->bytes_served() == 300000 + v2.size());
}

TEST_CASE("download: without a validator a cut download starts again from zero") {
    Rig rig;
    auto f = rig.get("?cut=300000&noetag");
    require_ok(f, rig.hex, rig.data.size());
    CHECK(!contains(rig.server->stats(), "\"range\": \"bytes"));
}

TEST_CASE("download: redirects are checked by the policy, at most 3, headers stay home") {
    Rig rig;
    const std::string port = std::to_string(rig.server->port());
    SUBCASE("a loop ends after 3 redirects") {
        auto f = rig.get("?redirect=self");
        CHECK(require_error(f).code() == Errc::invalid);
        CHECK(contains(f.done->error().message(), "more than 3 redirects"));
        CHECK(rig.server->requests() == 4);
    }
    SUBCASE("another host inside the prefixes: followed, without the offer's headers") {
        DownloaderOptions o = quick(rig.state, {"http://127.0.0.1:" + port + "/artifacts/",
                                                "http://localhost:" + port + "/artifacts/"});
        Request r = rig.request("?redirect=http%3A%2F%2Flocalhost%3A" + port + "%2Fartifacts%2Fa.bin");
        r.headers = {{"Authorization", "Bearer secret"}, {"Connection", "upgrade"}};
        auto f = fetch(rig.loop, o, r);
        require_ok(f, rig.hex, rig.data.size());
        const std::string s = rig.server->stats();
        CHECK(contains(s, "\"authorization\": \"Bearer secret\", \"host\": \"127.0.0.1"));
        CHECK(contains(s, "\"authorization\": null, \"host\": \"localhost"));
    }
    SUBCASE("each try follows its own redirects, from the offered URL") {
        // Four tries, each redirected once: the 3-redirect limit is per try, not per offer.
        auto f = rig.get("?redirect=%2Fartifacts%2Fa.bin%3Fcut%3D200000%2C200000%2C200000");
        require_ok(f, rig.hex, rig.data.size());
        CHECK(rig.server->requests() == 8);
        CHECK(rig.server->bytes_served() == rig.data.size());
    }
    SUBCASE("outside the prefixes: refused, nothing fetched there") {
        auto f = rig.get("?redirect=%2Fsecret%2Fa.bin");
        CHECK(require_error(f).code() == Errc::invalid);
        CHECK(contains(f.done->error().message(), "redirect: http://127.0.0.1:" + port +
                                                      "/secret/a.bin: refused (rule prefix)"));
        CHECK(rig.server->requests() == 1);
    }
}

TEST_CASE("download: https redirected to http is refused") {
    Rig rig(true);
    const std::string port = std::to_string(rig.server->port());
    auto f = rig.get("?redirect=http%3A%2F%2F127.0.0.1%3A" + port + "%2Fartifacts%2Fa.bin");
    CHECK(require_error(f).code() == Errc::invalid);
    CHECK(contains(f.done->error().message(), "refused (rule"));
    CHECK(rig.server->requests() == 1);
}

TEST_CASE("download: 5xx is retried; after 5 tries the offer fails; 404 is not retried") {
    Rig rig;
    require_ok(rig.get("?fail=2"), rig.hex, rig.data.size());
    CHECK(rig.server->requests() == 3);
    ::unlink((rig.state + "/spool/" + rig.hex).c_str());
    auto f = rig.get("?fail=100");
    CHECK(require_error(f).code() == Errc::network);
    CHECK(contains(f.done->error().message(), "after 5 tries"));
    CHECK(contains(f.done->error().message(), "HTTP 503"));
    CHECK(rig.server->requests() == 3 + 5);
    auto nf = rig.get("?status=404");
    CHECK(contains(require_error(nf).message(), "HTTP 404"));
    CHECK(rig.server->requests() == 3 + 5 + 1);
}

TEST_CASE("download: over update.maxArtifactSize: refused before the body, or cut off") {
    Rig rig;
    auto huge = rig.get("?hugelen");
    CHECK(require_error(huge).code() == Errc::invalid);
    CHECK(contains(huge.done->error().message(), "over update.maxArtifactSize"));
    CHECK(!exists(rig.part()));
    auto f = fetch(rig.loop, rig.options(), rig.request("?len=0", 300000));
    CHECK(require_error(f).code() == Errc::invalid);
    CHECK(contains(f.done->error().message(), "grew past update.maxArtifactSize"));
    CHECK(!exists(rig.part()));
    auto cl = fetch(rig.loop, rig.options(), rig.request("", 300000));
    CHECK(require_error(cl).code() == Errc::invalid);
    CHECK(rig.server->requests() == 3);
}

TEST_CASE("download: every URL policy rule refuses before a byte is requested") {
    Rig rig;
    const std::string base = "http://127.0.0.1:" + std::to_string(rig.server->port());
    const std::vector<std::pair<std::string, std::string>> cases = {
        {base + "/elsewhere/a.bin", "prefix"},
        {"http://u@127.0.0.1:" + std::to_string(rig.server->port()) + "/artifacts/a.bin",
         "userinfo"},
        {base + "/artifacts/../artifacts/a.bin", "dot-segment"},
        {base + "/artifacts/%2e%2e/a.bin", "encoded-separator"},
        {base + "/artifacts/a.bin\r\nX: 1", "control-character"},
        {"ftp://127.0.0.1/artifacts/a.bin", "syntax"}};
    for (const auto& [url, rule] : cases) {
        CAPTURE(url);
        auto f = fetch(rig.loop, rig.options(), Request{url, {}, rig.hex, 1u << 30});
        CHECK(require_error(f).code() == Errc::invalid);
        CHECK(contains(f.done->error().message(), "(rule " + rule + ")"));
    }
    DownloaderOptions tls_only = rig.options();
    tls_only.policy.allow_plain_http = false;
    auto plain = fetch(rig.loop, tls_only, rig.request(""));
    CHECK(contains(require_error(plain).message(), "(rule plain-http)"));
    CHECK(rig.server->requests() == 0);
}

TEST_CASE("download: destroying cancels; a newer offer removes the older part") {
    Rig rig;
    {
        HttpDownloader dl(rig.loop.get(), rig.loop.sched(), rig.options());
        bool called = false;
        Downloader::Handlers h;
        h.on_done = [&](Result<Artifact>) { called = true; };
        auto d = dl.start(rig.request("?drip=100000"), h);
        REQUIRE(rig.loop.run_until([&] { return exists(rig.part()); }, 10s));
        d.reset();
        rig.loop.run_for(300ms);
        CHECK(!called);
        CHECK(exists(rig.part()));  // kept for the same hash
    }
    const std::string other = pattern(5000, 3);
    write_file(rig.files + "/b.bin", other);
    auto f = fetch(rig.loop, rig.options(),
                   Request{rig.server->url("http", "b.bin"), {}, hex_of(other), 1u << 30});
    require_ok(f, hex_of(other), other.size());
    CHECK(list_dir(rig.state + "/spool") == std::vector<std::string>{hex_of(other)});
}

TEST_CASE("download: a full disk ends the download, removes the part, touches nothing else") {
    if (!is_root()) MYR_SKIP("needs root to mount a small tmpfs");
    Rig rig;
    const std::string small = rig.tmp / "small";
    ::mkdir(small.c_str(), 0755);
    if (::mount("tmpfs", small.c_str(), "tmpfs", 0, "size=256k") != 0) {
        MYR_SKIP("cannot mount a tmpfs here: " << strerror(errno));
    }
    write_file(small + "/keep", "volume file");
    DownloaderOptions o = rig.options();
    o.state_dir = small;
    auto f = fetch(rig.loop, o, rig.request(""));
    const Error& e = require_error(f);
    CHECK(e.code() == Errc::system);
    CHECK(e.sys_errno() == ENOSPC);
    CHECK(contains(e.message(), "No space left on device"));
    CHECK(contains(e.message(), "download: http://127.0.0.1:"));
    CHECK(list_dir(small + "/spool").empty());
    CHECK(read_file(small + "/keep") == "volume file");
    CHECK(rig.server->requests() == 1);  // a full disk is not retried
    CHECK(::umount2(small.c_str(), MNT_DETACH) == 0);
}

TEST_CASE("download: a stall is cut after stall_timeout and the retry resumes") {
    Rig rig;
    const auto t0 = std::chrono::steady_clock::now();
    auto f = rig.get("?stall=20");  // request 1 sends half, then nothing for 20 s
    require_ok(f, rig.hex, rig.data.size());
    CHECK(std::chrono::steady_clock::now() - t0 < 8s);  // 1 s stall timeout, not the 20 s
    CHECK(rig.server->requests() == 2);
    CHECK(rig.server->bytes_served() == rig.data.size());
    CHECK(contains(rig.server->stats(), "\"range\": \"bytes=524288-\""));
}

TEST_CASE("download: a drip of one byte a second is no stall; progress at most every 2 s") {
    Rig rig;
    DownloaderOptions o = rig.options();
    o.stall_timeout = 3s;
    std::vector<std::chrono::steady_clock::time_point> at;
    Fetch f;
    HttpDownloader dl(rig.loop.get(), rig.loop.sched(), o);
    Downloader::Handlers h;
    h.on_progress = [&](const Progress& p) {
        at.push_back(std::chrono::steady_clock::now());
        f.progress.push_back(p);
    };
    h.on_done = [&](Result<Artifact> a) { f.done.emplace(std::move(a)); };
    auto d = dl.start(rig.request("?drip=6"), h);
    REQUIRE(rig.loop.run_until([&] { return f.done.has_value(); }, 30s));
    require_ok(f, rig.hex, rig.data.size());
    CHECK(rig.server->requests() == 1);
    REQUIRE(f.progress.size() >= 2);
    for (size_t i = 1; i < at.size(); ++i) CHECK(at[i] - at[i - 1] >= 1900ms);
    for (const Progress& p : f.progress) {
        CHECK(p.total == rig.data.size());
        CHECK(p.bytes <= p.total);
        CHECK(p.percent >= 0);
        CHECK(p.percent <= 100);
    }
    CHECK(f.progress.front().bytes < 10);  // reported while dripping
    CHECK(f.progress.front().bytes_per_second < 10);
}

namespace {

// Peak resident set of this process so far (VmHWM), in KiB.
long peak_rss_kib() {
    const std::string s = read_file("/proc/self/status");
    const size_t at = s.find("VmHWM:");
    return at == std::string::npos ? -1 : std::stol(s.substr(at + 6));
}

}  // namespace

TEST_CASE("download: a large file streams over https with flat memory") {
    Rig rig(true);
    // 200 MB written in 1 MiB pieces, so the test itself never holds the file either.
    const std::string piece = pattern(1u << 20, 11);
    hash::Sha256 h;
    {
        std::string big = rig.files + "/large.bin";
        FILE* f = std::fopen(big.c_str(), "wb");
        REQUIRE(f != nullptr);
        for (int i = 0; i < 200; ++i) {
            REQUIRE(std::fwrite(piece.data(), 1, piece.size(), f) == piece.size());
            h.update(piece);
        }
        std::fclose(f);
    }
    const std::string hex = hash::to_hex(h.finish());
    const long before = peak_rss_kib();
    auto f = fetch(rig.loop, rig.options(),
                   Request{rig.server->url("https", "large.bin"), {}, hex, 1ull << 30}, 240s);
    REQUIRE(f.done);
    if (!f.done->ok()) FAIL(f.done->error().message());
    CHECK((*f.done)->sha256_hex == hex);
    CHECK((*f.done)->size == 200ull << 20);
    const long after = peak_rss_kib();
    MESSAGE("peak RSS " << before << " KiB before, " << after << " KiB after 200 MiB");
    CHECK(after - before < 4096);  // the budget is ~0.7 MiB of buffers; 4 MiB leaves allocator slack
}
