#include "update/ledger.hpp"

#include <doctest/doctest.h>

using namespace myr;
using namespace myr::update;
using namespace std::chrono_literals;

namespace {

Offer offer_of(const std::string& version, char hash = 'p') {
    OfferedPackage p;
    p.name = "otelcol-contrib";
    p.version = version;
    p.hash = std::string(32, hash);
    p.file = OfferedFile{"https://artifacts.example/" + version, std::string(32, 'a'), "", {}};
    Offer o;
    o.packages.push_back(p);
    o.all_packages_hash = std::string(32, hash) + "all";
    return o;
}

download::Progress at(double percent) {
    download::Progress p;
    p.percent = percent;
    p.bytes_per_second = 100;
    return p;
}

}  // namespace

Offer with_url(Offer o, const std::string& url) {
    o.packages[0].file->url = url;
    return o;
}

TEST_CASE("ledger: an offer during an install, by the running one, the remembered one, a cancel") {
    using W = Ledger::WhileBusy;
    const Offer running = offer_of("0.117.0");
    const Offer newer = offer_of("0.118.0", 'q');
    const Offer fresh_url = with_url(running, "https://artifacts.example/0.117.0?sig=2");
    Offer new_hash = running;
    new_hash.all_packages_hash = "resent";
    Offer resigned = running;
    resigned.packages[0].file->signature = "{\"other\":\"bundle\"}";
    struct Case {
        const char* name;
        const Offer& offer;
        bool cancelled;
        std::optional<Offer> pending;
        W expected;
    };
    // clang-format off
    const Case cases[] = {
        {"the same offer again",                      running, false, std::nullopt, W::ignore},
        {"the same install from a fresh URL",         fresh_url, false, std::nullopt, W::refresh},
        {"the same install under a new hash",         new_hash, false, std::nullopt, W::refresh},
        {"the same package with another bundle",      resigned, false, std::nullopt, W::remember},
        {"the same again, after a newer cancelled it", running, true,  newer,        W::again},
        {"the same again, while a newer one waits",   running, false, newer,        W::withdraw},
        {"the remembered one again",                  newer,   true,  newer,        W::ignore},
        {"a different one",                           newer,   false, std::nullopt, W::remember},
        {"a third one replaces the remembered one",   offer_of("0.119.0", 'r'), true, newer,
                                                                                    W::remember},
    };
    // clang-format on
    for (const Case& c : cases) {
        CAPTURE(c.name);
        CHECK(Ledger::while_busy(c.offer, running, c.cancelled, c.pending) == c.expected);
    }
}

TEST_CASE("ledger: the offer last Installed is settled only while unchanged") {
    Ledger l(2s);
    l.set_active("0.116.0", "");
    Offer o = offer_of("0.117.0");
    CHECK_FALSE(l.settled(o));
    auto pkg = l.open(o);
    REQUIRE(pkg.has_value());
    l.commit(o, l.installed(o, *pkg, true), Attempt{});
    CHECK(l.settled(o));
    Offer other_hash = o;
    other_hash.all_packages_hash = "changed";
    CHECK_FALSE(l.settled(other_hash));
    // The same package from another URL under the same hash: still the one installed.
    CHECK(l.settled(with_url(o, "https://artifacts.example/0.117.0?v=2")));
}

TEST_CASE("ledger: a restored Installed is settled while its version is the active one") {
    Offer o = offer_of("0.117.0");
    Installed in{o.all_packages_hash, "otelcol-contrib", "0.117.0", std::string(32, 'p'), {}, 0};
    SUBCASE("still active") {
        Ledger l(2s);
        l.set_active("0.117.0", std::string(32, 'p'));
        l.restore(in);
        CHECK(l.settled(o));
    }
    SUBCASE("seeding activated another version since") {
        Ledger l(2s);
        l.set_active("0.118.0", "");
        l.restore(in);
        CHECK_FALSE(l.settled(o));
    }
}

TEST_CASE("ledger: download progress at most every progress_every, again at once after a restart") {
    Ledger l(2s);
    REQUIRE(l.open(offer_of("0.117.0")).has_value());
    MonoTime t{};
    CHECK(l.progress(at(10), t));
    CHECK(l.report().packages[0].code == Code::downloading);
    CHECK_FALSE(l.progress(at(20), t + 1s));
    CHECK(*l.report().packages[0].percent == doctest::Approx(10.0));
    CHECK(l.progress(at(30), t + 2s));
    l.restart_progress();
    CHECK(l.progress(at(-1), t + 2500ms));
    CHECK(*l.report().packages[0].percent == doctest::Approx(0.0));  // unknown is 0 %
}

TEST_CASE("ledger: a failed end reports InstallFailed and keeps the last Installed hash") {
    Ledger l(2s);
    l.set_active("0.117.0", std::string(32, 'p'));
    Offer installed = offer_of("0.117.0");
    l.restore(Installed{
        installed.all_packages_hash, "otelcol-contrib", "0.117.0", std::string(32, 'p'), {}, 0});
    Offer o = offer_of("0.118.0", 'q');
    REQUIRE(l.open(o).has_value());
    Installed out = l.fail("preflight: exit 1", std::nullopt);
    CHECK(l.report().packages[0].code == Code::install_failed);
    CHECK(l.report().packages[0].error == "preflight: exit 1");
    CHECK(out.all_packages_hash == installed.all_packages_hash);
    CHECK(out.statuses == l.report().packages);
    // Issue 35: only what is installed answers an offer; a failed one sent again is processed
    // again (the installer paces it).
    CHECK_FALSE(l.settled(o));
}

TEST_CASE("ledger: a package the codec refused is answered with the reason, never installed") {
    Ledger l(2s);
    l.set_active("0.116.0", std::string(32, 'o'));
    Offer o = offer_of("0.117.0");
    o.packages[0].refusal = "33 download headers, at most 32";
    OfferedPackage addon = o.packages[0];
    addon.name = "extra";
    addon.top_level = false;
    addon.refusal.clear();
    o.packages.push_back(addon);
    CHECK_FALSE(l.open(o).has_value());
    REQUIRE(l.report().packages.size() == 2);
    CHECK(l.report().packages[0].code == Code::install_failed);
    CHECK(l.report().packages[0].error == "offer refused: 33 download headers, at most 32");
    CHECK(l.report().packages[0].agent_has_version == "0.116.0");
    CHECK(l.report().packages[1].error == "unsupported package type");

    // A second TopLevel package does not take the refused one's place.
    Offer two = offer_of("0.117.0");
    two.packages[0].refusal = "33 download headers, at most 32";
    two.packages.push_back(offer_of("0.118.0").packages[0]);
    CHECK_FALSE(l.open(two).has_value());
    CHECK(l.report().packages[1].error ==
          "unsupported package: only one top-level package is installed");
}

TEST_CASE("ledger: errors are valid UTF-8, also the ones restored from packages.json") {
    Ledger l(2s);
    l.set_active("0.116.0", std::string(32, 'o'));
    PackageReport old;
    old.name = "otelcol-contrib";
    old.offered_version = "0.118.0";
    old.code = Code::install_failed;
    old.error = "download: HTTP 404 Not Found\xA0";
    l.restore(Installed{"", "", "", "", {old}, 0});
    CHECK(l.report().packages[0].error == "download: HTTP 404 Not Found\xEF\xBF\xBD");
    REQUIRE(l.open(offer_of("0.117.0")).has_value());
    l.set_status(Code::install_failed, "validate: \xFF");
    CHECK(l.report().packages[0].error == "validate: \xEF\xBF\xBD");
}
