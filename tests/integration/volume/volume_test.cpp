// The volume through the driver (the same store and journal code as the container command), with
// real fake-otelcol releases whose `--version` is run: the precedence table row by row for both
// policies, hostile volume contents, and ENOSPC during staging.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "volume_support.hpp"

using namespace myr::test;

namespace {

const char* kBin = "otelcol-contrib";

struct Seeded {
    RunResult run;
    std::string rule, active;
    bool activated = false;
};

Seeded seed(const Volume& v, const std::string& image, const std::string& policy) {
    Seeded s;
    s.run = v.driver({"start", "--image", image, "--policy", policy});
    Json j(s.run.out);
    s.rule = j.str("seed.rule");
    s.active = j.str("seed.activeVersion");
    s.activated = j.boolean("seed.activated");
    return s;
}

void must(const RunResult& r) {
    INFO("stdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 0);
}

void check_healthy(const Volume& v, const std::string& reported, const std::string& want) {
    Json st(v.state());
    auto bad = invariant_violations(st, reported);
    for (const auto& b : bad) FAIL_CHECK(b);
    CHECK(st.str("currentVersion") == want);
}

std::string bin_of(const Volume& v, const std::string& version) {
    return v.install + "/versions/" + version + "/" + kBin;
}

const std::vector<std::string> kPolicies = {"newest", "image"};

}  // namespace

TEST_CASE("seed: no version active yet activates the image version, for both policies") {
    for (const auto& policy : kPolicies) {
        CAPTURE(policy);
        Volume v;
        auto s = seed(v, v.release("0.116.0"), policy);
        must(s.run);
        CHECK(s.activated);
        CHECK(s.rule == "no version active yet");
        check_healthy(v, s.active, "0.116.0");
        Json st(v.state());
        CHECK(st.str("active.source") == "image");
        CHECK(st.str("active.previousVersion") == "");
    }
}

TEST_CASE("seed: policy image activates the image over a newer updated version") {
    Volume v;
    std::string b = v.release("0.116.0");
    must(seed(v, b, "newest").run);
    must(v.driver({"activate", "--file", v.release("0.117.0"), "--version", "0.117.0"}));
    auto s = seed(v, b, "image");
    must(s.run);
    CHECK(s.activated);
    CHECK(s.rule == "policy image");
    check_healthy(v, s.active, "0.116.0");
    Json st(v.state());
    CHECK(st.str("active.source") == "image");
    CHECK(st.str("active.previousVersion") == "0.117.0");  // the one-step return stays possible
}

TEST_CASE("seed: policy image keeps the active, intact, image-sourced binary") {
    Volume v;
    std::string b = v.release("0.116.0");
    must(seed(v, b, "image").run);
    auto s = seed(v, b, "image");
    must(s.run);
    CHECK_FALSE(s.activated);
    CHECK(s.rule == "policy image, image binary already active");
    check_healthy(v, s.active, "0.116.0");
}

TEST_CASE("seed: policy image replaces the same version installed by an update") {
    Volume v;
    must(seed(v, v.release("0.115.0"), "newest").run);
    must(v.driver(
        {"activate", "--file", v.release("0.116.0", "health=fail"), "--version", "0.116.0"}));
    std::string image = v.release("0.116.0");
    auto s = seed(v, image, "image");
    must(s.run);
    CHECK(s.activated);
    check_healthy(v, s.active, "0.116.0");
    CHECK(sha256_hex_of(bin_of(v, "0.116.0")) == sha256_hex_of(image));
    Json st(v.state());
    CHECK(st.str("active.source") == "image");
    CHECK(st.str("active.previousVersion") == "0.115.0");
}

TEST_CASE("seed: an active binary missing, not executable or changed activates the image") {
    for (const auto& policy : kPolicies) {
        for (const std::string damage : {"missing", "not executable", "hash differs"}) {
            CAPTURE(policy);
            CAPTURE(damage);
            Volume v;
            std::string image = v.release("0.116.0");
            must(seed(v, v.release("0.117.0"), "newest").run);
            std::string bin = bin_of(v, "0.117.0");
            if (damage == "missing") ::unlink(bin.c_str());
            if (damage == "not executable") ::chmod(bin.c_str(), 0644);
            if (damage == "hash differs") write_file(bin, read_file(bin) + "tampered", 0755);
            auto s = seed(v, image, policy);
            must(s.run);
            CHECK(s.activated);
            CHECK(s.rule == "active version broken");
            check_healthy(v, s.active, "0.116.0");
            Json st(v.state());
            CHECK(st.str("active.previousVersion") == "");  // a broken version is no way back
        }
    }
}

TEST_CASE("seed: policy newest keeps an active version newer than the image") {
    Volume v;
    must(seed(v, v.release("0.116.0"), "newest").run);
    must(v.driver({"activate", "--file", v.release("0.117.0"), "--version", "0.117.0"}));
    auto s = seed(v, v.release("0.116.0"), "newest");
    must(s.run);
    CHECK_FALSE(s.activated);
    CHECK(s.rule == "policy newest, active newer than image");
    check_healthy(v, s.active, "0.117.0");
}

TEST_CASE("seed: policy newest keeps the volume on a tie, even with other bytes") {
    Volume v;
    must(seed(v, v.release("0.116.0"), "newest").run);
    std::string before = sha256_hex_of(bin_of(v, "0.116.0"));
    auto s = seed(v, v.release("v0.116.0", "health=fail"), "newest");  // reports v0.116.0
    must(s.run);
    CHECK_FALSE(s.activated);
    CHECK(s.rule == "policy newest, active equal to image");
    CHECK(sha256_hex_of(bin_of(v, "0.116.0")) == before);
    check_healthy(v, s.active, "0.116.0");
}

TEST_CASE("seed: policy newest activates an image newer than the active version") {
    Volume v;
    must(seed(v, v.release("0.115.0"), "newest").run);
    auto s = seed(v, v.release("0.116.0"), "newest");
    must(s.run);
    CHECK(s.activated);
    CHECK(s.rule == "policy newest, active older than image");
    check_healthy(v, s.active, "0.116.0");
    CHECK(Json(v.state()).str("active.previousVersion") == "0.115.0");
}

TEST_CASE("seed: an active version that is not comparable activates the image, both policies") {
    // Version directories always carry canonical names, so an incomparable active version can
    // only be a `current` that names something else; it counts as broken and the image wins.
    for (const auto& policy : kPolicies) {
        CAPTURE(policy);
        Volume v;
        must(seed(v, v.release("0.115.0"), "newest").run);
        ::rename((v.install + "/versions/0.115.0").c_str(),
                 (v.install + "/versions/latest").c_str());
        ::unlink((v.install + "/current").c_str());
        REQUIRE(::symlink("versions/latest", (v.install + "/current").c_str()) == 0);
        auto s = seed(v, v.release("0.116.0"), policy);
        must(s.run);
        CHECK(s.activated);
        check_healthy(v, s.active, "0.116.0");
    }
}

TEST_CASE("seed: --version failing keeps an intact active version, both policies") {
    for (const auto& policy : kPolicies) {
        for (const std::string mode : {"garbage", "empty", "fail"}) {
            CAPTURE(policy);
            CAPTURE(mode);
            Volume v;
            must(seed(v, v.release("0.115.0"), "newest").run);
            auto s = seed(v, v.release("0.116.0", "version_output=" + mode), policy);
            must(s.run);
            CHECK_FALSE(s.activated);
            CHECK(s.rule == "image version unknown, active kept");
            check_healthy(v, s.active, "0.115.0");
        }
    }
}

TEST_CASE("seed: --version failing with nothing active fails the start, both policies") {
    for (const auto& policy : kPolicies) {
        CAPTURE(policy);
        Volume v;
        auto s = seed(v, v.release("0.116.0", "version_output=garbage"), policy);
        CHECK(s.run.exit_code == 1);
        CHECK(s.run.err.find("no intact version is active") != std::string::npos);
        Json st(v.state());
        CHECK(st.str("active.state") == "none");
    }
}

TEST_CASE("seed: a hanging --version is cut off and the active version kept") {
    Volume v;
    must(seed(v, v.release("0.115.0"), "newest").run);
    auto s = seed(v, v.release("0.116.0", "version_output=hang"), "newest");
    must(s.run);
    CHECK_FALSE(s.activated);
    check_healthy(v, s.active, "0.115.0");
}

TEST_CASE(
    "hostile volume: every planted entry ends with the image binary, nothing outside touched") {
    const std::vector<std::string> cases = {"current to an outside directory",
                                            "current to a missing version",
                                            "current a file",
                                            "current a directory",
                                            "current escaping with ..",
                                            "marker garbage",
                                            "marker huge",
                                            "binary a symlink",
                                            "staging a symlink",
                                            "version directory a symlink"};
    for (const auto& c : cases) {
        CAPTURE(c);
        Volume v;
        std::string outside = v.tmp / "outside";
        ::mkdir(outside.c_str(), 0755);
        write_file(outside + "/" + kBin, read_file(v.release("0.999.0")), 0755);
        write_file(outside + "/install.json", "{}");
        std::string outside_digest = tree_digest(outside);
        must(seed(v, v.release("0.115.0"), "newest").run);
        std::string cur = v.install + "/current";
        std::string ver = v.install + "/versions/0.115.0";
        if (c.rfind("current", 0) == 0) ::unlink(cur.c_str());
        if (c == "current to an outside directory")
            REQUIRE(::symlink(outside.c_str(), cur.c_str()) == 0);
        if (c == "current to a missing version")
            REQUIRE(::symlink("versions/0.200.0", cur.c_str()) == 0);
        if (c == "current a file") write_file(cur, "versions/0.115.0");
        if (c == "current a directory") REQUIRE(::mkdir(cur.c_str(), 0755) == 0);
        if (c == "current escaping with ..") {
            REQUIRE(::symlink("versions/../../../outside", cur.c_str()) == 0);
        }
        if (c == "marker garbage") write_file(ver + "/install.json", "\x7f garbage {{{");
        if (c == "marker huge") write_file(ver + "/install.json", std::string(4 << 20, ' ') + "{}");
        if (c == "binary a symlink") {
            ::unlink((ver + "/" + kBin).c_str());
            REQUIRE(::symlink((outside + "/" + kBin).c_str(), (ver + "/" + kBin).c_str()) == 0);
        }
        if (c == "staging a symlink") {
            remove_tree(v.install + "/.staging");
            REQUIRE(::symlink(outside.c_str(), (v.install + "/.staging").c_str()) == 0);
        }
        if (c == "version directory a symlink") {
            remove_tree(ver);
            REQUIRE(::symlink(outside.c_str(), ver.c_str()) == 0);
        }
        auto s = seed(v, v.release("0.116.0"), "newest");
        must(s.run);
        // Policy newest with a newer image: activation must go through (a replaced .staging).
        CHECK(s.activated);
        check_healthy(v, s.active, "0.116.0");
        CHECK(tree_digest(outside) == outside_digest);
    }
}

TEST_CASE(
    "journal: a corrupt journal is moved aside and the image binary replaces a broken active") {
    Volume v;
    must(seed(v, v.release("0.115.0"), "newest").run);
    write_file(bin_of(v, "0.115.0"), "broken", 0755);
    write_file(v.state_dir + "/journal.json", "{\"op\":\"update\",\"phase\":");
    auto s = seed(v, v.release("0.115.0"), "newest");
    must(s.run);
    Json out(s.run.out);
    CHECK(out.str("recovery.journal") == "corrupt");
    CHECK(s.activated);
    check_healthy(v, s.active, "0.115.0");
    Json st(v.state());
    CHECK(st.array_size("corruptJournals") == 1);
}

TEST_CASE("enospc: a full volume during staging keeps the active version and leaves no staging") {
    if (!is_root()) {
        MYR_SKIP("mounting a tmpfs needs root");
    }
    Volume v;
    std::string mnt = v.tmp / "volume";
    std::string a = v.release("0.115.0");
    std::string c = v.release("0.117.0");
    struct stat st {};
    REQUIRE(::stat(a.c_str(), &st) == 0);
    // Room for one release and the metadata, not for a second copy.
    std::string size = std::to_string(st.st_size + st.st_size / 2);
    RunResult m = run({"mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mnt});
    if (m.exit_code != 0) {
        MYR_SKIP("cannot mount tmpfs: " << m.err);
    }
    struct Unmount {
        std::string dir;
        ~Unmount() { run({"umount", "-l", dir}); }
    } unmount{mnt};
    must(seed(v, a, "newest").run);
    RunResult r = v.driver({"activate", "--file", c, "--version", "0.117.0"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("No space left on device") != std::string::npos);
    Json after(v.state());
    CHECK(after.array_size("staging") == 0);
    CHECK(after.str("journal") == "absent");
    CHECK(after.str("currentVersion") == "0.115.0");
    CHECK(after.str("active.state") == "intact");
    auto s = seed(v, a, "newest");
    must(s.run);
    check_healthy(v, s.active, "0.115.0");
    CHECK(run({bin_of(v, "0.115.0"), "--version"}).out == "otelcol-contrib version 0.115.0\n");
}
