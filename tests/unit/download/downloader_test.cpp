// The downloader's pure parts (backoff, headers, Content-Range), the spool file, and what the
// Downloader answers before any socket is opened, on FakeScheduler.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <uv.h>

#include <optional>
#include <string>

#include "download/http_downloader.hpp"
#include "download/spool.hpp"
#include "harness.hpp"
#include "hash/sha256.hpp"
#include "loop/fake_scheduler.hpp"

using namespace myr;
using namespace myr::download;
using namespace std::chrono_literals;

namespace {

std::string hex_of(const std::string& data) {
    return hash::to_hex(hash::sha256(data));
}

statedir::StateDir open_state(const test::TempDir& dir) {
    return statedir::StateDir::open(dir.path()).value();
}

// A downloader on FakeScheduler whose policy admits https://h/artifacts/, over a uv loop that no
// test here reaches (they end before any socket); the loop must close cleanly afterwards.
struct Rig {
    explicit Rig(const std::string& state_dir) {
        REQUIRE(uv_loop_init(&uv) == 0);
        DownloaderOptions o;
        o.state_dir = statedir::StateDir::open(state_dir).value();
        o.policy.prefixes = {Url{"https", "h", 443, "/artifacts/"}};
        dl = std::make_unique<HttpDownloader>(&uv, sched, o);
    }
    ~Rig() {
        dl.reset();
        CHECK(uv_loop_close(&uv) == 0);
    }
    std::unique_ptr<loop::Step> start(const std::string& url, const std::string& hex,
                                      std::optional<Result<Artifact>>& done) {
        Downloader::Handlers h;
        h.on_done = [&done](Result<Artifact> r) { done.emplace(std::move(r)); };
        return dl->fetch(Request{url, {}, hex, 100}, h);
    }
    uv_loop_t uv;
    loop::FakeScheduler sched;
    std::unique_ptr<HttpDownloader> dl;
};

}  // namespace

TEST_CASE("download: backoff doubles up to the cap, with jitter in [1/2, 1]") {
    CHECK(backoff_delay(1, 1s, 30s, 0.999999) == 999ms);
    CHECK(backoff_delay(1, 1s, 30s, 0.0) == 500ms);
    CHECK(backoff_delay(2, 1s, 30s, 0.0) == 1s);
    CHECK(backoff_delay(3, 1s, 30s, 0.0) == 2s);
    CHECK(backoff_delay(6, 1s, 30s, 0.0) == 15s);
    CHECK(backoff_delay(7, 1s, 30s, 0.0) == 15s);  // 64 s capped at 30, halved
    CHECK(backoff_delay(1000, 1s, 30s, 0.5) == 22500ms);
}

TEST_CASE("download: offer headers lose hop-by-hop headers, Host, Content-Length and Range") {
    auto out = offer_headers({{"Authorization", "Bearer t"},
                              {"connection", "close"},
                              {"Keep-Alive", "1"},
                              {"Transfer-Encoding", "chunked"},
                              {"HOST", "evil"},
                              {"Content-Length", "5"},
                              {"Range", "bytes=0-"},
                              {"If-Range", "x"},
                              {"Upgrade", "h2c"},
                              {"TE", "trailers"},
                              {"accept-encoding", "gzip"},
                              {"X-Trace", "1"}});
    REQUIRE(out.size() == 2);
    CHECK(out[0].first == "Authorization");
    CHECK(out[1].first == "X-Trace");
}

