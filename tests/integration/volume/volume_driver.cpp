// volume-driver: runs one volume operation with the same store and journal code as the product, so
// that crash tests can kill it at any fault point (MYRIARCH_FAULT=<point>:crash) and check what a
// restart makes of the volume. The container command calls the same functions.
//
//   volume-driver --install-dir D --state-dir S [--binary NAME] <op> [options]
//   ops:
//     start     recover, then seed (what the container command does before starting the child);
//               [--print-state] adds the `state` document as a second line
//     recover   recovery only
//     seed      --image PATH [--policy newest|image] [--keep N] [--version-output TEXT]
//               [--version-failed]   (without --version-output it runs `PATH --version`)
//     activate  --file PATH --version V [--sha256 HEX] [--staged] [--keep N]
//               an update as the installer journals it (op update): staged extraction (--staged)
//               or a copy of PATH hashed while copying, then the switch, then commit and GC
//     rollback  journaled rollback to the active marker's previousVersion
//     gc        [--keep N]
//     state     the volume as JSON (current, active, journal, staging, temps, versions)
// Every op prints one JSON object on stdout; exit 0 on success, 1 on failure (error on stderr).
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "download/spool.hpp"
#include "fsx/copy.hpp"
#include "fsx/dir.hpp"
#include "fsx/file.hpp"
#include "hash/sha256.hpp"
#include "journal/journal.hpp"
#include "journal/recover.hpp"
#include "journal/seed.hpp"
#include "store/activate.hpp"
#include "store/gc.hpp"
#include "store/volume.hpp"

using namespace myr;

namespace {

struct Args {
    std::string install_dir, state_dir, binary = "otelcol-contrib", op;
    std::map<std::string, std::string> opt;
    bool has(const std::string& k) const { return opt.count(k) != 0; }
    std::string get(const std::string& k, const std::string& def = "") const {
        auto it = opt.find(k);
        return it == opt.end() ? def : it->second;
    }
};

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "volume-driver: %s\n", msg.c_str());
    std::exit(1);
}

Args parse_args(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string s = argv[i];
        if (s.rfind("--", 0) == 0) {
            std::string key = s.substr(2);
            bool flag = key == "staged" || key == "version-failed" || key == "print-state";
            std::string val;
            if (!flag) {
                if (i + 1 >= argc) die("missing value for " + s);
                val = argv[++i];
            }
            if (key == "install-dir") {
                a.install_dir = val;
            } else if (key == "state-dir") {
                a.state_dir = val;
            } else if (key == "binary") {
                a.binary = val;
            } else {
                a.opt[key] = val;
            }
        } else if (a.op.empty()) {
            a.op = s;
        } else {
            die("unexpected argument " + s);
        }
    }
    if (a.install_dir.empty() || a.state_dir.empty() || a.op.empty()) {
        die("usage: volume-driver --install-dir D --state-dir S <op> [options]");
    }
    return a;
}

