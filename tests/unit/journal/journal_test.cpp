#include "journal/journal.hpp"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "download/spool.hpp"
#include "harness.hpp"
#include "hash/sha256.hpp"
#include "journal/recover.hpp"
#include "journal/seed.hpp"
#include "store/activate.hpp"

using namespace myr;
using myr::test::TempDir;

namespace {

struct Fixture {
    TempDir tmp;
    std::string dir = tmp / "collector";
    std::string state = tmp / "state";
    store::Volume vol = store::Volume::open(dir, "otelcol-contrib").value();
    journal::Journal j{statedir::StateDir::open(state).value()};
    // Recovery empties the downloader's spool as in the product.
    journal::ClearSpool spool = [this] { return download::clear_spool(j.state()); };

    void activate(const std::string& version, const std::string& bytes) {
        std::string src = tmp / ("src-" + version);
        test::write_file(src, bytes, 0755);
        int fd = ::open(src.c_str(), O_RDONLY | O_CLOEXEC);
        store::ActivateRequest req;
        req.version = version;
        req.image_fd = fd;
        req.expected_sha256 = hash::to_hex(hash::sha256(bytes));
        auto r = store::activate(vol, req);
        ::close(fd);
        REQUIRE(r);
    }
    std::string current() { return *store::current_target(vol); }
    void journal(journal::Op op, const std::string& phase, const std::string& from,
                 const std::string& to) {
        REQUIRE(j.write(journal::begin(op, from, to, phase)));
    }
};

}  // namespace

TEST_CASE("journal: render and parse round-trip") {
    auto r = journal::begin(journal::Op::update, "0.115.0", "0.116.0", "swapping");
    r.attempt = 3;
    auto back = journal::parse(journal::render(r));
    REQUIRE(back);
    CHECK(back->id == r.id);
    CHECK(back->id.size() == 36);
    CHECK(back->op == journal::Op::update);
    CHECK(back->phase == "swapping");
    CHECK(back->from == "0.115.0");
    CHECK(back->to == "0.116.0");
    CHECK(back->started_at == r.started_at);
    CHECK(back->attempt == 3);
}

TEST_CASE("journal: unparsable or hostile records are refused") {
    std::string good = journal::render(journal::begin(journal::Op::seed, "", "0.116.0", "staging"));
    auto replace = [&](const std::string& from, const std::string& to) {
        std::string s = good;
        size_t pos = s.find(from);
        REQUIRE(pos != std::string::npos);
        return s.replace(pos, from.size(), to);
    };
    for (const std::string& bad :
         {std::string(""), std::string("{"), std::string("null"), good.substr(0, 20), good + "}",
          replace("\"seed\"", "\"format\""), replace("\"0.116.0\"", "\"../../etc\""),
          replace("\"staging\"", "\"\""), replace("\"attempt\":1", "\"attempt\":0"),
          replace("\"attempt\":1", "\"attempt\":\"1\""), replace("\"op\"", "\"opp\"")}) {
        CAPTURE(bad);
        CHECK_FALSE(journal::parse(bad));
    }
}

TEST_CASE("journal: write, load, clear") {
    Fixture f;
    CHECK(f.j.load()->kind == journal::Loaded::Kind::absent);
    f.journal(journal::Op::rollback, "switching", "0.116.0", "0.115.0");
    auto l = f.j.load();
    REQUIRE(l);
    CHECK(l->kind == journal::Loaded::Kind::ok);
    CHECK(l->record.op == journal::Op::rollback);
    REQUIRE(f.j.clear());
    CHECK(f.j.load()->kind == journal::Loaded::Kind::absent);
    CHECK_FALSE(test::exists(f.state + "/journal.json"));
}

TEST_CASE("recover: a corrupt journal is moved aside and current kept") {
    Fixture f;
    f.activate("0.115.0", "a");
    test::write_file(f.state + "/journal.json", "{\"id\":\"x\", garbage");
    auto r = journal::recover(f.vol, f.j, f.spool);
    REQUIRE(r);
    CHECK(r->journal == journal::Loaded::Kind::corrupt);
    CHECK(r->moved_aside.rfind("journal.json.corrupt-", 0) == 0);
    CHECK(test::read_file(f.state + "/" + r->moved_aside) == "{\"id\":\"x\", garbage");
    CHECK_FALSE(test::exists(f.state + "/journal.json"));
    CHECK(f.current() == "0.115.0");
}

