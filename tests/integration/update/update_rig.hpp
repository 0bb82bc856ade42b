// The rig of the installer's end-to-end tests (docs/update.md): a container's volume and supervisor
// storage (wired::Rig), release archives built at test time from fake-otelcol copies, the artifact
// server that serves them, the scripted OpAMP server that offers them (`release=FILE` through its
// --commands file), and the updater.yaml that ties them together. The real binary is started from
// it as PID 1 of a new PID namespace (tests/support/pid1.hpp).
#pragma once

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../container/wired_support.hpp"
#include "../opamp/opamp_support.hpp"
#include "artifact_server.hpp"
#include "harness.hpp"
#include "pid1.hpp"
#include "updater_config.hpp"

namespace myr::test::upd {

using namespace std::chrono_literals;
using opamp::get;
using opamp::str;

inline std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& e : v) s += e + "; ";
    return s;
}

// One PackageStatus as the server recorded it.
struct Status {
    std::string name, status, has, offered, error;
    std::optional<double> percent;  // download_details, when sent
    double bytes_per_second = 0;
    int64_t t_ms = 0;  // when the server received the message (its own monotonic clock)
};

// What the server is told to offer: one package, by default the TopLevel `otelcol-contrib`.
struct Offer {
    Offer(std::string v, std::string f, std::string q = "", std::string u = "")
        : version(std::move(v)), file(std::move(f)), query(std::move(q)), url(std::move(u)) {}
    std::string version;
    std::string file;    // the artifact's name in the artifact directory
    std::string query;   // appended to the URL (the artifact server's options)
    std::string url;     // overrides the URL made from `file` and `query`
    std::string sha256;  // overrides the artifact's real hash
    std::string name = "otelcol-contrib";
    int type = 0;                      // 0 TopLevel, 1 Addon
    std::string signature_file;        // a Sigstore bundle
    std::vector<std::string> headers;  // download headers, "Name: value"
};

class Rig : public wired::Rig {
  public:
    Rig() : collector_port_(reserve_port()) {
        artifacts = dir / "artifacts";
        commands = dir / "commands";
        run({"mkdir", "-p", artifacts, dir / "rel"});
        write_file(commands, "");
        write_file(dir / "effective.yaml", "receivers: {}\n");
        artifact_server.emplace(artifacts);
        server.emplace(dir, std::vector<std::string>{"--commands", commands});
        cfg.endpoint = server->ws_url();
        cfg.install_dir = install;
        cfg.state_dir = state;
        cfg.storage_dir = storage;
        cfg.supervisor_health_off = true;  // the stand-in serves no health endpoint here
        cfg.collector_health_url = "http://127.0.0.1:" + std::to_string(collector_port_) + "/";
        cfg.config_file = dir / "effective.yaml";
        cfg.allowed_download_prefixes = {
            "http://127.0.0.1:" + std::to_string(artifact_server->port()) + "/artifacts/"};
        // Quick rounds: a failing health check costs healthTimeout, twice with a rollback.
        cfg.health_timeout = "4s";
        cfg.health_successes = 2;
        cfg.health_interval = "200ms";
        cfg.stop_timeout = "5s";
        // The releases span more minor versions than the default skew allows from the 0.116.0
        // image; update_versions_test.cpp checks the rule itself.
        cfg.max_minor_skew = -1;
        cfg.supervisor_command = {env_path("MYRIARCH_FAKE_OPAMPSUPERVISOR"),
                                  "--storage-dir",
                                  storage,
                                  "--signals-file",
                                  signals,
                                  "--agent",
                                  install + "/current/otelcol-contrib"};
        cfg.health_port = health_port();
    }

    // A fake-otelcol "release" serving its health on the collector port, with more trailer keys.
    std::string release(const std::string& version, const std::string& extra = "", int pad_mb = 0) {
        return image(
            version,
            "health_port=" + std::to_string(collector_port_) + (extra.empty() ? "" : " " + extra),
            pad_mb);
    }

