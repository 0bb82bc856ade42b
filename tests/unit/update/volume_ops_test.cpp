#include "update/volume_ops.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fault.hpp"
#include "download/spool.hpp"
#include "fake_ports.hpp"
#include "harness.hpp"
#include "hash/sha256.hpp"
#include "journal/recover.hpp"
#include "loop/fake_scheduler.hpp"
#include "store/activate.hpp"
#include "update/installer.hpp"
#include "update/state_files.hpp"

using namespace myr;
using namespace myr::update;
using myr::test::TempDir;

namespace {

const char* kBinary = "otelcol-contrib";

struct VolumeRig {
    TempDir tmp;
    std::string dir = tmp / "collector";
    std::string state = tmp / "state";
    std::shared_ptr<store::Volume> vol =
        std::make_shared<store::Volume>(store::Volume::open(dir, kBinary).value());
    std::shared_ptr<journal::Journal> j =
        std::make_shared<journal::Journal>(statedir::StateDir::open(state).value());
    // Recovery empties the downloader's spool as in the product.
    journal::ClearSpool spool = [this] { return download::clear_spool(j->state()); };
    loop::FakeScheduler sched;
    StoreVolumeOps ops{sched, vol, j, 1};

    VolumeRig() { activate_image("0.116.0"); }

    void activate_image(const std::string& version) {
        std::string src = tmp / ("src-" + version);
        test::write_file(src, "collector " + version, 0755);
        int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
        store::ActivateRequest req;
        req.version = version;
        req.image_fd = fd;
        req.expected_sha256 = hash::to_hex(hash::sha256("collector " + version));
        auto r = store::activate(*vol, req);
        ::close(fd);
        REQUIRE(r);
    }
    // What the stager would leave: `.staging/<id>/<binary>`, 0755.
    std::pair<std::string, std::string> stage(const std::string& version) {
        auto st = store::create_staging(*vol);
        REQUIRE(st);
        std::string bytes = "collector " + version;
        test::write_file(store::staged_binary_path(*vol, st->id), bytes, 0755);
        return {st->id, hash::to_hex(hash::sha256(bytes))};
    }
    std::string current() { return *store::current_target(*vol); }

    Status wait(std::function<std::unique_ptr<Step>(Done)> call) {
        std::optional<Status> got;
        auto step = call([&](Status s) { got = s; });
        CHECK_FALSE(got.has_value());  // never from inside the call
        sched.run_pending();
        REQUIRE(got.has_value());
        return *got;
    }
    Inspection inspect() {
        std::optional<Result<Inspection>> got;
        auto step = ops.inspect([&](Result<Inspection> r) { got.emplace(std::move(r)); });
        sched.run_pending();
        REQUIRE(got.has_value());
        REQUIRE(got->ok());
        return got->value();
    }
    VolumeOps::JournalEntry entry(const std::string& phase) {
        return {phase, "0.116.0", "0.117.0", std::string(64, 'e')};
    }
};

Installed installed_record() {
    Installed in;
    in.all_packages_hash = std::string(32, '\x01');
    in.name = "otelcol-contrib";
    in.version = "0.117.0";
    in.package_hash = std::string(32, '\x02');
    PackageReport p;
    p.name = "otelcol-contrib";
    p.code = Code::installed;
    p.agent_has_version = "0.117.0";
    p.agent_has_hash = std::string(32, '\x02');
    p.offered_version = "0.117.0";
    p.offered_hash = std::string(32, '\x02');
    in.statuses.push_back(p);
    return in;
}

}  // namespace

TEST_CASE("volume ops: inspect names the active version, its previous one and the last attempt") {
    VolumeRig rig;
    Inspection in = rig.inspect();
    CHECK(in.active == "0.116.0");
    CHECK(in.active_intact);
    CHECK(in.previous.empty());
    CHECK_FALSE(in.last_attempt.has_value());
    REQUIRE(store_attempt(rig.j->state(),
                          Attempt{"ab", "0.117.0", Outcome::failed, "signature: bad", "t"}));
    in = rig.inspect();
    REQUIRE(in.last_attempt.has_value());
    CHECK(in.last_attempt->reason == "signature: bad");
}

