// The real upstream peers (tests/real/build-tools.sh): the OpAMP Supervisor, a small collector
// distribution in two versions and an opamp-go server, with the configs that wire them to the
// updater in a TempDir. Only ports on 127.0.0.1.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../container/wired_support.hpp"
#include "../opamp/opamp_support.hpp"
#include "harness.hpp"
#include "pid1.hpp"
#include "updater_config.hpp"

namespace myr::test::real {

using opamp::Json;

// The tools' directory: $MYR_REAL_TOOLS (scripts/test.sh builds them first), else the build
// script is run here (quick when cached). "" with the skip reported where there is no Go.
inline std::string tools() {
    if (const char* d = std::getenv("MYR_REAL_TOOLS"); d && *d) return d;
    RunResult r = run({"bash", source_dir() + "/tests/real/build-tools.sh"}, 1200s);
    if (r.exit_code == 77) {
        report_skip("no Go toolchain to build the real peers: " + r.err);
        return "";
    }
    REQUIRE_MESSAGE(r.exit_code == 0, "tests/real/build-tools.sh failed:\n" << r.err);
    size_t at = r.out.rfind("MYR_REAL_TOOLS=");
    REQUIRE(at != std::string::npos);
    std::string dir = r.out.substr(at + 15);
    while (!dir.empty() && (dir.back() == '\n' || dir.back() == ' ')) dir.pop_back();
    return dir;
}

// The collector builds' versions: otelcol-1, otelcol-2, and otelcol-broken (fails at start).
inline std::vector<std::string> collector_versions(const std::string& tools_dir) {
    std::istringstream in(read_file(tools_dir + "/collector-versions"));
    std::vector<std::string> v;
    for (std::string line; std::getline(in, line);) v.push_back(line);
    REQUIRE_MESSAGE(v.size() == 3, "collector-versions in " << tools_dir);
    return v;
}

// The opamp-go server, recording every connection and AgentToServer as JSON lines.
class GoServer {
  public:
    GoServer(const TempDir& dir, const std::string& tools_dir, std::vector<std::string> extra = {})
        : record_(dir / "opamp-go.jsonl"),
          port_file_(dir / "opamp-go.port"),
          commands_(dir / "opamp-go.commands") {
        std::vector<std::string> argv{tools_dir + "/opampserver",
                                      "--port-file",
                                      port_file_,
                                      "--record",
                                      record_,
                                      "--commands",
                                      commands_};
        argv.insert(argv.end(), extra.begin(), extra.end());
        proc_.emplace(Process::spawn(argv));
        if (!wait_until([&] { return !read_file(port_file_).empty(); }, 10s)) {
            FAIL("the opamp-go server did not start: " << proc_->err());
        }
        port_ = std::stoi(read_file(port_file_));
    }
    int port() const { return port_; }
    std::string ws_url() const { return "ws://127.0.0.1:" + std::to_string(port_) + "/v1/opamp"; }
    std::string wss_url() const { return "wss://127.0.0.1:" + std::to_string(port_) + "/v1/opamp"; }
    std::vector<Json> all() const { return opamp::read_lines(record_); }
    std::vector<Json> events(const std::string& e) const { return opamp::events_of(all(), e); }
    // Has the server offer the updater the TopLevel package `otelcol-contrib` at `version`: one
    // JSON line in its --commands file (tests/real/opampserver/main.go). The same call again sends
    // the same offer again; `more` adds fields to the line (`,"repeat_every_ms":1000,...`).
    void offer(const std::string& version, const std::string& url, const std::string& sha256_hex,
               const std::string& bundle_file, const std::string& more = "") const {
        std::ofstream(commands_, std::ios::app)
            << "{\"to\":\"myriarch-updater\",\"name\":\"otelcol-contrib\",\"version\":\"" << version
            << "\",\"url\":\"" << url << "\",\"hash\":\"" << sha256_hex
            << "\",\"signature_file\":\"" << bundle_file << "\"" << more << "}\n";
    }
    // The AgentToServer messages whose agent described itself with identifying service.name
    // `service` (on that connection, earlier or in this message).
    std::vector<Json> from(const std::string& service) const {
        std::vector<Json> out;
        std::map<int64_t, std::string> conn_service;
        for (auto& j : events("message")) {
            json_object* id = opamp::get(j.get(), "identifying");
            if (id) conn_service[opamp::num(j.get(), "conn")] = opamp::str(id, "service.name");
            if (conn_service[opamp::num(j.get(), "conn")] == service) out.push_back(j);
        }
        return out;
    }
    std::string err() const { return proc_ ? proc_->err() : ""; }