    // A tar.gz in the artifact directory holding `binary` as `member` (default: at the top).
    std::string tar_gz(const std::string& binary, const std::string& name,
                       const std::string& member = "otelcol-contrib") {
        const std::string tree = dir / ("rel/" + name);
        const std::string at = tree + "/" + member;
        REQUIRE(run({"mkdir", "-p", tree, at.substr(0, at.rfind('/'))}).exit_code == 0);
        REQUIRE(run({"cp", binary, at}).exit_code == 0);
        RunResult t = run({"tar", "czf", artifacts + "/" + name, "-C", tree, member}, 120s);
        REQUIRE_MESSAGE(t.exit_code == 0, "tar: " << t.err);
        return name;
    }
    // A tar.gz of `binary` with `random_mb` MiB of random bytes beside it: incompressible, so
    // the archive is that large on the wire (gzip -1 keeps making it quick).
    std::string tar_gz_padded(const std::string& binary, const std::string& name, int random_mb) {
        const std::string tree = dir / ("rel/" + name);
        REQUIRE(run({"mkdir", "-p", tree}).exit_code == 0);
        REQUIRE(run({"cp", binary, tree + "/otelcol-contrib"}).exit_code == 0);
        RunResult t =
            run({"sh", "-c",
                 "head -c " + std::to_string(random_mb) + "M /dev/urandom >" + tree +
                     "/padding.bin && tar -C " + tree +
                     " -cf - otelcol-contrib padding.bin | gzip -1 >" + artifacts + "/" + name},
                120s);
        REQUIRE_MESSAGE(t.exit_code == 0, "tar: " << t.err);
        return name;
    }
    // A hostile (or zip) archive of `binary` made by make_archive.py; its name is `kind`.
    std::string archive(const std::string& kind, const std::string& binary) {
        const std::string name = kind + ".archive";
        RunResult r = run({"python3", source_dir() + "/tests/integration/update/make_archive.py",
                           artifacts + "/" + name, kind, binary},
                          120s);
        REQUIRE_MESSAGE(r.exit_code == 0, "make_archive.py " << kind << ": " << r.err);
        return name;
    }
    std::string sha_of(const std::string& file) const {
        return wired::sha256_of(artifacts + "/" + file);
    }
    std::string url_of(const std::string& file, const std::string& query = "") const {
        return artifact_server->url("http", file) + (query.empty() ? "" : "?" + query);
    }

    // The config with the seed image; `tweak` changes fields before it is written.
    void configure(const std::string& seed, const std::function<void(UpdaterConfig&)>& tweak = {}) {
        UpdaterConfig c = cfg;
        c.seed_binary = seed;
        if (tweak) tweak(c);
        c.write(config());
    }

    // Tells the server to offer `o` to the newest connection.
    void offer(const Offer& o) { offer_all({o}); }
    // One offer of several packages, in this order.
    void offer_all(const std::vector<Offer>& packages) {
        std::string actions;
        for (const Offer& o : packages) {
            const std::string file = dir / ("offer-" + std::to_string(++offers_) + ".txt");
            std::string text = "name=" + o.name + "\nversion=" + o.version +
                               "\nurl=" + (o.url.empty() ? url_of(o.file, o.query) : o.url) +
                               "\nsha256=" + (o.sha256.empty() ? sha_of(o.file) : o.sha256) +
                               "\ntype=" + std::to_string(o.type) + "\n";
            if (!o.signature_file.empty()) text += "signature_file=" + o.signature_file + "\n";
            for (const std::string& h : o.headers) text += "header=" + h + "\n";
            write_file(file, text);
            actions += (actions.empty() ? "release=" : "+release=") + file;
        }
        std::ofstream(commands, std::ios::app) << actions << "\n";
    }