TEST_CASE("recover: a symlink planted as the journal is moved aside, its target untouched") {
    Fixture f;
    std::string outside = f.tmp / "outside";
    test::write_file(outside, "precious");
    REQUIRE(::symlink(outside.c_str(), (f.state + "/journal.json").c_str()) == 0);
    auto r = journal::recover(f.vol, f.j, f.spool);
    REQUIRE(r);
    CHECK(r->journal == journal::Loaded::Kind::corrupt);
    CHECK(test::read_file(outside) == "precious");
    CHECK_FALSE(test::exists(f.state + "/journal.json"));
}

TEST_CASE("recover: a spool leftover without a journal goes too (a crash after a commit)") {
    Fixture f;
    f.activate("0.116.0", "a");
    ::mkdir((f.state + "/spool").c_str(), 0755);
    test::write_file(f.state + "/spool/0123abcd", "a whole artifact");
    auto r = journal::recover(f.vol, f.j, f.spool);
    REQUIRE(r);
    CHECK(r->journal == journal::Loaded::Kind::absent);
    CHECK(r->spool_removed == 1);
    CHECK(test::list_dir(f.state + "/spool").empty());
    CHECK(f.current() == "0.116.0");
}

TEST_CASE("recover: an update cut before the switch leaves current; staging and spool go") {
    Fixture f;
    f.activate("0.115.0", "a");
    f.journal(journal::Op::update, "preflight", "0.115.0", "0.116.0");
    auto st = store::create_staging(f.vol);
    REQUIRE(st);
    test::write_file(f.dir + "/.staging/" + st->id + "/otelcol-contrib", "partial");
    ::mkdir((f.state + "/spool").c_str(), 0755);
    test::write_file(f.state + "/spool/abc.part", "half a download");
    test::write_file(f.state + "/.packages.json.tmp-AbC123", "temp");
    auto r = journal::recover(f.vol, f.j, f.spool);
    REQUIRE(r);
    CHECK(r->update_interrupted);
    CHECK(r->staging_removed == 1);
    CHECK(r->spool_removed == 1);
    CHECK(r->temp_removed == 1);
    CHECK(f.current() == "0.115.0");
    CHECK(f.j.load()->kind == journal::Loaded::Kind::absent);
}

TEST_CASE("recover: an update cut after the switch goes back to from and keeps to on disk") {
    Fixture f;
    f.activate("0.115.0", "a");
    f.activate("0.116.0", "b");
    f.journal(journal::Op::update, "health-checking", "0.115.0", "0.116.0");
    auto r = journal::recover(f.vol, f.j, f.spool);
    REQUIRE(r);
    CHECK(r->update_interrupted);
    CHECK(r->action == "switched current to 0.115.0");
    CHECK(f.current() == "0.115.0");
    CHECK(store::intact(f.vol, "0.116.0"));
}

TEST_CASE("recover: an update whose from is not intact removes current for seeding to decide") {
    Fixture f;
    f.activate("0.115.0", "a");
    f.activate("0.116.0", "b");
    test::write_file(f.dir + "/versions/0.115.0/otelcol-contrib", "changed", 0755);
    f.journal(journal::Op::update, "starting", "0.115.0", "0.116.0");
    auto r = journal::recover(f.vol, f.j, f.spool);
    REQUIRE(r);
    CHECK_FALSE(test::exists(f.dir + "/current"));
}

TEST_CASE("recover: an interrupted rollback is finished") {
    Fixture f;
    f.activate("0.115.0", "a");
    f.activate("0.116.0", "b");
    f.journal(journal::Op::rollback, "switching", "0.116.0", "0.115.0");
    auto r = journal::recover(f.vol, f.j, f.spool);
    REQUIRE(r);
    CHECK(f.current() == "0.115.0");
    CHECK_FALSE(r->update_interrupted);
}

