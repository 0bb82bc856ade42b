#include "runtime/package_adapter.hpp"

#include <doctest/doctest.h>

#include "../update/fake_ports.hpp"

using namespace myr;
using namespace myr::runtime;

TEST_CASE("package adapter: an offer keeps every field the installer decides on") {
    opamp::PackagesAvailable in;
    in.all_packages_hash = "all";
    in.refused = 2;
    opamp::PackageAvailable top;
    top.name = "otelcol-contrib";
    top.type = opamp::PackageType::top_level;
    top.version = "0.117.0";
    top.hash = "h1";
    top.file = opamp::DownloadableFile{"https://a.example/x.tar.gz",
                                       std::string(32, 'c'),
                                       "{bundle}",
                                       {{"Authorization", "Bearer t"}}};
    opamp::PackageAvailable addon;
    addon.name = "addon";
    addon.type = opamp::PackageType::addon;
    addon.refusal = "33 download headers, at most 32";
    opamp::PackageAvailable odd;  // a type outside the enum is not TopLevel either
    odd.name = "odd";
    odd.type = static_cast<opamp::PackageType>(7);
    in.packages = {top, addon, odd};
    update::Offer o = to_offer(in);
    CHECK(o.all_packages_hash == "all");
    CHECK(o.refused == 2);
    REQUIRE(o.packages.size() == 3);
    CHECK(o.packages[0].top_level);
    CHECK(o.packages[0].version == "0.117.0");
    CHECK(o.packages[0].hash == "h1");
    REQUIRE(o.packages[0].file.has_value());
    CHECK(o.packages[0].file->url == "https://a.example/x.tar.gz");
    CHECK(o.packages[0].file->content_hash == std::string(32, 'c'));
    CHECK(o.packages[0].file->signature == "{bundle}");
    CHECK(o.packages[0].file->headers ==
          std::vector<std::pair<std::string, std::string>>{{"Authorization", "Bearer t"}});
    CHECK(o.packages[0].refusal.empty());
    CHECK_FALSE(o.packages[1].top_level);
    CHECK_FALSE(o.packages[1].file.has_value());
    CHECK(o.packages[1].refusal == "33 download headers, at most 32");
    CHECK_FALSE(o.packages[2].top_level);
}

TEST_CASE("package adapter: a report becomes PackageStatuses, download details while downloading") {
    update::Report r;
    r.all_packages_hash = "all";
    update::PackageReport p;
    p.name = "otelcol-contrib";
    p.agent_has_version = "0.116.0";
    p.agent_has_hash = "h0";
    p.offered_version = "0.117.0";
    p.offered_hash = "h1";
    p.code = update::Code::downloading;
    p.percent = 42.5;
    p.bytes_per_second = 1000;
    r.packages.push_back(p);
    p.name = "addon";
    p.code = update::Code::install_failed;
    p.error = "unsupported package type";
    r.packages.push_back(p);
    opamp::PackageStatuses s = to_statuses(r, 0);
    CHECK(s.server_provided_all_packages_hash == "all");
    CHECK(s.error_message.empty());
    REQUIRE(s.packages.size() == 2);
    CHECK(s.packages[0].status == opamp::PackageStatusCode::downloading);
    REQUIRE(s.packages[0].download_details.has_value());
    CHECK(s.packages[0].download_details->download_percent == doctest::Approx(42.5));
    CHECK(s.packages[0].download_details->download_bytes_per_second == doctest::Approx(1000));
    CHECK(s.packages[0].agent_has_version == "0.116.0");
    CHECK(s.packages[0].agent_has_hash == "h0");
    CHECK(s.packages[0].server_offered_version == "0.117.0");
    CHECK(s.packages[0].server_offered_hash == "h1");
    CHECK(s.packages[1].status == opamp::PackageStatusCode::install_failed);
    CHECK(s.packages[1].error_message == "unsupported package type");
    CHECK_FALSE(s.packages[1].download_details.has_value());
    CHECK(to_statuses(r, 3).error_message == opamp::refused_packages_message(3));
}