TEST_CASE("volume ops: inspect names the package hash only while its version is active") {
    VolumeRig rig;
    CHECK(rig.inspect().active_package_hash.empty());
    Installed in = installed_record();  // 0.117.0: not the active 0.116.0
    REQUIRE(store_installed(rig.j->state(), in));
    CHECK(rig.inspect().active_package_hash.empty());
    in.version = "0.116.0";
    REQUIRE(store_installed(rig.j->state(), in));
    CHECK(rig.inspect().active_package_hash == std::string(32, '\x02'));
    // An unreadable packages.json costs only the re-spun rule.
    test::write_file(rig.state + "/packages.json", "{", 0600);
    CHECK(rig.inspect().active_package_hash.empty());
}

TEST_CASE("volume ops: a whole install on a real volume, then commit") {
    VolumeRig rig;
    REQUIRE(rig.wait([&](Done d) { return rig.ops.write_journal(rig.entry("downloading"), d); }));
    auto rec = rig.j->load();
    REQUIRE(rec);
    REQUIRE(rec->kind == journal::Loaded::Kind::ok);
    CHECK(rec->record.phase == "downloading");
    CHECK(rec->record.op == journal::Op::update);
    std::string id = rec->record.id;
    // The first write records which offer is in progress.
    auto att = load_attempt(rig.j->state());
    REQUIRE(att);
    REQUIRE(att->has_value());
    CHECK((*att)->outcome == Outcome::in_progress);
    CHECK((*att)->package_hash_hex == std::string(64, 'e'));
    // A spool file as the downloader would leave it.
    ::mkdir((rig.state + "/spool").c_str(), 0700);
    test::write_file(rig.state + "/spool/" + std::string(64, 'a'), "archive");

    REQUIRE(rig.wait([&](Done d) { return rig.ops.write_journal(rig.entry("swapping"), d); }));
    CHECK(rig.j->load()->record.id == id);  // one id for the whole install
    CHECK(rig.j->load()->record.phase == "swapping");
    auto [staged, sha] = rig.stage("0.117.0");
    REQUIRE(rig.wait([&](Done d) {
        return rig.ops.activate({"0.117.0", staged, sha, "0.116.0"}, d);
    }));
    CHECK(rig.current() == "0.117.0");
    auto marker = store::check_intact(*rig.vol, "0.117.0");
    REQUIRE(marker);
    CHECK(marker->source == store::Source::update);
    CHECK(marker->previous_version == "0.116.0");

    VolumeOps::Finish f;
    f.attempt = Attempt{std::string(64, 'e'), "0.117.0", Outcome::installed, "", "t"};
    f.packages = installed_record();
    f.gc = true;
    REQUIRE(rig.wait([&](Done d) { return rig.ops.finish(f, d); }));
    CHECK(rig.j->load()->kind == journal::Loaded::Kind::absent);
    CHECK(test::list_dir(rig.state + "/spool").empty());
    CHECK(load_attempt(rig.j->state())->value().outcome == Outcome::installed);
    auto pk = load_installed(rig.j->state());
    REQUIRE(pk);
    REQUIRE(pk->has_value());
    CHECK((*pk)->version == "0.117.0");
    CHECK((*pk)->all_packages_hash == std::string(32, '\x01'));
    CHECK((*pk)->package_hash == std::string(32, '\x02'));
    // GC keeps the active version and its previous one.
    CHECK(store::intact(*rig.vol, "0.116.0"));
}