  private:
    std::string record_, port_file_, commands_;
    std::optional<Process> proc_;
    int port_ = 0;
};

// One PackageStatus of the updater's reports, as opamp-go decoded it (protojson names).
struct UpdaterStatus {
    std::string status, has, offered, error;
};

// The updater's statuses of `package` offered `version`, from record line `from` on, in order.
inline std::vector<UpdaterStatus> updater_statuses(const GoServer& s, const std::string& version,
                                                   size_t from = 0,
                                                   const std::string& package = "otelcol-contrib") {
    std::vector<UpdaterStatus> out;
    std::map<int64_t, bool> updater_conn;
    auto all = s.all();
    for (size_t i = 0; i < all.size(); ++i) {
        json_object* j = all[i].get();
        if (opamp::str(j, "event") != "message") continue;
        const int64_t conn = opamp::num(j, "conn");
        if (json_object* id = opamp::get(j, "identifying")) {
            updater_conn[conn] = opamp::str(id, "service.name") == "myriarch-updater";
        }
        if (i < from || !updater_conn[conn]) continue;
        json_object* p =
            opamp::get(opamp::get(opamp::get(opamp::get(j, "msg"), "packageStatuses"), "packages"),
                       package.c_str());
        if (p == nullptr || opamp::str(p, "serverOfferedVersion") != version) continue;
        out.push_back({opamp::str(p, "status"), opamp::str(p, "agentHasVersion"),
                       opamp::str(p, "serverOfferedVersion"), opamp::str(p, "errorMessage")});
    }
    return out;
}

// The first final status (Installed or InstallFailed) of `version` after record line `from`.
inline std::optional<UpdaterStatus> wait_final(const GoServer& s, const std::string& version,
                                               size_t from, Millis t) {
    std::optional<UpdaterStatus> found;
    wait_until(
        [&] {
            for (const UpdaterStatus& st : updater_statuses(s, version, from)) {
                if (st.status == "PackageStatusEnum_Installed" ||
                    st.status == "PackageStatusEnum_InstallFailed") {
                    found = st;
                    return true;
                }
            }
            return false;
        },
        t, 100ms);
    return found;
}

// The updater's non-identifying `key` in its newest report that carries it.
inline std::string updater_attribute(const GoServer& s, const std::string& key) {
    std::string v;
    for (auto& m : s.from("myriarch-updater")) {
        if (json_object* non = opamp::get(m.get(), "non_identifying")) {
            v = opamp::str(non, key.c_str());
        }
    }
    return v;
}

// The updater's own health attributes (its component_health_map entry's field 7) as opamp-go's
// server decoded them, one map per report that carried them, from record line `from` on.
inline std::vector<std::map<std::string, std::string>> updater_health(const GoServer& s,
                                                                      size_t from = 0) {
    std::vector<std::map<std::string, std::string>> out;
    auto all = s.all();
    for (size_t i = from; i < all.size(); ++i) {
        json_object* a = opamp::get(all[i].get(), "updater_attributes");
        if (a == nullptr) continue;
        std::map<std::string, std::string>& m = out.emplace_back();
        json_object_object_foreach(a, k, v) {
            m[k] = json_object_get_string(v);
        }
    }
    return out;
}

// A release as an operator's CI would publish it: dir/artifacts/<name>, a tar.gz whose one member
// is `binary` under the name the volume uses. Returns its path.
inline std::string release_archive(const std::string& dir, const std::string& binary,
                                   const std::string& name) {
    const std::string tree = dir + "/rel-" + name;
    REQUIRE(run({"mkdir", "-p", tree, dir + "/artifacts"}).exit_code == 0);
    REQUIRE(run({"cp", binary, tree + "/otelcol-contrib"}).exit_code == 0);
    const std::string out = dir + "/artifacts/" + name;
    RunResult t = run({"tar", "czf", out, "-C", tree, "otelcol-contrib"}, 120s);
    REQUIRE_MESSAGE(t.exit_code == 0, "tar: " << t.err);
    return out;
}

// The instance_id in `storage`/persistent_state.yaml, as the supervisor wrote it ("" when
// absent).
inline std::string instance_id_in(const std::string& storage) {
    std::istringstream in(read_file(storage + "/persistent_state.yaml"));
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("instance_id:", 0) == 0) {
            std::string v = line.substr(12);
            v.erase(0, v.find_first_not_of(" \"'"));
            v.erase(v.find_last_not_of(" \"'\r") + 1);
            return v;
        }
    }
    return "";
}

