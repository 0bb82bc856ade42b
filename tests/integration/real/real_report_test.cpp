// Reports a real server can read (issue 22, finding 3): opamp-go decodes every AgentToServer as
// proto3, whose strings must be UTF-8, and drops a message that holds anything else whole. The
// real binary as PID 1 installs from the update rig's artifact server and fake releases, but
// reports to tests/real's opamp-go server; the errors it reports carry bytes that are not UTF-8
// (a `validate` that prints them, an artifact host's reason phrase `Not Found\xA0`), and the
// statuses it restores after a restart carry them too.
#include <doctest/doctest.h>
#include <json-c/json.h>

#include "../update/update_rig.hpp"
#include "real_support.hpp"

using namespace myr::test;
using namespace myr::test::real;
using opamp::get;
using opamp::str;

namespace {

// The error of the first InstallFailed of `version` opamp-go decoded after line `from`.
std::optional<std::string> wait_failed(const GoServer& s, const std::string& version, size_t from,
                                       Millis t = 60s) {
    std::optional<std::string> found;
    wait_until(
        [&] {
            for (const UpdaterStatus& st : updater_statuses(s, version, from)) {
                if (st.status == "PackageStatusEnum_InstallFailed") {
                    found = st.error;
                    return true;
                }
            }
            return false;
        },
        t, 100ms);
    return found;
}

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD, as json-c hands it over

}  // namespace

TEST_CASE(
    "real server: reports with bytes that are not UTF-8 reach opamp-go, also after a restart") {
    if (!can_run_pid1()) return;
    const std::string t = tools();
    if (t.empty()) return;
    upd::Rig rig;
    GoServer server(rig.dir, t);
    rig.cfg.endpoint = server.ws_url();
    rig.configure(rig.release("0.116.0"));
    auto diag = [&](const Updater& u) {
        return "updater log:\n" + u.log() + "\nopamp-go:\n" + server.err();
    };
    auto first_report = [&](const Updater& u, size_t from) {
        REQUIRE_MESSAGE(wait_until([&] { return rig.probe("/readyz") == 200; }, 40s, 50ms),
                        diag(u));
        return wait_until(
            [&] {
                auto all = server.all();
                for (size_t i = from; i < all.size(); ++i) {
                    json_object* id = get(all[i].get(), "identifying");
                    if (id && str(id, "service.name") == "myriarch-updater") return true;
                }
                return false;
            },
            20s, 50ms);
    };
    {
        Updater u(rig.config());
        REQUIRE_MESSAGE(first_report(u, 0), diag(u));

        // A release whose `validate` fails with bytes that are not UTF-8 on its stderr.
        const std::string bad = rig.tar_gz(
            rig.release("0.117.0", "validate=fail validate_message=bad_\xFF\xFE_bytes_\xC3"),
            "v117.tar.gz");
        size_t from = server.all().size();
        server.offer("0.117.0", rig.url_of(bad), rig.sha_of(bad), "");
        auto error = wait_failed(server, "0.117.0", from);
        CHECK_MESSAGE(error, "opamp-go never decoded the InstallFailed of 0.117.0\n" << diag(u));
        if (error) {
            MESSAGE("0.117.0 as opamp-go decoded it: " << *error);
            CHECK_MESSAGE(
                error->find("bad " + kReplacement + kReplacement + " bytes") != std::string::npos,
                *error);
        }

        // An artifact host whose reason phrase ends in a Latin-1 no-break space.
        const std::string v118 = rig.tar_gz(rig.release("0.118.0"), "v118.tar.gz");
        from = server.all().size();
        server.offer("0.118.0", rig.url_of(v118, "status=404&reason=Not%20Found%A0"),
                     rig.sha_of(v118), "");
        error = wait_failed(server, "0.118.0", from);
        CHECK_MESSAGE(error, "opamp-go never decoded the InstallFailed of 0.118.0\n" << diag(u));
        if (error) {
            MESSAGE("0.118.0 as opamp-go decoded it: " << *error);
            CHECK_MESSAGE(error->find("HTTP 404 Not Found" + kReplacement) != std::string::npos,
                          *error);
        }
        CHECK(u.stop() == 0);
    }
    // After a restart the statuses of the last offer come from packages.json: the first report
    // of the new connection carries them, and opamp-go decodes it too.
    const size_t from = server.all().size();
    Updater u(rig.config());
    CHECK_MESSAGE(first_report(u, from), "opamp-go decoded no report after the restart\n"
                                             << diag(u));
    auto error = wait_failed(server, "0.118.0", from, 20s);
    CHECK_MESSAGE(error, "the restored InstallFailed of 0.118.0 never reached opamp-go\n"
                             << diag(u));
    if (error) CHECK(error->find("HTTP 404 Not Found" + kReplacement) != std::string::npos);
    CHECK(u.stop() == 0);
}
