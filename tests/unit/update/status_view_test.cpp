#include "update/status_view.hpp"

#include <doctest/doctest.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "harness.hpp"
#include "update/state_files.hpp"

using namespace myr;
using namespace myr::update;
using myr::test::TempDir;
using namespace std::chrono_literals;

namespace {

const WallTime kNow = WallTime(std::chrono::seconds(1'800'000'000));  // 2027-01-15T08:00:00Z

StatusInputs inputs(const TempDir& tmp) {
    return {tmp / "install", tmp / "state", "otelcol-contrib", 1h, 3, kNow};
}

// A version directory with a binary of `bytes` bytes and its marker.
void plant_version(const TempDir& tmp, const std::string& version, const std::string& bytes,
                   const std::string& previous = "") {
    const std::string d = tmp / ("install/versions/" + version);
    test::run({"mkdir", "-p", d});
    test::write_file(d + "/otelcol-contrib", bytes, 0755);
    store::Marker m;
    m.version = version;
    m.binary = "otelcol-contrib";
    m.sha256 = std::string(64, 'a');  // status does not hash
    m.size = bytes.size();
    m.source = store::Source::update;
    m.previous_version = previous;
    m.installed_at = "2027-01-15T07:00:00Z";
    test::write_file(d + "/install.json", store::render_marker(m));
}

json_object* member(json_object* o, const char* key) {
    json_object* v = nullptr;
    return json_object_object_get_ex(o, key, &v) ? v : nullptr;
}

}  // namespace

TEST_CASE("status: quarantine_end is the failure's time plus quarantineFor, or never") {
    Attempt a;
    a.at = "2027-01-15T07:30:00Z";
    auto end = quarantine_end(a, 1h);
    REQUIRE(end);
    CHECK(format_rfc3339(*end) == "2027-01-15T08:30:00Z");
    CHECK_FALSE(quarantine_end(a, Duration::zero()));
    a.at = "yesterday";  // an edited file: until the offer changes
    CHECK_FALSE(quarantine_end(a, 1h));
}

TEST_CASE("status: reads versions, current, previous, trial and quarantine; writes nothing") {
    TempDir tmp;
    plant_version(tmp, "0.116.0", "old binary");
    plant_version(tmp, "0.117.0", "new binary", "0.116.0");
    test::run({"ln", "-s", "versions/0.117.0", tmp / "install/current"});
    test::run({"mkdir", "-p", tmp / "state/spool"});
    test::write_file(tmp / "state/spool/abc.part", std::string(2048, 'x'));
    journal::Record r = journal::begin(journal::Op::update, "0.116.0", "0.117.0", "trial");
    r.trial_until = 1'800'000'300;
    r.boots = 1;
    test::write_file(tmp / "state/journal.json", journal::render(r));
    Attempt a{std::string(64, 'b'), "0.118.0", Outcome::rolled_back, "health check failed",
              "2027-01-15T07:30:00Z"};
    test::write_file(tmp / "state/last-attempt.json", render_attempt(a));

    StatusView v = read_status(inputs(tmp));
    CHECK(v.problems.empty());
    REQUIRE(v.versions.size() == 2);
    CHECK(v.versions[1].marker->size == 10);
    CHECK(v.current == "0.117.0");
    CHECK(v.current_state == store::Active::State::intact);
    CHECK(v.previous == "0.116.0");
    CHECK(v.on_trial());
    CHECK(v.quarantined());
    REQUIRE(v.spool.size() == 1);
    CHECK(v.spool[0].bytes == 2048);
    // Nothing was created: no .staging, no lock.
    CHECK_FALSE(test::exists(tmp / "install/.staging"));
    CHECK_FALSE(test::exists(tmp / "state/.lock"));

    v.trusted_root_file = "/etc/myriarch/trusted_root.json";
    v.trusted_root_start = 1'800'000'000 - 86400 * 3;
    const std::string text = render_status_text(v);
    CHECK_MESSAGE(text.find("trial         0.117.0 (from 0.116.0) until 2027-01-15T08:05:00Z "
                            "(5m0s left), boots 1 of 3") != std::string::npos,
                  text);
    CHECK_MESSAGE(text.find("quarantined   package bbbb") != std::string::npos, text);
    CHECK_MESSAGE(text.find("until 2027-01-15T08:30:00Z") != std::string::npos, text);
    CHECK_MESSAGE(text.find("age 3d0h") != std::string::npos, text);

    json_object* doc = json_tokener_parse(render_status_json(v).c_str());
    REQUIRE(doc != nullptr);
    CHECK(json_object_get_int(member(doc, "schemaVersion")) == 1);
    json_object* trial = member(member(doc, "state"), "trial");
    CHECK(json_object_get_int(member(trial, "secondsLeft")) == 300);
    CHECK(json_object_get_int64(member(member(doc, "trustedRoot"), "ageSeconds")) == 86400 * 3);
    json_object_put(doc);

    // quarantineFor over: nothing quarantined any more.
    StatusInputs later = inputs(tmp);
    later.now = kNow + 2h;
    CHECK_FALSE(read_status(later).quarantined());
}

TEST_CASE("status: a hostile volume is reported entry by entry and no link is followed") {
    TempDir tmp;
    plant_version(tmp, "0.116.0", "binary");
    test::run({"mkdir", "-p", tmp / "elsewhere", tmp / "state"});
    test::run({"ln", "-s", tmp / "elsewhere", tmp / "install/versions/0.200.0"});
    test::run({"ln", "-s", "/etc", tmp / "install/current"});
    plant_version(tmp, "0.150.0", "x");
    test::write_file(tmp / "install/versions/0.150.0/install.json", "\x01\xff{");
    StatusView v = read_status(inputs(tmp));
    REQUIRE(v.versions.size() == 3);
    CHECK(v.versions[0].marker.has_value());
    CHECK_MESSAGE(v.versions[1].problem.find("install.json") != std::string::npos,
                  v.versions[1].problem);
    CHECK_MESSAGE(v.versions[2].problem.find("refusing symlink") != std::string::npos,
                  v.versions[2].problem);
    CHECK(v.current_state == store::Active::State::broken);
    CHECK(v.problems.size() == 3);
    CHECK(test::list_dir(tmp / "elsewhere").empty());
    // The text stays within 100 columns, one line per fact.
    std::istringstream lines(render_status_text(v));
    for (std::string l; std::getline(lines, l);) CHECK_MESSAGE(l.size() <= 100, l);
}

TEST_CASE("status: a missing volume and state directory are errors that name them") {
    TempDir tmp;
    StatusView v = read_status(inputs(tmp));
    REQUIRE(v.problems.size() == 2);
    CHECK_MESSAGE(v.volume_problem.find(tmp / "install") != std::string::npos, v.volume_problem);
    CHECK_MESSAGE(v.state_problem.find(tmp / "state") != std::string::npos, v.state_problem);
    CHECK_FALSE(test::exists(tmp / "install"));
    CHECK_FALSE(test::exists(tmp / "state"));
}

TEST_CASE("status: a volume filled with entries gives a bounded answer") {
    TempDir tmp;
    test::run({"mkdir", "-p", tmp / "install/versions", tmp / "state"});
    for (int i = 0; i < 100; ++i) {
        const std::string d = tmp / ("install/versions/0." + std::to_string(i) + ".0");
        REQUIRE(::mkdir(d.c_str(), 0755) == 0);
    }
    StatusView v = read_status(inputs(tmp));
    CHECK(v.versions.size() == 64);
    REQUIRE(v.problems.size() == 65);  // 64 not intact, and the count of the rest
    CHECK_MESSAGE(v.problems[0].find("100 entries, the first 64 shown") != std::string::npos,
                  v.problems[0]);
}

TEST_CASE("status: a quarantine too long for the clock lasts to its end, never into the past") {
    Attempt a;
    a.at = "2027-01-15T07:30:00Z";
    auto at = parse_rfc3339(a.at);
    REQUIRE(at);
    for (Duration d : {Duration(std::chrono::hours(2562047)), Duration::max()}) {
        auto end = quarantine_end(a, d);
        REQUIRE(end);
        CHECK(*end > *at);
    }
}

TEST_CASE("status: the text form writes out the control characters a state file holds") {
    TempDir tmp;
    plant_version(tmp, "0.116.0", "binary");
    test::run({"ln", "-s", "versions/0.116.0", tmp / "install/current"});
    test::run({"mkdir", "-p", tmp / "state"});
    // ESC [ 31 m (red), a carriage return that would overwrite the line, the 8-bit CSI (U+009B)
    // and DEL, in every string of last-attempt.json.
    const std::string hostile =
        "\x1b[31mred\rover\xc2\x9b"
        "2J\x7f";
    Attempt a{std::string(64, 'b'), "0.117.0" + hostile, Outcome::failed, "why " + hostile,
              "2027-01-15T07:30:00Z" + hostile};
    test::write_file(tmp / "state/last-attempt.json", render_attempt(a));
    StatusView v = read_status(inputs(tmp));
    REQUIRE(v.last_attempt.has_value());
    const std::string text = render_status_text(v);
    INFO(text);
    for (const char* raw : {"\x1b", "\r", "\xc2\x9b", "\x7f"}) {
        CAPTURE(std::string(raw));
        CHECK(text.find(raw) == std::string::npos);
    }
    CHECK(text.find("\\x1b[31mred\\x0dover\\u009b2J\\x7f") != std::string::npos);
}