TEST_CASE("volume ops: switch back and a failed install's clean-up") {
    VolumeRig rig;
    REQUIRE(rig.wait([&](Done d) { return rig.ops.write_journal(rig.entry("swapping"), d); }));
    auto [staged, sha] = rig.stage("0.117.0");
    REQUIRE(rig.wait([&](Done d) {
        return rig.ops.activate({"0.117.0", staged, sha, "0.116.0"}, d);
    }));
    REQUIRE(rig.wait([&](Done d) { return rig.ops.switch_back("0.116.0", d); }));
    CHECK(rig.current() == "0.116.0");
    // A second staging, as a failed preflight leaves it.
    auto [left, sha2] = rig.stage("0.118.0");
    (void)sha2;
    VolumeOps::Finish f;
    f.staged_id = left;
    f.attempt = Attempt{"ee", "0.117.0", Outcome::rolled_back, "health check failed", "t"};
    REQUIRE(rig.wait([&](Done d) { return rig.ops.finish(f, d); }));
    CHECK(test::list_dir(rig.dir + "/.staging").empty());
    CHECK(rig.j->load()->kind == journal::Loaded::Kind::absent);
    CHECK(load_attempt(rig.j->state())->value().reason == "health check failed");
    // Only an Installed stores packages.json.
    CHECK_FALSE(load_installed(rig.j->state())->has_value());
}

TEST_CASE("volume ops: switch back refuses a version that is not intact") {
    VolumeRig rig;
    Status st = rig.wait([&](Done d) { return rig.ops.switch_back("0.100.0", d); });
    CHECK_FALSE(st.ok());
    CHECK(rig.current() == "0.116.0");
}

TEST_CASE("volume ops: finish keeping the journal leaves it for recovery") {
    VolumeRig rig;
    REQUIRE(rig.wait([&](Done d) { return rig.ops.write_journal(rig.entry("rolling-back"), d); }));
    VolumeOps::Finish f;
    f.clear_journal = false;
    REQUIRE(rig.wait([&](Done d) { return rig.ops.finish(f, d); }));
    CHECK(rig.j->load()->kind == journal::Loaded::Kind::ok);
}

TEST_CASE("recovery of an update: an unproven swap goes back, and the attempt says interrupted") {
    for (const char* phase : {"swapping", "starting", "health-checking", "rolling-back"}) {
        CAPTURE(phase);
        VolumeRig rig;
        REQUIRE(
            rig.wait([&](Done d) { return rig.ops.write_journal(rig.entry("downloading"), d); }));
        REQUIRE(rig.wait([&](Done d) { return rig.ops.write_journal(rig.entry(phase), d); }));
        auto [staged, sha] = rig.stage("0.117.0");
        REQUIRE(rig.wait([&](Done d) {
            return rig.ops.activate({"0.117.0", staged, sha, "0.116.0"}, d);
        }));
        REQUIRE(rig.current() == "0.117.0");
        // A hard kill here; the next start:
        auto rec = journal::recover(*rig.vol, *rig.j, rig.spool);
        REQUIRE(rec);
        CHECK(rig.current() == "0.116.0");
        CHECK(rec->update_interrupted);
        auto att = record_recovery(rig.j->state(), *rec, "2026-12-01T20:00:00Z");
        REQUIRE(att);
        REQUIRE(att->has_value());
        CHECK((*att)->outcome == Outcome::interrupted);
        CHECK((*att)->package_hash_hex == std::string(64, 'e'));
        CHECK((*att)->reason == std::string("interrupted while ") + phase +
                                    "; recovery: switched current to 0.116.0");
        CHECK(load_attempt(rig.j->state())->value() == **att);
    }
}