    // Every PackageStatus the server recorded, in order, from record line `from` on.
    std::vector<Status> statuses(size_t from = 0) const {
        std::vector<Status> out;
        auto all = server->all();
        for (size_t i = from; i < all.size(); ++i) {
            json_object* arr = get(get(all[i].get(), "package_statuses"), "packages");
            if (arr == nullptr) continue;
            for (size_t k = 0; k < json_object_array_length(arr); ++k) {
                json_object* p = json_object_array_get_idx(arr, k);
                Status st;
                st.name = str(p, "name");
                st.status = str(p, "status");
                st.has = str(p, "agent_has_version");
                st.offered = str(p, "server_offered_version");
                st.error = str(p, "error_message");
                if (json_object* d = get(p, "download_percent")) {
                    st.percent = json_object_get_double(d);
                    st.bytes_per_second =
                        json_object_get_double(get(p, "download_bytes_per_second"));
                }
                st.t_ms = json_object_get_int64(get(all[i].get(), "t_ms"));
                out.push_back(std::move(st));
            }
        }
        return out;
    }
    size_t mark() const { return server->all().size(); }

    // The first status of `package` offered `version` whose status is `status` (or, with
    // `status` "", a final one: Installed or InstallFailed), after record line `from`.
    std::optional<Status> wait_status(const std::string& version, const std::string& status = "",
                                      size_t from = 0, Millis t = 60s,
                                      const std::string& package = "otelcol-contrib") const {
        std::optional<Status> found;
        wait_until(
            [&] {
                for (const Status& s : statuses(from)) {
                    bool want = status.empty()
                                    ? (s.status == "Installed" || s.status == "InstallFailed")
                                    : s.status == status;
                    if (s.name == package && s.offered == version && want) {
                        found = s;
                        return true;
                    }
                }
                return false;
            },
            t, 50ms);
        return found;
    }

    // The statuses of one package's offer, in order ("Installing Downloading … Installed").
    std::string sequence(const std::string& version, size_t from = 0,
                         const std::string& package = "otelcol-contrib") const {
        std::string s;
        std::string last;
        for (const Status& st : statuses(from)) {
            if (st.name != package || st.offered != version || st.status == last) continue;
            s += (s.empty() ? "" : " ") + st.status;
            last = st.status;
        }
        return s;
    }

    // A record of what the server saw, for failure messages.
    std::string record() const { return read_file(server->record()); }

    // Waits until the agent is connected and the supervisor wrote its state; then the storage
    // is snapshotted: from here on nothing may change it.
    void settle(const Updater& u) {
        REQUIRE_MESSAGE(ready(40s), "never ready; log:\n" << u.log());
        REQUIRE_MESSAGE(wait_until([&] { return connected(); }, 20s, 20ms),
                        "no OpAMP message; log:\n"
                            << u.log());
        REQUIRE_MESSAGE(wait_until([&] { return exists(storage + "/persistent_state.yaml"); }, 20s),
                        "the supervisor wrote no state; log:\n"
                            << u.log());
        storage_before = wired::snapshot(storage);
    }
    // A first start that seeds `seed` and lets the supervisor write its state (snapshotted), then
    // a copy of the volume and state as they are: restore_pristine() puts it back.
    void first_start(const std::string& seed) {
        configure(seed);
        {
            Updater u(config());
            settle(u);
            REQUIRE(u.stop() == 0);
        }
        REQUIRE_MESSAGE(violations("0.116.0").empty(), joined(violations("0.116.0")));
        save_pristine();
    }
    // A copy of the volume and state as they are now, for restore_pristine().
    void save_pristine() const {
        const std::string at = dir / "pristine";
        REQUIRE(run({"mkdir", "-p", at}).exit_code == 0);
        REQUIRE(run({"cp", "-a", install, state, at}).exit_code == 0);
    }
    void restore_pristine() const {
        const std::string at = dir / "pristine";
        REQUIRE(run({"rm", "-rf", install, state}).exit_code == 0);
        REQUIRE(run({"cp", "-a", at + "/install", at + "/state", dir.path()}).exit_code == 0);
    }
    // Starts the updater; returns once it is ready and its agent connected.
    void await_start(const Updater& u, size_t from) const {
        REQUIRE_MESSAGE(ready(40s), "never ready; log:\n" << u.log());
        REQUIRE_MESSAGE(wait_until([&] { return mark() > from && connected(); }, 20s, 20ms),
                        "no OpAMP message; log:\n"
                            << u.log());
    }