TEST_CASE("download: a body in any content coding but the identity is refused by name") {
    auto head = [](std::vector<std::pair<std::string, std::string>> h) {
        net::HttpHead out;
        out.status = 200;
        out.headers = std::move(h);
        return out;
    };
    CHECK(!refused_coding(head({})));
    CHECK(!refused_coding(head({{"Content-Encoding", "identity"}})));
    CHECK(!refused_coding(head({{"content-encoding", " IDENTITY "}})));
    auto gzip = refused_coding(head({{"Content-Encoding", "gzip"}}));
    REQUIRE(gzip);
    CHECK(gzip->code() == Errc::refused);
    CHECK(gzip->message() ==
          "the server sent the body with Content-Encoding: gzip, although the request accepts "
          "only the identity");
    auto br = refused_coding(head({{"Content-Encoding", "br, gzip"}}));
    REQUIRE(br);
    CHECK(br->message().find("Content-Encoding: br, gzip,") != std::string::npos);
}

TEST_CASE("download: Content-Range is read strictly") {
    auto a = parse_content_range("bytes 100-199/200");
    REQUIRE(a);
    CHECK(a->first == 100);
    CHECK(a->last == 199);
    CHECK(a->total == 200);
    auto b = parse_content_range("bytes 5-9/*");
    REQUIRE(b);
    CHECK(b->total == 0);
    CHECK(!parse_content_range("bytes 9-5/10"));
    CHECK(!parse_content_range("bytes 0-10/10"));
    CHECK(!parse_content_range("items 0-1/2"));
    CHECK(!parse_content_range("bytes -1/2"));
    CHECK(!parse_content_range("bytes 1-2"));
    CHECK(!parse_content_range("bytes 99999999999999999999-1/2"));
}