// Runs `path --version` with a timeout, capturing stdout (what the container command does with
// proc::run_capture on the loop).
bool run_version(const std::string& path, std::string* out) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return false;
    pid_t pid = ::fork();
    if (pid < 0) return false;
    if (pid == 0) {
        ::dup2(p[1], 1);
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0) ::dup2(devnull, 0);
        ::execl(path.c_str(), path.c_str(), "--version", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(p[1]);
    timespec start{};
    ::clock_gettime(CLOCK_MONOTONIC, &start);
    char buf[4096];
    bool timed_out = false;
    for (;;) {
        timespec now{};
        ::clock_gettime(CLOCK_MONOTONIC, &now);
        long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        if (elapsed > 5000) {
            timed_out = true;
            break;
        }
        pollfd pf{p[0], POLLIN, 0};
        int r = ::poll(&pf, 1, 100);
        if (r <= 0) continue;
        ssize_t n = ::read(p[0], buf, sizeof buf);
        if (n <= 0) break;
        if (out->size() < 65536) out->append(buf, static_cast<size_t>(n));
    }
    ::close(p[0]);
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return !timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

json_object* str(const std::string& s) {
    return json_object_new_string(s.c_str());
}

void print(json_object* o) {
    std::printf("%s\n", json_object_to_json_string_ext(
                            o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
}

bool is_temp_name(const std::string& n) {
    size_t pos = n.rfind(".tmp-");
    return n.size() > 1 && n[0] == '.' && pos != std::string::npos && n.size() - pos == 11;
}

void add_temps(int dirfd, const std::string& where, json_object* arr) {
    auto names = fsx::list_dir(dirfd);
    if (!names) return;
    for (const auto& n : *names) {
        if (is_temp_name(n)) json_object_array_add(arr, str(where + n));
    }
}

json_object* recovery_json(const journal::Recovery& r) {
    json_object* o = json_object_new_object();
    const char* kinds[] = {"absent", "ok", "corrupt"};
    json_object_object_add(o, "journal", str(kinds[static_cast<int>(r.journal)]));
    json_object_object_add(o, "op", str(r.record ? journal::to_string(r.record->op) : ""));
    json_object_object_add(o, "phase", str(r.record ? r.record->phase : ""));
    json_object_object_add(o, "action", str(r.action));
    json_object_object_add(o, "updateInterrupted", json_object_new_boolean(r.update_interrupted));
    json_object_object_add(o, "movedAside", str(r.moved_aside));
    json_object_object_add(o, "stagingRemoved", json_object_new_int(r.staging_removed));
    json_object_object_add(o, "tempRemoved", json_object_new_int(r.temp_removed));
    return o;
}

json_object* seed_json(const journal::SeedOutcome& s) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "activated", json_object_new_boolean(s.activated));
    json_object_object_add(o, "rule", str(store::to_string(s.rule)));
    json_object_object_add(o, "imageVersion", str(s.image_version));
    json_object_object_add(o, "activeVersion", str(s.active_version));
    json_object_object_add(o, "previousVersion", str(s.previous_version));
    json_object_object_add(o, "reused", json_object_new_boolean(s.reused));
    return o;
}

Result<journal::SeedOutcome> do_seed(const Args& a, const store::Volume& vol, journal::Journal& j) {
    journal::SeedInput in;
    in.image_path = a.get("image");
    if (in.image_path.empty()) die("seed: --image is required");
    std::string policy = a.get("policy", "newest");
    if (policy != "newest" && policy != "image") die("seed: bad --policy " + policy);
    in.policy = policy == "image" ? store::SeedPolicy::image : store::SeedPolicy::newest;
    in.keep_versions = static_cast<uint32_t>(std::stoul(a.get("keep", "2")));
    if (a.has("version-output")) {
        in.version_output = a.get("version-output");
        in.version_ok = !a.has("version-failed");
    } else {
        in.version_ok = run_version(in.image_path, &in.version_output) && !a.has("version-failed");
    }
    return journal::seed(vol, j, in);
}

json_object* state_json(const Args& a, const store::Volume& vol, const journal::Journal& j) {
    json_object* o = json_object_new_object();
    auto link = fsx::read_link_at(vol.root_fd(), "current");
    json_object_object_add(o, "current", link ? str(*link) : nullptr);
    auto target = store::current_target(vol);
    json_object_object_add(o, "currentVersion", str(target ? *target : ""));
    auto act = store::active(vol);
    json_object* ao = json_object_new_object();
    if (act) {
        json_object_object_add(ao, "state", str(store::to_string(act->state)));
        json_object_object_add(ao, "version", str(act->version));
        json_object_object_add(ao, "reason", str(act->reason));
        if (act->marker) {
            json_object_object_add(ao, "source", str(store::to_string(act->marker->source)));
            json_object_object_add(ao, "previousVersion", str(act->marker->previous_version));
            json_object_object_add(ao, "sha256", str(act->marker->sha256));
        }
    } else {
        json_object_object_add(ao, "state", str("error"));
        json_object_object_add(ao, "reason", str(act.error().message()));
    }
    json_object_object_add(o, "active", ao);
    auto loaded = j.load();
    const char* kinds[] = {"absent", "ok", "corrupt"};
    json_object_object_add(o, "journal",
                           str(loaded ? kinds[static_cast<int>(loaded->kind)] : "error"));
    if (loaded && loaded->kind == journal::Loaded::Kind::ok) {
        json_object_object_add(o, "journalOp", str(journal::to_string(loaded->record.op)));
        json_object_object_add(o, "journalPhase", str(loaded->record.phase));
    }
    json_object* staging = json_object_new_array();
    if (auto names = fsx::list_dir(vol.staging_fd())) {
        for (const auto& n : *names) json_object_array_add(staging, str(n));
    }
    json_object_object_add(o, "staging", staging);
    json_object* temps = json_object_new_array();
    add_temps(vol.root_fd(), "", temps);
    add_temps(j.dir_fd(), "state/", temps);
    json_object* versions = json_object_new_object();
    if (auto names = fsx::list_dir(vol.versions_fd())) {
        for (const auto& n : *names) {
            json_object_object_add(versions, n.c_str(),
                                   json_object_new_boolean(store::intact(vol, n)));
            if (auto d = fsx::open_dir_at(vol.versions_fd(), n)) {
                add_temps(d->get(), "versions/" + n + "/", temps);
            }
        }
    }
    json_object_object_add(o, "temps", temps);
    json_object_object_add(o, "versions", versions);
    json_object* aside = json_object_new_array();
    if (auto names = fsx::list_dir(j.dir_fd())) {
        for (const auto& n : *names) {
            if (n.rfind("journal.json.corrupt-", 0) == 0) json_object_array_add(aside, str(n));
        }
    }
    json_object_object_add(o, "corruptJournals", aside);
    (void)a;
    return o;
}

// An update as the installer journals it (update.md): staging, swapping, health-checking, commit.
Status do_activate(const Args& a, const store::Volume& vol, journal::Journal& j) {
    std::string file = a.get("file"), version = a.get("version");
    if (file.empty() || version.empty()) die("activate: --file and --version are required");
    UniqueFd src(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!src) return fail_errno("open " + file);
    std::string sha = a.get("sha256");
    if (sha.empty()) {
        auto d = hash::sha256_fd(src.get());
        if (!d) return d.fail("hash " + file);
        sha = hash::to_hex(*d);
    }
    auto from = store::current_target(vol);
    if (!from) return from.fail();
    journal::Record rec =
        journal::begin(journal::Op::update, *from, version, std::string(journal::phase::staging));
    MYR_TRY(j.write(rec), "activate");
    store::ActivateRequest req;
    req.version = version;
    req.source = store::Source::update;
    req.expected_sha256 = sha;
    if (a.has("staged")) {
        // The installer extracts the archive member into a staging directory of its own.
        auto st = store::create_staging(vol);
        if (!st) return st.fail("activate");
        if (::lseek(src.get(), 0, SEEK_SET) < 0) return fail_errno("seek");
        auto copied = fsx::copy_file_atomic(src.get(), st->fd.get(), vol.binary(), 0600);
        if (!copied) return copied.fail("extract");
        req.staged_id = st->id;
    } else {
        req.image_fd = src.get();
    }
    // The installer's phases (update::phase, its state names); the journal stores them as text.
    rec.phase = "swapping";
    MYR_TRY(j.write(rec), "activate");
    auto done = store::activate(vol, req);
    if (!done) {
        MYR_TRY(j.clear(), "activate");
        return done.fail();
    }
    rec.phase = "health-checking";
    MYR_TRY(j.write(rec), "activate");
    MYR_TRY(j.clear(), "commit");
    auto collected = store::gc(vol, static_cast<uint32_t>(std::stoul(a.get("keep", "2"))));
    if (!collected) return collected.fail();
    return {};
}

}  // namespace