TEST_CASE("recover: an interrupted seed keeps whatever complete version current names") {
    Fixture f;
    f.activate("0.116.0", "b");
    f.journal(journal::Op::seed, "switching", "0.115.0", "0.116.0");
    auto r = journal::recover(f.vol, f.j, f.spool);
    REQUIRE(r);
    CHECK(f.current() == "0.116.0");
    CHECK(f.j.load()->kind == journal::Loaded::Kind::absent);
}

TEST_CASE("seed: refuses to run before recovery while a journal exists") {
    Fixture f;
    f.activate("0.115.0", "a");
    f.journal(journal::Op::update, "swapping", "0.115.0", "0.116.0");
    journal::SeedInput in;
    in.image_path = f.tmp / "src-0.115.0";
    in.version_output = "otelcol-contrib version 0.117.0\n";
    auto r = journal::seed(f.vol, f.j, in);
    REQUIRE_FALSE(r);
    CHECK(r.error().message().find("recovery must run first") != std::string::npos);
    CHECK(f.current() == "0.115.0");
}

TEST_CASE("gc: protects what the journal names and refuses with a corrupt journal") {
    Fixture f;
    f.activate("0.114.0", "x");
    f.activate("0.115.0", "a");
    f.activate("0.116.0", "b");
    f.journal(journal::Op::update, "downloading", "0.116.0", "0.114.0");
    auto r = journal::gc(f.vol, f.j, 0);
    REQUIRE(r);
    CHECK(r->removed.empty());
    CHECK(test::exists(f.dir + "/versions/0.114.0"));
    test::write_file(f.state + "/journal.json", "corrupt");
    CHECK_FALSE(journal::gc(f.vol, f.j, 0));
}

namespace {

// Seeds from an image file holding `bytes` that reports `version`; returns the outcome and how
// many bytes were hashed on the way.
struct Seeded {
    journal::SeedOutcome outcome;
    uint64_t hashed = 0;
};
Seeded seed_from(Fixture& f, const std::string& version, const std::string& bytes,
                 store::SeedPolicy policy) {
    journal::SeedInput in;
    in.image_path = f.tmp / "image";
    test::write_file(in.image_path, bytes, 0755);
    in.version_output = "otelcol-contrib version " + version + "\n";
    in.policy = policy;
    const uint64_t before = hash::bytes_hashed();
    auto r = journal::seed(f.vol, f.j, in);
    REQUIRE_MESSAGE(r, r.error().message());
    return {*r, hash::bytes_hashed() - before};
}

}  // namespace

TEST_CASE("seed: every binary is hashed once at most, and equal ones once together") {
    Fixture f;
    const std::string old_bytes(256 * 1024 + 1, 'o');
    const std::string new_bytes(320 * 1024 + 3, 'n');
    f.activate("0.116.0", old_bytes);

    SUBCASE("newest, the image's version active: the active binary only") {
        auto s = seed_from(f, "0.116.0", old_bytes, store::SeedPolicy::newest);
        CHECK_FALSE(s.outcome.activated);
        CHECK(s.hashed == old_bytes.size());
    }
    SUBCASE("image, the image binary active: one pass for both") {
        auto s = seed_from(f, "0.116.0", old_bytes, store::SeedPolicy::image);
        CHECK_FALSE(s.outcome.activated);
        CHECK(s.outcome.rule == store::Rule::image_policy_current);
        CHECK(s.hashed == old_bytes.size());
    }
    SUBCASE("image, other bytes under the active version: image, active, then the copy") {
        std::string changed = old_bytes;
        changed[7] = 'x';
        auto s = seed_from(f, "0.116.0", changed, store::SeedPolicy::image);
        CHECK(s.outcome.activated);
        CHECK(s.outcome.rule == store::Rule::image_policy);
        CHECK(s.hashed == 3 * old_bytes.size());
        CHECK(store::intact(f.vol, "0.116.0"));
        CHECK(test::read_file(f.dir + "/versions/0.116.0/otelcol-contrib") == changed);
    }
    SUBCASE("newest, a newer image: the active binary, then the image while it is copied") {
        auto s = seed_from(f, "0.117.0", new_bytes, store::SeedPolicy::newest);
        CHECK(s.outcome.activated);
        CHECK(s.outcome.previous_version == "0.116.0");
        CHECK(s.hashed == old_bytes.size() + new_bytes.size());
        CHECK(f.current() == "0.117.0");
        CHECK(store::intact(f.vol, "0.117.0"));
    }
    SUBCASE("image, an older version still on the volume: its directory is reused, not copied") {
        f.activate("0.117.0", new_bytes);
        auto s = seed_from(f, "0.116.0", old_bytes, store::SeedPolicy::image);
        CHECK(s.outcome.activated);
        CHECK(s.outcome.reused);
        // The active 0.117.0, the image (to know it may reuse), versions/0.116.0 (intact?).
        CHECK(s.hashed == new_bytes.size() + 2 * old_bytes.size());
        CHECK(f.current() == "0.116.0");
    }
}