TEST_CASE("spool: a new offer removes other files, creates its part 0600, keeps its own part") {
    test::TempDir state;
    const std::string data = "0123456789abcdef";
    const std::string hex = hex_of(data);
    ::mkdir((state / "spool").c_str(), 0755);
    test::write_file(state / "spool/old.part", "stale");
    test::write_file(state / "spool/dead00", "stale");
    {
        auto f = SpoolFile::open(open_state(state), hex);
        REQUIRE(f.ok());
        CHECK(!(*f)->complete());
        CHECK((*f)->size() == 0);
        CHECK(test::list_dir(state / "spool") == std::vector<std::string>{hex + ".part"});
        struct stat st {};
        REQUIRE(::stat((state / "spool/" + hex + ".part").c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0600);
        REQUIRE((*f)->append(data.substr(0, 10)).ok());
        REQUIRE((*f)->set_validator("\"v1\"").ok());
        REQUIRE((*f)->sync().ok());
    }
    // Reopened: the kept part is re-hashed, its validator read back, and the hash covers it all.
    auto g = SpoolFile::open(open_state(state), hex);
    REQUIRE(g.ok());
    CHECK((*g)->size() == 10);
    CHECK((*g)->validator() == "\"v1\"");
    REQUIRE((*g)->append(data.substr(10)).ok());
    auto art = (*g)->commit();
    REQUIRE(art.ok());
    CHECK(art->sha256_hex == hex);
    CHECK(art->size == data.size());
    CHECK(art->path == state / "spool/" + hex);
    CHECK(test::read_file(art->path) == data);
    CHECK(test::list_dir(state / "spool") == std::vector<std::string>{hex});
    // A complete file with the right hash is the answer without a byte downloaded.
    auto again = SpoolFile::open(open_state(state), hex);
    REQUIRE(again.ok());
    REQUIRE((*again)->complete());
    CHECK((*again)->complete()->sha256_hex == hex);
}

TEST_CASE("spool: a kept part is trusted up to its last sync only; an old meta starts anew") {
    test::TempDir state;
    const std::string data = "0123456789abcdef";
    const std::string hex = hex_of(data);
    const std::string part = state / "spool/" + hex + ".part";
    {
        auto f = SpoolFile::open(open_state(state), hex);
        REQUIRE(f.ok());
        REQUIRE((*f)->set_validator("\"v1\"").ok());
        REQUIRE((*f)->append(data.substr(0, 6)).ok());
        REQUIRE((*f)->sync().ok());
        REQUIRE((*f)->append(data.substr(6, 4)).ok());
    }
    CHECK(test::read_file(part + ".meta") == "synced=6\nvalidator=\"v1\"\n");
    // What a power loss may leave after the sync: bytes that were never the artifact's.
    test::write_file(part, data.substr(0, 6) + "XXXXXXXX", 0600);
    {
        auto g = SpoolFile::open(open_state(state), hex);
        REQUIRE(g.ok());
        CHECK((*g)->size() == 6);
        CHECK((*g)->validator() == "\"v1\"");
        REQUIRE((*g)->append(data.substr(6)).ok());
        auto art = (*g)->commit();
        REQUIRE(art.ok());
        CHECK(art->sha256_hex == hex);
    }
    // A meta an older build wrote (the validator alone) says nothing about what was synced.
    test::remove_tree(state / "spool");
    ::mkdir((state / "spool").c_str(), 0755);
    test::write_file(part, data.substr(0, 6), 0600);
    test::write_file(part + ".meta", "\"v1\"", 0600);
    auto h = SpoolFile::open(open_state(state), hex);
    REQUIRE(h.ok());
    CHECK((*h)->size() == 0);
    CHECK((*h)->validator().empty());
    CHECK(!test::exists(part + ".meta"));
}

TEST_CASE("spool: at start the download's files stay, everything else goes") {
    test::TempDir state;
    const std::string hex = hex_of("x");
    ::mkdir((state / "spool").c_str(), 0755);
    for (const std::string n :
         {hex, hex + ".part", hex + ".part.meta", std::string("old"),
          "." + hex + ".part.meta.tmp-abcdef", hex + "-0123456789abcdef.part"}) {
        test::write_file(state / "spool/" + n, "x");
    }
    auto tidied = tidy_spool(open_state(state));
    REQUIRE(tidied.ok());
    CHECK(*tidied == 3);
    CHECK(test::list_dir(state / "spool") ==
          std::vector<std::string>{hex, hex + ".part", hex + ".part.meta"});
}

TEST_CASE("spool: a damaged complete file is dropped; truncate restarts the hash") {
    test::TempDir state;
    const std::string hex = hex_of("right");
    ::mkdir((state / "spool").c_str(), 0755);
    test::write_file(state / "spool/" + hex, "wrong");
    auto f = SpoolFile::open(open_state(state), hex);
    REQUIRE(f.ok());
    CHECK(!(*f)->complete());
    CHECK(!test::exists(state / "spool/" + hex));
    REQUIRE((*f)->append("garbage").ok());
    REQUIRE((*f)->set_validator("\"a\"").ok());
    REQUIRE((*f)->truncate().ok());
    CHECK(!test::exists(state / "spool/" + hex + ".part.meta"));
    REQUIRE((*f)->append("right").ok());
    auto art = (*f)->commit();
    REQUIRE(art.ok());
    CHECK(art->sha256_hex == hex);
}

TEST_CASE("spool: a planted symlink is removed, never followed; a bad hash is refused") {
    test::TempDir state;
    const std::string hex = hex_of("x");
    ::mkdir((state / "spool").c_str(), 0755);
    const std::string before = test::read_file("/etc/passwd");
    REQUIRE(::symlink("/etc/passwd", (state / "spool/" + hex + ".part").c_str()) == 0);
    auto f = SpoolFile::open(open_state(state), hex);
    REQUIRE(f.ok());
    REQUIRE((*f)->append("x").ok());
    struct stat st {};
    REQUIRE(::lstat((state / "spool/" + hex + ".part").c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(test::read_file("/etc/passwd") == before);
    auto bad = SpoolFile::open(open_state(state), "../../etc/passwd");
    REQUIRE(!bad.ok());
    CHECK(bad.error().code() == Errc::invalid);
    CHECK(!SpoolFile::open(open_state(state), std::string(64, 'A')).ok());
}

TEST_CASE("spool: leftovers that cannot be removed are left; a blocked name gets a fresh one") {
    test::TempDir state;
    const std::string hex = hex_of("payload");
    const std::string spool = state / "spool";
    // Entries no one can remove: a file in an immutable directory keeps the directory too.
    std::vector<std::string> stuck{spool + "/old", spool + "/" + hex + ".part"};
    bool immutable = true;
    for (const std::string& d : stuck) {
        REQUIRE(test::run({"mkdir", "-p", d}).exit_code == 0);
        test::write_file(d + "/f", "x");
        immutable = immutable && test::run({"chattr", "+i", d}).exit_code == 0;
    }
    struct Unfreeze {
        std::vector<std::string> paths;
        ~Unfreeze() {
            for (const std::string& p : paths) test::run({"chattr", "-i", p});
        }
    } unfreeze{stuck};
    if (!immutable) MYR_SKIP("chattr +i is not supported here");

    auto f = SpoolFile::open(open_state(state), hex);
    REQUIRE(f.ok());
    REQUIRE((*f)->append("payload").ok());
    auto art = (*f)->commit();
    REQUIRE(art.ok());
    CHECK(art->sha256_hex == hex);
    CHECK(art->path.rfind(spool + "/" + hex + "-", 0) == 0);
    CHECK(test::read_file(art->path) == "payload");
    auto cleared = clear_spool(open_state(state));
    REQUIRE(cleared.ok());
    CHECK(*cleared == 1);
    CHECK(test::list_dir(spool) == std::vector<std::string>{hex + ".part", "old"});
}

TEST_CASE("download: check_url answers at once with the rule fetch() applies") {
    test::TempDir state;
    Rig rig(state.path());
    CHECK(rig.dl->check_url("https://h/artifacts/x").ok());
    auto refused = rig.dl->check_url("https://h/elsewhere/x");
    REQUIRE(!refused.ok());
    CHECK(refused.error().code() == Errc::refused);
    CHECK(refused.error().message().find("https://h/elsewhere/x: refused (rule prefix)") !=
          std::string::npos);
    CHECK(rig.sched.posted() == 0);
    CHECK(!test::exists(state / "spool"));
}

TEST_CASE("download: refusals come on a later turn, never from inside fetch()") {
    test::TempDir state;
    Rig rig(state.path());
    std::optional<Result<Artifact>> bad_url, bad_hash;
    auto a = rig.start("https://h/elsewhere/x", hex_of("x"), bad_url);
    auto b = rig.start("https://h/artifacts/x", "nothex", bad_hash);
    CHECK(!bad_url);
    CHECK(!bad_hash);
    rig.sched.run_pending();
    REQUIRE(bad_url);
    REQUIRE(!bad_url->ok());
    CHECK(bad_url->error().code() == Errc::refused);
    CHECK(bad_url->error().message().find(
              "download: https://h/elsewhere/x: refused (rule prefix)") == 0);
    REQUIRE(bad_hash);
    REQUIRE(!bad_hash->ok());
    CHECK(bad_hash->error().message().find("content hash") != std::string::npos);
    CHECK(!test::exists(state / "spool"));  // nothing touched on the volume
}

TEST_CASE("download: a complete file in the spool is the answer; destroying cancels") {
    test::TempDir state;
    const std::string hex = hex_of("done");
    ::mkdir((state / "spool").c_str(), 0755);
    test::write_file(state / "spool/" + hex, "done");
    Rig rig(state.path());
    std::optional<Result<Artifact>> done, never;
    auto d = rig.start("https://h/artifacts/x", hex, done);
    rig.sched.run_pending();
    REQUIRE(done);
    REQUIRE(done->ok());
    CHECK((*done)->sha256_hex == hex);
    CHECK((*done)->size == 4);

    // Destroyed before its spool job reports: on_done never runs.
    auto e = rig.start("https://h/artifacts/x", hex, never);
    e.reset();
    rig.sched.run_pending();
    CHECK(!never);
}