int main(int argc, char** argv) {
    Args a = parse_args(argc, argv);
    log::configure(log::Level::info, log::Format::text);
    auto vol = store::Volume::open(a.install_dir, a.binary);
    if (!vol) die(vol.error().message());
    auto state = statedir::StateDir::open(a.state_dir);
    if (!state) die(state.error().message());
    auto j = std::make_optional<journal::Journal>(*state);

    if (a.op == "state") {
        print(state_json(a, *vol, *j));
        return 0;
    }
    if (a.op == "recover" || a.op == "start") {
        // The downloader owns the spool; recovery tidies it as the product's start does (a
        // download's own `<hex>` files stay for a resume; the leftovers planted here all go).
        auto r = journal::recover(*vol, *j, [&] { return download::tidy_spool(*state); });
        if (!r) die(r.error().message());
        json_object* o = json_object_new_object();
        json_object_object_add(o, "recovery", recovery_json(*r));
        if (a.op == "start") {
            auto s = do_seed(a, *vol, *j);
            if (!s) {
                json_object_put(o);
                die(s.error().message());
            }
            json_object_object_add(o, "seed", seed_json(*s));
        }
        print(o);
        // With --print-state, the `state` document follows on a second line (saves a run per
        // crash case).
        if (a.has("print-state")) print(state_json(a, *vol, *j));
        return 0;
    }
    if (a.op == "seed") {
        auto s = do_seed(a, *vol, *j);
        if (!s) die(s.error().message());
        print(seed_json(*s));
        return 0;
    }
    if (a.op == "activate") {
        Status s = do_activate(a, *vol, *j);
        if (!s) die(s.error().message());
        print(json_object_new_object());
        return 0;
    }
    if (a.op == "rollback") {
        auto r = journal::rollback(*vol, *j);
        if (!r) die(r.error().message());
        json_object* o = json_object_new_object();
        json_object_object_add(o, "activeVersion", str(*r));
        print(o);
        return 0;
    }
    if (a.op == "gc") {
        auto g = journal::gc(*vol, *j, static_cast<uint32_t>(std::stoul(a.get("keep", "2"))));
        if (!g) die(g.error().message());
        json_object* o = json_object_new_object();
        json_object* removed = json_object_new_array();
        for (const auto& n : g->removed) json_object_array_add(removed, str(n));
        json_object_object_add(o, "removed", removed);
        print(o);
        return 0;
    }
    die("unknown op " + a.op);
}