TEST_CASE(
    "recovery of an update: restarts while the new version ran are counted, then quarantine") {
    // A version that kills the container while it is checked: each start recovers the swap and
    // the server offers it again. Restarts before the swap count nothing; at the third restart
    // during health-checking (update.trialMaxBoots 3) the package is rolled back for good.
    VolumeRig rig;
    auto install_and_die = [&](const char* phase) {
        StoreVolumeOps ops{rig.sched, rig.vol, rig.j, 1};  // a new process: a new install
        REQUIRE(rig.wait([&](Done d) { return ops.write_journal(rig.entry("downloading"), d); }));
        REQUIRE(rig.wait([&](Done d) { return ops.write_journal(rig.entry(phase), d); }));
        auto [staged, sha] = rig.stage("0.117.0");
        REQUIRE(rig.wait([&](Done d) {
            return ops.activate({"0.117.0", staged, sha, "0.116.0"}, d);
        }));
        auto rec = journal::recover(*rig.vol, *rig.j, rig.spool);
        REQUIRE(rec);
        CHECK(rig.current() == "0.116.0");
        auto att = record_recovery(rig.j->state(), *rec, "t", 3);
        REQUIRE(att);
        REQUIRE(att->has_value());
        CHECK(load_attempt(rig.j->state())->value() == **att);
        return **att;
    };
    Attempt a = install_and_die("swapping");
    CHECK(a.outcome == Outcome::interrupted);
    CHECK(a.restarts == 0);
    for (int64_t n = 1; n <= 2; ++n) {
        a = install_and_die("health-checking");
        CHECK(a.outcome == Outcome::interrupted);
        CHECK(a.restarts == n);
        CHECK_FALSE(quarantines(a));
    }
    a = install_and_die("starting");
    CHECK(a.outcome == Outcome::rolled_back);
    CHECK(a.cls == FailureClass::deterministic);
    CHECK(quarantines(a));
    CHECK(a.restarts == 3);
    CHECK(a.package_hash_hex == std::string(64, 'e'));
    CHECK(a.reason ==
          "rolled back: the updater restarted 3 times while 0.117.0 was started or checked "
          "(update.trialMaxBoots 3); interrupted while starting; recovery: switched current to "
          "0.116.0");
    // Another package starts its own count.
    CHECK(parse_attempt(render_attempt(a)).value() == a);
}

TEST_CASE("recovery of an update before the swap: staging and spool cleaned, current unchanged") {
    VolumeRig rig;
    REQUIRE(rig.wait([&](Done d) { return rig.ops.write_journal(rig.entry("preflight"), d); }));
    rig.stage("0.117.0");
    ::mkdir((rig.state + "/spool").c_str(), 0700);
    test::write_file(rig.state + "/spool/x.part", "partial");
    auto rec = journal::recover(*rig.vol, *rig.j, rig.spool);
    REQUIRE(rec);
    CHECK(rig.current() == "0.116.0");
    CHECK(test::list_dir(rig.dir + "/.staging").empty());
    CHECK(test::list_dir(rig.state + "/spool").empty());
    CHECK(record_recovery(rig.j->state(), *rec, "t")->value().reason ==
          "interrupted while preflight; recovery: kept current at 0.116.0");
}

TEST_CASE("state files: a corrupt last-attempt.json is an error, never trusted in part") {
    VolumeRig rig;
    test::write_file(rig.state + "/last-attempt.json", "{\"version\":\"0.117.0\"}");
    auto a = load_attempt(rig.j->state());
    CHECK_FALSE(a.ok());
    CHECK(a.error().message().find("packageHash: missing") != std::string::npos);
    // An outcome outside the file's words (the enum cannot hold one: edit the rendered text).
    std::string text = render_attempt(Attempt{"", "0.1.0", Outcome::failed, "", ""});
    text.replace(text.find("\"failed\""), 8, "\"exploded\"");
    test::write_file(rig.state + "/last-attempt.json", text);
    CHECK_FALSE(load_attempt(rig.j->state()).ok());
    // inspect ignores it rather than failing the install.
    CHECK_FALSE(rig.inspect().last_attempt.has_value());
}

TEST_CASE("volume ops: each journaled state's entry has fault points before and after the write") {
    VolumeRig rig;
    ::setenv("MYRIARCH_FAULT", "update.swapping.before:fail", 1);
    fault::reload();
    Status st = rig.wait([&](Done d) { return rig.ops.write_journal(rig.entry("swapping"), d); });
    CHECK_FALSE(st.ok());
    CHECK(st.error().code() == Errc::injected);
    CHECK(rig.j->load()->kind == journal::Loaded::Kind::absent);  // before: nothing written
    ::setenv("MYRIARCH_FAULT", "update.swapping.after:fail", 1);
    fault::reload();
    st = rig.wait([&](Done d) { return rig.ops.write_journal(rig.entry("swapping"), d); });
    CHECK_FALSE(st.ok());
    CHECK(rig.j->load()->record.phase == "swapping");  // after: the journal is on disk
    ::unsetenv("MYRIARCH_FAULT");
    fault::reload();
}

