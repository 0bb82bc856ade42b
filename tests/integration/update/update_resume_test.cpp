// Resume across restarts through the real binary as PID 1 (docs/download.md, "Resume"): a large
// artifact over a throttled link, the updater killed (kill -9 or TERM) halfway through, then
// started again and offered the same release, as a server does at connect. The download must go on
// from the kept bytes (a Range request with If-Range from where the synced part ended), not from
// zero, and the install must end Installed. The artifact's size is MYR_RESUME_MB (default 48 MiB;
// the 200 MB figure is measured with MYR_RESUME_MB=200), served in about 12 s.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>

#include "update_rig.hpp"

using namespace myr::test;
using namespace myr::test::upd;

namespace {

// The downloader syncs its part every this many bytes: a restart may find the tail after the last
// sync cut off (docs/download.md).
constexpr uint64_t kSyncEvery = 4u << 20;

int artifact_mb() {
    const char* v = std::getenv("MYR_RESUME_MB");
    return v && std::atoi(v) > 0 ? std::atoi(v) : 48;
}

uint64_t file_size(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// The Range headers the artifact server saw for `file`, in order ("" = none).
std::vector<std::string> ranges(const Rig& rig, const std::string& file) {
    std::vector<std::string> out;
    opamp::Json j = opamp::parse_json(rig.artifact_server->stats());
    json_object* reqs = get(j.get(), "requests");
    for (size_t i = 0; reqs && i < json_object_array_length(reqs); ++i) {
        json_object* r = json_object_array_get_idx(reqs, i);
        if (str(r, "path").find(file) == std::string::npos) continue;
        out.push_back(str(r, "range"));
    }
    return out;
}

// A started updater with a large release offered over a throttled link, stopped by `sig` once
// the spool's part holds `fraction` of it.
struct Interrupted {
    explicit Interrupted(int sig, double fraction = 0.5) {
        rig.first_start(rig.release("0.116.0"));
        const int mb = artifact_mb();
        size = uint64_t(mb) << 20;
        archive = rig.tar_gz_padded(rig.release("0.117.0"), "big.tar.gz", mb);
        size = file_size(rig.artifacts + "/" + archive);
        offer.emplace("0.117.0", archive, "rate=" + std::to_string(size / 12));
        part = rig.spool() + "/" + rig.sha_of(archive) + ".part";
        size_t from = rig.mark();
        Updater u(rig.config());
        rig.await_start(u, from);
        rig.offer(*offer);
        const auto want = static_cast<uint64_t>(static_cast<double>(size) * fraction);
        REQUIRE_MESSAGE(wait_until([&] { return file_size(part) >= want; }, 120s, 20ms),
                        "the part never reached " << want << " bytes; log:\n"
                                                  << u.log());
        u.signal(sig);
        const int code = u.wait_exit(30s);
        if (sig == SIGTERM) CHECK(code == 0);
        at_stop = file_size(part);
        MESSAGE("stopped by signal " << sig << " with " << at_stop << " of " << size
                                     << " bytes in the part");
    }
    Rig rig;
    uint64_t size = 0;
    std::string archive;
    std::optional<Offer> offer;
    std::string part;
    uint64_t at_stop = 0;
};

// The restart given the same offer: the download resumes from the kept bytes and installs.
void resumes(Interrupted& in) {
    Rig& rig = in.rig;
    REQUIRE_MESSAGE(exists(in.part),
                    "the part was not kept at start: " << joined(list_dir(rig.spool())));
    size_t from = rig.mark();
    Updater u(rig.config());
    rig.await_start(u, from);
    CHECK_MESSAGE(exists(in.part), "the part was removed at start");
    from = rig.mark();
    rig.offer(*in.offer);
    auto st = rig.wait_status("0.117.0", "", from, 120s);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
    REQUIRE_MESSAGE(st->status == "Installed", st->error << "\nlog:\n" << u.log());
    const std::vector<std::string> r = ranges(rig, in.archive);
    REQUIRE_MESSAGE(r.size() >= 2, "requests: " << joined(r));
    const std::string first_after = r[1];
    MESSAGE("requests: " << joined(r));
    REQUIRE_MESSAGE(first_after.rfind("bytes=", 0) == 0,
                    "no Range after the restart: " << joined(r));
    const uint64_t offset = std::stoull(first_after.substr(6));
    // From the synced part: at most what the part held, at most one sync interval less.
    CHECK(offset <= in.at_stop);
    CHECK(offset + kSyncEvery >= in.at_stop);
    const uint64_t served = rig.artifact_server->bytes_served();
    MESSAGE("served " << served << " bytes for a " << in.size << " byte artifact ("
                      << (100.0 * static_cast<double>(served) / static_cast<double>(in.size))
                      << " %)");
    CHECK(served * 10 <= in.size * 11);
    check_settled(rig, "0.117.0");
    CHECK(u.stop() == 0);
}

}  // namespace

TEST_CASE("resume: kill -9 halfway through a download, then the restart resumes with Range") {
    if (!can_run_pid1()) return;
    Interrupted in(SIGKILL);
    resumes(in);
}

TEST_CASE("resume: TERM halfway through a download, then the restart resumes with Range") {
    if (!can_run_pid1()) return;
    Interrupted in(SIGTERM);
    resumes(in);
}

TEST_CASE("resume: an unsynced tail (power loss) is cut off and the download still installs") {
    if (!can_run_pid1()) return;
    Interrupted in(SIGKILL);
    // What a power loss may leave after the last sync: bytes that are not the artifact's.
    // The Range must start at or before the part's size at the kill: the tail is not trusted.
    std::ofstream(in.part, std::ios::app | std::ios::binary) << std::string(100000, 'X');
    resumes(in);
}

TEST_CASE("resume: an offer of another hash after the restart removes the kept part") {
    if (!can_run_pid1()) return;
    Interrupted in(SIGKILL, 0.3);
    Rig& rig = in.rig;
    size_t from = rig.mark();
    Updater u(rig.config());
    rig.await_start(u, from);
    CHECK_MESSAGE(exists(in.part), "the part was removed at start, before any offer: "
                                       << joined(list_dir(rig.spool())));
    const std::string small = rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz");
    from = rig.mark();
    rig.offer(Offer{"0.118.0", small});
    auto st = rig.wait_status("0.118.0", "", from, 60s);
    REQUIRE_MESSAGE(st, rig.record() << "\nlog:\n" << u.log());
    REQUIRE_MESSAGE(st->status == "Installed", st->error);
    CHECK_FALSE(exists(in.part));
    check_settled(rig, "0.118.0");
    CHECK(u.stop() == 0);
}