    // The newest connection is open and has sent a message: an offer now reaches this start.
    bool connected() const {
        auto all = server->all();
        for (size_t i = all.size(); i-- > 0;) {
            const std::string e = str(all[i].get(), "event");
            if (e == "closed") return false;
            if (e == "message") return true;
            if (e == "open") return false;
        }
        return false;
    }
    bool storage_unchanged() const { return wired::snapshot(storage) == storage_before; }

    std::string spool() const { return state + "/spool"; }

    std::string artifacts, commands;
    UpdaterConfig cfg;
    std::optional<ArtifactServer> artifact_server;
    std::optional<opamp::Server> server;
    std::map<std::string, std::string> storage_before;

  private:
    int collector_port_;
    int offers_ = 0;
};

// What most cases start from: the image's 0.116.0 active, the updater settled on it, and a
// 0.117.0 release archive to offer. A case takes it apart: `auto& [rig, u, v117] = started;`.
struct Started {
    Started()
        : u((rig.configure(rig.release("0.116.0")), rig.config())),
          v117(rig.tar_gz(rig.release("0.117.0"), "v117.tar.gz")) {
        rig.settle(u);
    }
    Rig rig;
    Updater u;
    std::string v117;
};

// The final status of `o`, offered now.
inline Status final_status(Rig& rig, const Updater& u, const Offer& o) {
    size_t from = rig.mark();
    rig.offer(o);
    auto st = rig.wait_status(o.version, "", from);
    REQUIRE_MESSAGE(st, "no final status for " << o.version << "; record:\n"
                                               << rig.record() << "\nlog:\n"
                                               << u.log());
    return *st;
}

// The installed state after an install or a refusal: `version` active and intact, nothing left
// over, readiness back, the supervisor's storage untouched. The outcome is reported before the
// clean-up that follows it (staging, journal, spool) has run: the oracle is given until then.
// `kept`: the content hash of an offer cut short by a restart, whose download the spool keeps
// for that offer to resume (`<hex>`, `<hex>.part`, `<hex>.part.meta`; docs/download.md).
inline void check_settled(const Rig& rig, const std::string& version,
                          const std::string& kept = "") {
    std::vector<std::string> v;
    wait_until([&] { return (v = rig.violations(version)).empty(); }, 10s, 50ms);
    CHECK_MESSAGE(v.empty(), joined(v));
    CHECK(wait_until([&] { return rig.probe("/readyz") == 200; }, 20s, 50ms));
    CHECK(rig.storage_unchanged());
    auto only_kept = [&] {
        for (const std::string& n : list_dir(rig.spool())) {
            if (kept.empty() || (n != kept && n != kept + ".part" && n != kept + ".part.meta")) {
                return false;
            }
        }
        return true;
    };
    CHECK_MESSAGE(wait_until(only_kept, 10s, 50ms), "spool: " << joined(list_dir(rig.spool())));
}

// The samples of one GET /metrics, by series as written (`name{label="v"}`; docs/metrics.md).
using Samples = std::map<std::string, double>;

inline Samples scrape(const Rig& rig) {
    HttpResponse r = http_get("127.0.0.1", rig.health_port(), "/metrics", 5s);
    REQUIRE_MESSAGE(r.status == 200, "GET /metrics: " << r.status << " " << r.error);
    Samples out;
    std::istringstream in(r.body);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        size_t sp = line.rfind(' ');
        REQUIRE_MESSAGE(sp != std::string::npos, "sample without a value: " << line);
        out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
    }
    return out;
}

// A series' value, or -1 when the scrape does not have it.
inline double value(const Samples& s, const std::string& series) {
    auto it = s.find(series);
    return it == s.end() ? -1 : it->second;
}

inline std::string attempts(const std::string& result) {
    return "myriarch_update_attempts_total{result=\"" + result + "\"}";
}
inline std::string rollbacks(const std::string& reason) {
    return "myriarch_rollbacks_total{reason=\"" + reason + "\"}";
}

}  // namespace myr::test::upd