namespace {

// The stager as the real one leaves things: the binary in a fresh `.staging/<id>/` of the store.
class DiskStager : public Stager {
  public:
    DiskStager(loop::FakeScheduler& s, store::Volume& v) : sched_(s), vol_(v) {}
    std::unique_ptr<Step> stage(std::string, Callback<Staged> done) override {
        auto st = store::create_staging(vol_);
        REQUIRE(st);
        std::string bytes = "collector 0.117.0";
        std::string path = store::staged_binary_path(vol_, st->id);
        test::write_file(path, bytes, 0755);
        Staged out{st->id, path, hash::to_hex(hash::sha256(bytes)), bytes.size()};
        auto alive = std::make_shared<bool>(true);
        sched_.post([alive, done, out] {
            if (*alive) done(out);
        });
        return std::make_unique<testing::FakeStep>(alive);
    }

  private:
    loop::FakeScheduler& sched_;
    store::Volume& vol_;
};

struct EndToEnd {
    VolumeRig v;
    testing::Trace trace;
    testing::FakeFetcher fetcher{v.sched, trace};
    testing::FakeVerifier verifier{v.sched, trace};
    DiskStager stager{v.sched, *v.vol};
    testing::FakePreflight preflight{v.sched, trace};
    testing::FakeService service{v.sched, trace};
    testing::FakeHealth health{v.sched, trace};
    std::unique_ptr<Installer> inst;
    EndToEnd() {
        Settings s;
        s.require_signature = false;
        s.health_interval = std::chrono::seconds(1);
        s.health_timeout = std::chrono::seconds(10);
        s.collector_health_url = Url{"http", "127.0.0.1", 13133, "/"};
        s.trial_period = Duration(0);  // installer_test.cpp covers the trial
        inst = std::make_unique<Installer>(v.sched, ports(), s, nullptr);
        inst->set_active("0.116.0");
    }
    Ports ports() { return Ports{fetcher, verifier, stager, preflight, service, v.ops, health}; }
    // What a restarted container gives the installer (health rounds do not matter there).
    static Settings restart_settings() {
        Settings s;
        s.require_signature = false;
        return s;
    }
    Offer offer() {
        OfferedPackage p;
        p.name = "otelcol-contrib";
        p.version = "0.117.0";
        p.hash = std::string(32, 'p');
        p.file = OfferedFile{"https://artifacts.example/x.tar.gz", std::string(32, 'a'), "", {}};
        Offer o;
        o.packages.push_back(p);
        o.all_packages_hash = "all";
        return o;
    }
    void settle() {
        for (int i = 0; i < 200; ++i) {
            v.sched.run_pending();
            if (inst->state() == State::idle) return;
            v.sched.advance(std::chrono::milliseconds(500));
        }
    }
};

}  // namespace

TEST_CASE("installer over the real volume: a good install leaves the new version active") {
    EndToEnd e;
    e.inst->offer(e.offer());
    e.settle();
    REQUIRE(e.inst->state() == State::idle);
    CHECK(e.inst->report().packages[0].code == Code::installed);
    CHECK(e.v.current() == "0.117.0");
    auto m = store::check_intact(*e.v.vol, "0.117.0");
    REQUIRE(m);
    CHECK(m->source == store::Source::update);
    CHECK(m->previous_version == "0.116.0");
    CHECK(e.v.j->load()->kind == journal::Loaded::Kind::absent);
    CHECK(test::list_dir(e.v.dir + "/.staging").empty());
    CHECK(load_attempt(e.v.j->state())->value().outcome == Outcome::installed);
    CHECK(load_installed(e.v.j->state())->value().version == "0.117.0");
}