// The directories, ports and the three configs (updater, supervisor, collector base) of one
// container running the real peers.
struct Peers {
    explicit Peers(const std::string& tools_dir) : tools(tools_dir) {
        install = dir / "install";
        state = dir / "state";
        storage = dir / "supervisor";
        run({"mkdir", "-p", install, state, storage, dir / "images"});
        versions = collector_versions(tools);
        // The seed is a copy, as in an image: the cache must never be the volume's source of
        // truth, and a test must not be able to damage it.
        seed = dir / "images/otelcol-contrib";
        REQUIRE(run({"cp", tools + "/otelcol-1", seed}).exit_code == 0);
        write_file(dir / "token", token + "\n", 0600);
    }

    std::string supervisor_bin() const { return tools + "/opampsupervisor"; }
    std::string supervisor_config() const { return dir / "supervisor.yaml"; }
    std::string base_config() const { return dir / "collector-base.yaml"; }
    std::string updater_config() const { return dir / "updater.yaml"; }
    std::string effective_config() const { return storage + "/effective.yaml"; }
    // versions/<first version>/otelcol-contrib, the collector's executable once seeded.
    std::string first_binary() const {
        return install + "/versions/" + versions[0] + "/otelcol-contrib";
    }

    // The collector's own config: OTLP in, debug out, health_check; its metrics endpoint off,
    // since the default :8888 would collide with every other collector on the machine.
    void write_base() const {
        write_file(base_config(),
                   "receivers:\n"
                   "  otlp:\n"
                   "    protocols:\n"
                   "      http:\n"
                   "        endpoint: 127.0.0.1:" +
                       std::to_string(otlp_port) +
                       "\n"
                       "exporters:\n"
                       "  debug: {}\n"
                       "extensions:\n"
                       "  health_check:\n"
                       "    endpoint: 127.0.0.1:" +
                       std::to_string(collector_health_port) +
                       "\n"
                       "service:\n"
                       "  extensions: [health_check]\n"
                       "  telemetry:\n"
                       "    metrics:\n"
                       "      level: none\n"
                       "  pipelines:\n"
                       "    traces:\n"
                       "      receivers: [otlp]\n"
                       "      exporters: [debug]\n");
    }

    void write_supervisor(const std::string& endpoint, const std::string& extra_server = "") const {
        write_file(supervisor_config(),
                   "server:\n"
                   "  endpoint: " +
                       endpoint +
                       "\n"
                       "  headers:\n"
                       "    Authorization: \"Bearer " +
                       token + "\"\n" + extra_server +
                       "capabilities:\n"
                       "  reports_effective_config: true\n"
                       "  reports_health: true\n"
                       "  accepts_remote_config: false\n"
                       "agent:\n"
                       "  executable: " +
                       install +
                       "/current/otelcol-contrib\n"
                       "  config_files: [" +
                       base_config() +
                       "]\n"
                       "storage:\n"
                       "  directory: " +
                       storage +
                       "\n"
                       "healthcheck:\n"
                       "  endpoint: 127.0.0.1:" +
                       std::to_string(supervisor_health_port) +
                       "\n"
                       "telemetry:\n"
                       "  logs:\n"
                       "    level: info\n");
    }