TEST_CASE("recover: a staging or spool leftover that cannot be removed does not stop the start") {
    // A tree deeper than remove_tree goes: once every start failed, a crash loop with `current`
    // intact.
    Fixture f;
    f.activate("0.115.0", "a");
    f.journal(journal::Op::update, "preflight", "0.115.0", "0.116.0");
    auto deep = store::create_staging(f.vol);
    REQUIRE(deep);
    auto plain = store::create_staging(f.vol);
    REQUIRE(plain);
    std::string path = f.dir + "/.staging/" + deep->id;
    for (int i = 0; i < 300; ++i) {
        path += "/d";
        REQUIRE(::mkdir(path.c_str(), 0755) == 0);
    }
    ::mkdir((f.state + "/spool").c_str(), 0755);
    path = f.state + "/spool/deep";
    for (int i = 0; i < 300; ++i, path += "/d") REQUIRE(::mkdir(path.c_str(), 0755) == 0);
    test::write_file(f.state + "/spool/abc.part", "half a download");
    auto r = journal::recover(f.vol, f.j, f.spool);
    REQUIRE(r);
    CHECK(r->staging_removed == 1);  // the plain one
    CHECK(r->spool_removed == 1);    // abc.part
    CHECK(f.current() == "0.115.0");
    CHECK(f.j.load()->kind == journal::Loaded::Kind::absent);
    CHECK(test::exists(f.dir + "/.staging/" + deep->id));  // left, with a warning
    CHECK_FALSE(test::exists(f.dir + "/.staging/" + plain->id));
}

namespace {

// 0.115.0 then 0.116.0 activated, and a journal saying 0.116.0 is on trial until 2000 (Unix
// seconds) after `boots` starts.
void on_trial(Fixture& f, int boots) {
    f.activate("0.115.0", "a");
    f.activate("0.116.0", "b");
    auto rec = journal::begin(journal::Op::update, "0.115.0", "0.116.0", "trial");
    rec.trial_until = 2000;
    rec.boots = boots;
    REQUIRE(f.j.write(rec));
}

}  // namespace

TEST_CASE("recover: a start during a trial counts a boot, keeps the new version and the journal") {
    Fixture f;
    on_trial(f, 1);
    auto r = journal::recover(f.vol, f.j, f.spool, journal::TrialRule{3, 1000});
    REQUIRE(r);
    CHECK_FALSE(r->update_interrupted);
    CHECK_FALSE(r->trial_rolled_back);
    REQUIRE(r->trial);
    CHECK(r->trial->boots == 2);
    CHECK(r->action == "trial of 0.116.0 goes on (boot 2 of 3)");
    CHECK(f.current() == "0.116.0");
    auto kept = f.j.load();
    REQUIRE(kept->kind == journal::Loaded::Kind::ok);
    CHECK(kept->record.boots == 2);
    CHECK(kept->record.trial_until == 2000);
}