TEST_CASE("installer over the real volume: a failing health check puts the old version back") {
    EndToEnd e;
    e.health.answer = [&](const Url&) -> Result<int> {
        return e.v.current() == "0.117.0" ? Result<int>(503) : Result<int>(200);
    };
    e.inst->offer(e.offer());
    e.settle();
    REQUIRE(e.inst->state() == State::idle);
    CHECK(e.v.current() == "0.116.0");
    CHECK(e.inst->report().packages[0].code == Code::install_failed);
    CHECK(e.inst->report().packages[0].agent_has_version == "0.116.0");
    CHECK(e.v.j->load()->kind == journal::Loaded::Kind::absent);
    auto a = load_attempt(e.v.j->state());
    REQUIRE(a);
    CHECK((*a)->outcome == Outcome::rolled_back);
    CHECK((*a)->reason.find("rolled back to 0.116.0") != std::string::npos);
    CHECK(store::intact(*e.v.vol, "0.117.0"));  // kept for diagnosis until GC
    // The same offer again is refused from last-attempt.json, without a download.
    size_t fetches = e.fetcher.requests.size();
    // A restart: a new installer on the same files.
    e.inst.reset();
    Installer again(e.v.sched, e.ports(), e.restart_settings(), nullptr);
    again.set_active("0.116.0");
    again.offer(e.offer());
    for (int i = 0; i < 20; ++i) e.v.sched.run_pending();
    CHECK(again.report().packages[0].code == Code::install_failed);
    CHECK(again.report().packages[0].error.rfind("quarantined: ", 0) == 0);
    CHECK(e.fetcher.requests.size() == fetches);
}

TEST_CASE("state files: packages.json keeps the statuses and which one is ours, byte for byte") {
    VolumeRig rig;
    Installed in = installed_record();
    PackageReport addon;
    addon.name = "addon";
    addon.code = Code::install_failed;
    addon.error = "unsupported package type";
    addon.offered_version = "1.0.0";
    in.statuses.insert(in.statuses.begin(), addon);
    in.top_index = 1;
    REQUIRE(store_installed(rig.j->state(), in));
    auto back = load_installed(rig.j->state());
    REQUIRE(back);
    REQUIRE(back->has_value());
    CHECK(**back == in);
}

TEST_CASE(
    "state files: a packages.json from before the statuses were stored still names the "
    "installed package") {
    VolumeRig rig;
    test::write_file(rig.state + "/packages.json",
                     "{\"allPackagesHash\":\"0101\",\"name\":\"otelcol-contrib\",\"version\":"
                     "\"0.117.0\",\"packageHash\":\"0202\"}\n");
    auto back = load_installed(rig.j->state());
    REQUIRE(back);
    REQUIRE(back->has_value());
    CHECK((*back)->version == "0.117.0");
    CHECK((*back)->all_packages_hash == "\x01\x01");
    CHECK((*back)->statuses.empty());
}

TEST_CASE("state files: a packages.json with a bad status or index is refused with the field") {
    VolumeRig rig;
    std::string good = render_installed(installed_record());
    auto refused = [&](const std::string& text, const std::string& why) {
        test::write_file(rig.state + "/packages.json", text);
        auto r = load_installed(rig.j->state());
        REQUIRE_FALSE(r.ok());
        CHECK_MESSAGE(r.error().message().find(why) != std::string::npos, r.error().message());
    };
    auto with = [&](const std::string& from, const std::string& to) {
        std::string t = good;
        size_t at = t.find(from);
        REQUIRE(at != std::string::npos);
        return t.replace(at, from.size(), to);
    };
    // Only end states are stored: a status caught half-way is not one the server may be told.
    refused(with("\"status\":\"installed\"", "\"status\":\"downloading\""),
            "statuses[0]: status: not an end state: downloading");
    refused(with("\"topIndex\":0", "\"topIndex\":1"), "topIndex: missing or not an index");
    refused(with("\"offeredHash\":\"", "\"offeredHash\":\"x"), "statuses[0]: offeredHash: not hex");
    refused(good.substr(0, good.size() / 2), "not valid JSON");
}