    void write_updater(const std::string& endpoint, const std::string& stop_signal = "",
                       const std::string& ca_file = "",
                       const std::function<void(UpdaterConfig&)>& tweak = {}) const {
        UpdaterConfig c;
        c.endpoint = endpoint;
        c.ca_file = ca_file;
        c.enrollment_token_file = dir / "token";
        c.install_dir = install;
        c.state_dir = state;
        c.storage_dir = storage;
        c.supervisor_health_url =
            "http://127.0.0.1:" + std::to_string(supervisor_health_port) + "/health";
        c.supervisor_command = {supervisor_bin(), "--config=" + supervisor_config()};
        c.seed_binary = seed;
        c.stop_signal = stop_signal;
        c.stop_timeout = "20s";
        c.health_port = updater_health_port;
        if (tweak) tweak(c);
        c.write(updater_config());
    }

    // persistent_state.yaml's instance_id, as the supervisor wrote it ("" when absent).
    std::string supervisor_instance_id() const { return instance_id_in(storage); }

    int get(int port, const std::string& path) const {
        return http_get("127.0.0.1", port, path, 2s).status;
    }
    // The collector's health_check answers 200: the supervisor started it from the volume with
    // the base config (its first start includes the supervisor's bootstrap run).
    bool wait_collector_healthy(Millis t = 90s) const {
        return wait_until([&] { return get(collector_health_port, "/") == 200; }, t, 100ms);
    }
    // real::release_archive in this container's directory.
    std::string release_archive(const std::string& binary, const std::string& name) const {
        return real::release_archive(dir.path(), binary, name);
    }
    // With `ca_file`, the supervisor trusts that CA for wss:// (its server.tls.ca_file).
    void write_peer_configs(const std::string& endpoint, const std::string& ca_file = "") const {
        write_base();
        write_supervisor(endpoint, ca_file.empty() ? "" : "  tls:\n    ca_file: " + ca_file + "\n");
    }

    TempDir dir;
    std::string tools, install, state, storage, seed;
    std::vector<std::string> versions;
    std::string token = "real-peers-token-0123";
    int otlp_port = reserve_port();
    int collector_health_port = reserve_port();
    int supervisor_health_port = reserve_port();
    int updater_health_port = reserve_port();
};

// Where `install`/current points ("" when it is no link).
inline std::string current_of(const std::string& install) {
    char buf[4096];
    ssize_t n = ::readlink((install + "/current").c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Whether a non-updater agent (the supervisor, speaking for its collector) reported identifying
// service.version `version` on a connection opened at record line `from` or later: a supervisor
// started after that point, not one that was already running.
inline bool supervisor_reported(const GoServer& s, const std::string& version, size_t from = 0) {
    auto all = s.all();
    std::map<int64_t, bool> fresh;
    for (size_t i = 0; i < all.size(); ++i) {
        json_object* j = all[i].get();
        const std::string event = opamp::str(j, "event");
        if (event == "open") fresh[opamp::num(j, "conn")] = i >= from;
        if (event != "message" || !fresh[opamp::num(j, "conn")]) continue;
        json_object* id = opamp::get(j, "identifying");
        if (id && opamp::str(id, "service.name") != "myriarch-updater" &&
            opamp::str(id, "service.version") == version) {
            return true;
        }
    }
    return false;
}

// A pid's peak resident set (VmHWM, KiB) and current (VmRSS, KiB) from /proc; -1 when gone.
inline long proc_kib(pid_t pid, const char* field) {
    std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/status"));
    for (std::string line; std::getline(in, line);) {
        if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field) + 1));
    }
    return -1;
}

// The process below `root` (any depth) whose executable is `exe`; -1 when none.
inline pid_t find_descendant(pid_t root, const std::string& exe) {
    for (pid_t c : children_of(root)) {
        char buf[4096];
        std::string link = "/proc/" + std::to_string(c) + "/exe";
        ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
        if (n > 0 && std::string(buf, static_cast<size_t>(n)) == exe) return c;
        if (pid_t d = find_descendant(c, exe); d > 0) return d;
    }
    return -1;
}

}  // namespace myr::test::real