TEST_CASE("recover: the start that uses up trialMaxBoots switches back before anything runs") {
    Fixture f;
    on_trial(f, 2);
    auto r = journal::recover(f.vol, f.j, f.spool, journal::TrialRule{3, 1000});
    REQUIRE(r);
    CHECK(r->trial_rolled_back);
    CHECK(r->trial_reason ==
          "rolled back after commit: the updater restarted 3 times during the trial of 0.116.0 "
          "(update.trialMaxBoots 3)");
    CHECK(f.current() == "0.115.0");
    CHECK(store::intact(f.vol, "0.116.0"));  // GC decides later, as after any rollback
    CHECK(f.j.load()->kind == journal::Loaded::Kind::absent);
}

TEST_CASE("recover: a trial whose deadline passed while the updater was down is over") {
    Fixture f;
    on_trial(f, 2);
    auto r = journal::recover(f.vol, f.j, f.spool, journal::TrialRule{3, 2000});
    REQUIRE(r);
    CHECK(r->trial_completed);
    CHECK_FALSE(r->trial_rolled_back);
    CHECK(f.current() == "0.116.0");
    CHECK(f.j.load()->kind == journal::Loaded::Kind::absent);
}

TEST_CASE("journal: a trial's deadline and boots survive render and parse; others have none") {
    auto rec = journal::begin(journal::Op::update, "0.115.0", "0.116.0", "trial");
    rec.trial_until = 1'800'000'600;
    rec.boots = 2;
    auto back = journal::parse(journal::render(rec));
    REQUIRE(back);
    CHECK(back->trial_until == 1'800'000'600);
    CHECK(back->boots == 2);
    auto plain = journal::begin(journal::Op::update, "0.115.0", "0.116.0", "swapping");
    CHECK(journal::render(plain).find("trialUntil") == std::string::npos);
    std::string negative = journal::render(rec);
    negative.replace(negative.find("1800000600"), 10, "-1");
    CHECK_FALSE(journal::parse(negative));
}

TEST_CASE("journal: a trial's boots or deadline beyond what the updater writes is corrupt") {
    auto rec = journal::begin(journal::Op::update, "0.115.0", "0.116.0", "trial");
    rec.trial_until = 1'800'000'600;
    rec.boots = 2;
    const std::string good = journal::render(rec);
    auto with = [&](const std::string& from, const std::string& to) {
        std::string text = good;
        text.replace(text.find(from), from.size(), to);
        return text;
    };
    for (const char* boots : {"9223372036854775807", "1000001"}) {
        auto r = journal::parse(with("\"boots\":2", std::string("\"boots\":") + boots));
        REQUIRE_FALSE(r);
        CHECK(r.error().message().find("boots: out of range") != std::string::npos);
    }
    CHECK(journal::parse(with("\"boots\":2", "\"boots\":1000000")));
    // Past 2262-04-11 no clock of this program holds it (int64 nanoseconds).
    for (const char* until : {"9223372036854775807", "9223372037"}) {
        auto r = journal::parse(with("1800000600", until));
        REQUIRE_FALSE(r);
        CHECK(r.error().message().find("trialUntil: out of range") != std::string::npos);
    }
    CHECK(journal::parse(with("1800000600", "9223372036")));
}

TEST_CASE(
    "recover: a journal whose boots is INT64_MAX is moved aside; no boot is counted past it") {
    Fixture f;
    on_trial(f, 1);
    std::string text = test::read_file(f.state + "/journal.json");
    const std::string from = "\"boots\":1";
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), "\"boots\":9223372036854775807");
    test::write_file(f.state + "/journal.json", text);
    auto r = journal::recover(f.vol, f.j, f.spool, journal::TrialRule{3, 1000});
    REQUIRE(r);
    CHECK(r->journal == journal::Loaded::Kind::corrupt);
    CHECK(r->corrupt_reason.find("boots: out of range") != std::string::npos);
    CHECK_FALSE(r->trial.has_value());
    CHECK(test::read_file(f.state + "/" + r->moved_aside) == text);
    CHECK(f.current() == "0.116.0");
    // The next start finds nothing to recover.
    auto again = journal::recover(f.vol, f.j, f.spool, journal::TrialRule{3, 1000});
    REQUIRE(again);
    CHECK(again->journal == journal::Loaded::Kind::absent);
}