TEST_CASE(
    "installer over the real volume: after a restart the statuses are reported again and "
    "the same offer is not installed again") {
    EndToEnd e;
    e.inst->offer(e.offer());
    e.settle();
    REQUIRE(e.inst->report().packages.at(0).code == Code::installed);
    const Report before = e.inst->report();
    size_t fetches = e.fetcher.requests.size();
    e.inst.reset();
    // A restart: a new installer on the same files, fed as the container's start feeds it.
    auto stored = load_installed(e.v.j->state());
    REQUIRE(stored);
    REQUIRE(stored->has_value());
    Installer again(e.v.sched, e.ports(), e.restart_settings(), nullptr);
    again.set_active(e.v.current(), (*stored)->package_hash);
    again.restore(**stored);
    CHECK(again.report() == before);  // before any offer, as the first report after connecting
    size_t traced = e.trace.size();
    again.offer(e.offer());
    for (int i = 0; i < 20; ++i) e.v.sched.run_pending();
    CHECK(again.state() == State::idle);
    CHECK(again.report() == before);
    CHECK(e.fetcher.requests.size() == fetches);
    CHECK(e.trace.size() == traced);  // not even Checking
    CHECK(e.v.current() == "0.117.0");
}

TEST_CASE(
    "installer over the real volume: a rollback's InstallFailed survives a restart, with the "
    "all_packages_hash of what was installed before") {
    EndToEnd e;
    e.inst->offer(e.offer());
    e.settle();
    REQUIRE(e.v.current() == "0.117.0");
    e.health.answer = [&](const Url&) -> Result<int> {
        return e.v.current() == "0.118.0" ? Result<int>(503) : Result<int>(200);
    };
    Offer next = e.offer();
    next.packages[0].version = "0.118.0";
    next.packages[0].hash = std::string(32, 'q');
    next.all_packages_hash = "all-2";
    e.inst->offer(next);
    e.settle();
    REQUIRE(e.v.current() == "0.117.0");
    REQUIRE(e.inst->report().packages.at(0).code == Code::install_failed);
    auto stored = load_installed(e.v.j->state());
    REQUIRE(stored);
    REQUIRE(stored->has_value());
    CHECK((*stored)->version == "0.117.0");
    CHECK((*stored)->all_packages_hash == "all");
    REQUIRE((*stored)->statuses.size() == 1);
    CHECK((*stored)->statuses[0].code == Code::install_failed);
    CHECK((*stored)->statuses[0].offered_version == "0.118.0");
    CHECK((*stored)->statuses[0].error.find("rolled back to 0.117.0") != std::string::npos);
    e.inst.reset();
    Installer again(e.v.sched, e.ports(), e.restart_settings(), nullptr);
    again.set_active("0.117.0", (*stored)->package_hash);
    again.restore(**stored);
    REQUIRE(again.report().packages.size() == 1);
    CHECK(again.report().packages[0].code == Code::install_failed);
    CHECK(again.report().packages[0].agent_has_version == "0.117.0");
    CHECK(again.report().all_packages_hash == "all");
    // The failed offer again is refused from last-attempt.json; the installed one again is
    // answered Installed from the volume — neither downloads.
    size_t fetches = e.fetcher.requests.size();
    again.offer(next);
    for (int i = 0; i < 20; ++i) e.v.sched.run_pending();
    CHECK(again.report().packages[0].error.rfind("quarantined: ", 0) == 0);
    again.offer(e.offer());
    for (int i = 0; i < 20; ++i) e.v.sched.run_pending();
    CHECK(again.state() == State::idle);
    CHECK(again.report().packages[0].code == Code::installed);
    CHECK(again.report().packages[0].agent_has_version == "0.117.0");
    CHECK(e.fetcher.requests.size() == fetches);
}