namespace {

// The real installer over the fake ports, as the container's adapter sees it.
struct InstallerOverFakes {
    loop::FakeScheduler sched;
    update::testing::Trace trace;
    update::testing::FakeFetcher fetcher{sched, trace};
    update::testing::FakeVerifier verifier{sched, trace};
    update::testing::FakeStager stager{sched, trace};
    update::testing::FakePreflight preflight{sched, trace};
    update::testing::FakeService service{sched, trace};
    update::testing::FakeVolume volume{sched, trace};
    update::testing::FakeHealth health{sched, trace};
    update::Settings settings = [] {
        update::Settings s;
        s.require_signature = false;
        return s;
    }();
    update::Installer inst{
        sched,
        update::Ports{fetcher, verifier, stager, preflight, service, volume, health},
        settings,
        {}};
};

}  // namespace

TEST_CASE("package adapter: an offer through the installer is answered in OpAMP terms") {
    InstallerOverFakes f;
    loop::FakeScheduler& sched = f.sched;
    update::Installer& inst = f.inst;
    inst.set_active("0.116.0");
    PackageAdapter adapter(inst);
    CHECK(adapter.statuses().packages.empty());  // before any offer
    opamp::PackagesAvailable in;
    opamp::PackageAvailable top;
    top.name = "otelcol-contrib";
    top.version = "0.116.0";  // the active one: Installed without a download
    top.hash = "h1";
    top.file = opamp::DownloadableFile{"https://artifacts.example/x", std::string(32, 'c'), "", {}};
    in.packages = {top};
    in.all_packages_hash = "all";
    adapter.offer(in);
    for (int i = 0; i < 10; ++i) sched.run_pending();
    opamp::PackageStatuses s = adapter.statuses();
    REQUIRE(s.packages.size() == 1);
    CHECK(s.packages[0].status == opamp::PackageStatusCode::installed);
    CHECK(s.packages[0].agent_has_version == "0.116.0");
    CHECK(s.server_provided_all_packages_hash == "all");
}

TEST_CASE(
    "package adapter: the statuses restored at start are the first report, before any "
    "offer") {
    InstallerOverFakes f;
    update::Installer& inst = f.inst;
    inst.set_active("0.117.0", "h2");
    update::Installed stored{"all", "otelcol-contrib", "0.117.0", "h2", {}, 0};
    update::PackageReport p;
    p.name = "otelcol-contrib";
    p.code = update::Code::installed;
    p.offered_version = "0.117.0";
    p.offered_hash = "h2";
    p.agent_has_version = "0.117.0";
    p.agent_has_hash = "h2";
    stored.statuses.push_back(p);
    inst.restore(stored);
    PackageAdapter adapter(inst);
    opamp::PackageStatuses s = adapter.statuses();
    REQUIRE(s.packages.size() == 1);
    CHECK(s.server_provided_all_packages_hash == "all");
    CHECK(s.packages[0].status == opamp::PackageStatusCode::installed);
    CHECK(s.packages[0].agent_has_version == "0.117.0");
    CHECK(s.packages[0].agent_has_hash == "h2");
    CHECK(s.packages[0].server_offered_hash == "h2");
}

TEST_CASE(
    "package adapter: the entries the codec refused are answered from the installer's "
    "ledger") {
    InstallerOverFakes f;
    f.inst.set_active("0.116.0");
    PackageAdapter adapter(f.inst);
    opamp::PackagesAvailable in;
    opamp::PackageAvailable top;
    top.name = "otelcol-contrib";
    top.version = "0.116.0";
    top.hash = "h1";
    top.file = opamp::DownloadableFile{"https://artifacts.example/x", std::string(32, 'c'), "", {}};
    in.packages = {top};
    in.all_packages_hash = "all";
    in.refused = 2;
    adapter.offer(in);
    for (int i = 0; i < 10; ++i) f.sched.run_pending();
    CHECK(f.inst.ledger().refused() == 2);
    CHECK(adapter.statuses().error_message == opamp::refused_packages_message(2));
    in.refused = 0;
    adapter.offer(in);  // the same offer again: nothing to install, nothing refused either
    CHECK(adapter.statuses().error_message.empty());
}