TEST_CASE(
    "recovery during a trial: boots counted, the new version kept, then rolled back with "
    "the offer's hash") {
    VolumeRig rig;
    REQUIRE(rig.wait([&](Done d) { return rig.ops.write_journal(rig.entry("downloading"), d); }));
    auto [staged, sha] = rig.stage("0.117.0");
    REQUIRE(rig.wait([&](Done d) {
        return rig.ops.activate({"0.117.0", staged, sha, "0.116.0"}, d);
    }));
    VolumeOps::JournalEntry trial = rig.entry("trial");
    trial.trial_until = 2000;
    REQUIRE(rig.wait([&](Done d) { return rig.ops.write_journal(trial, d); }));
    VolumeOps::Finish f;
    f.clear_journal = false;
    f.attempt = Attempt{std::string(64, 'e'), "0.117.0", Outcome::installed, "", "t"};
    REQUIRE(rig.wait([&](Done d) { return rig.ops.finish(f, d); }));
    for (int boot = 1; boot <= 2; ++boot) {
        auto rec = journal::recover(*rig.vol, *rig.j, rig.spool, journal::TrialRule{3, 1000});
        REQUIRE(rec);
        REQUIRE(rec->trial);
        CHECK(rec->trial->boots == boot);
        CHECK(rig.current() == "0.117.0");
        CHECK_FALSE(record_recovery(rig.j->state(), *rec, "t")->has_value());
    }
    auto rec = journal::recover(*rig.vol, *rig.j, rig.spool, journal::TrialRule{3, 1000});
    REQUIRE(rec);
    CHECK(rec->trial_rolled_back);
    CHECK(rig.current() == "0.116.0");
    auto att = record_recovery(rig.j->state(), *rec, "t");
    REQUIRE(att);
    REQUIRE(att->has_value());
    CHECK((*att)->outcome == Outcome::rolled_back);
    CHECK((*att)->package_hash_hex == std::string(64, 'e'));
    CHECK((*att)->reason.rfind("rolled back after commit: the updater restarted 3 times during "
                               "the trial of 0.117.0 (update.trialMaxBoots 3); recovery: ",
                               0) == 0);
}

TEST_CASE(
    "state files: the failure class and a lifted quarantine are kept; old files are "
    "deterministic") {
    VolumeRig rig;
    Attempt a{std::string(64, 'e'), "0.117.0", Outcome::failed, "download: HTTP 503", "t"};
    a.cls = FailureClass::transient;
    CHECK(render_attempt(a).find("\"class\":\"transient\"") != std::string::npos);
    CHECK(parse_attempt(render_attempt(a)).value() == a);
    CHECK_FALSE(quarantines(a));
    // Written before issue 23: no class, so a failure is deterministic and quarantines.
    auto old = parse_attempt(
        "{\"packageHash\":\"ee\",\"version\":\"0.117.0\",\"outcome\":"
        "\"rolled-back\",\"reason\":\"health\",\"at\":\"t\"}");
    REQUIRE(old.ok());
    CHECK(old->cls == FailureClass::deterministic);
    CHECK(quarantines(*old));
    // An interrupted install quarantines nothing, whatever it says.
    CHECK_FALSE(quarantines(Attempt{"ee", "0.117.0", Outcome::interrupted, "x", "t"}));

    // forget: another hash lifts nothing, the recorded one is lifted once.
    a.cls = FailureClass::deterministic;
    REQUIRE(store_attempt(rig.j->state(), a).ok());
    CHECK_FALSE(lift_quarantine(rig.j->state(), std::string(64, 'f'), "now").value());
    auto lifted = lift_quarantine(rig.j->state(), a.package_hash_hex, "now");
    REQUIRE(lifted.ok());
    REQUIRE(lifted->has_value());
    CHECK((*lifted)->lifted == "now");
    CHECK(load_attempt(rig.j->state()).value()->lifted == "now");
    CHECK_FALSE(lift_quarantine(rig.j->state(), "", "later").value());
}
