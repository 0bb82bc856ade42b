// Shared by the wired container tests: a volume, a supervisor storage directory and image binaries
// (fake-otelcol releases) in a TempDir, with the updater.yaml that names them. The real binary is
// started from it as PID 1 of a new PID namespace by tests/support/pid1.hpp.
#pragma once

#include <dirent.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "harness.hpp"
#include "updater_config.hpp"

namespace myr::test::wired {

// Regular files below `dir` (relative name -> content).
inline void snapshot_into(const std::string& dir, const std::string& rel,
                          std::map<std::string, std::string>& out) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return;
    while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        std::string path = dir + "/" + name;
        struct stat st {};
        if (::lstat(path.c_str(), &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            snapshot_into(path, rel + name + "/", out);
        } else {
            out[rel + name] = S_ISREG(st.st_mode) ? read_file(path) : "<special>";
        }
    }
    ::closedir(d);
}
inline std::map<std::string, std::string> snapshot(const std::string& dir) {
    std::map<std::string, std::string> out;
    snapshot_into(dir, "", out);
    return out;
}

inline std::string sha256_of(const std::string& path) {
    RunResult r = run({"sha256sum", path});
    return r.exit_code == 0 ? r.out.substr(0, 64) : "";
}

// One install marker, parsed.
struct Marker {
    bool ok = false;
    std::string version, binary, sha256, source, previous;
};
inline Marker read_marker(const std::string& path) {
    Marker m;
    json_object* o = json_tokener_parse(read_file(path).c_str());
    if (o == nullptr) return m;
    auto s = [o](const char* k) {
        json_object* v = nullptr;
        if (!json_object_object_get_ex(o, k, &v) || v == nullptr) return std::string();
        return std::string(json_object_get_string(v));
    };
    m.ok = true;
    m.version = s("version");
    m.binary = s("binary");
    m.sha256 = s("sha256");
    m.source = s("source");
    m.previous = s("previousVersion");
    json_object_put(o);
    return m;
}

inline std::vector<std::string> entries(const std::string& dir) {
    return list_dir(dir);
}

struct RigOptions {
    std::string endpoint = "ws://127.0.0.1:1/v1/opamp";
    std::string seed_policy = "newest";
};

// A container's directories, config and image binaries.
class Rig {
  public:
    Rig() : health_port_(reserve_port()) {
        install = dir / "install";
        state = dir / "state";
        storage = dir / "supervisor";
        signals = dir / "signals";
        run({"mkdir", "-p", install, state, storage, dir / "images"});
    }

    // A copy of fake-otelcol reporting `version`, with extra trailer keys; `pad_mb` zero MiB are
    // put before the trailer (which must stay last).
    std::string image(const std::string& version, const std::string& extra = "", int pad_mb = 0) {
        std::string path = dir / ("images/otelcol-" + version + "-" + std::to_string(++images_));
        RunResult cp = run({"cp", env_path("MYRIARCH_FAKE_OTELCOL"), path});
        REQUIRE(cp.exit_code == 0);
        if (pad_mb > 0) {
            RunResult t = run({"truncate", "-s", "+" + std::to_string(pad_mb) + "M", path});
            REQUIRE(t.exit_code == 0);
        }
        std::string trailer =
            "\n#MYRIARCH-FAKE version=" + version + (extra.empty() ? "" : " " + extra) + "\n";
        std::ofstream(path, std::ios::app | std::ios::binary) << trailer;
        ::chmod(path.c_str(), 0755);
        return path;
    }

    void configure(const std::string& seed_binary, const RigOptions& o = {}) {
        UpdaterConfig c;
        c.endpoint = o.endpoint;
        c.install_dir = install;
        c.state_dir = state;
        c.storage_dir = storage;
        c.supervisor_command = {env_path("MYRIARCH_FAKE_OPAMPSUPERVISOR"), "--storage-dir", storage,
                                "--signals-file", signals};
        c.seed_binary = seed_binary;
        c.seed_policy = o.seed_policy;
        c.stop_timeout = "5s";
        c.health_port = health_port_;
        c.write(config());
    }

    int health_port() const { return health_port_; }
    std::string config() const { return dir / "updater.yaml"; }

    // The status of a probe of the updater started from this rig (0: no answer).
    int probe(const std::string& path, Millis t = 2s) const {
        return http_get("127.0.0.1", health_port_, path, t).status;
    }
    bool ready(Millis t = 30s) const {
        return wait_until([&] { return probe("/readyz") == 200; }, t, 50ms);
    }

    // `current`'s target, relative ("versions/0.116.0"), or "" when absent.
    std::string current() const {
        char buf[4096];
        std::string link = install + "/current";
        ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
        return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    }
    Marker marker(const std::string& version) const {
        return read_marker(install + "/versions/" + version + "/install.json");
    }
    std::string binary(const std::string& version) const {
        return install + "/versions/" + version + "/otelcol-contrib";
    }

    // The invariants after a start: `current` names an intact `version`, no staging entries, no
    // journal, no temp files next to the versions.
    std::vector<std::string> violations(const std::string& version) const {
        std::vector<std::string> v;
        if (current() != "versions/" + version) {
            v.push_back("current is '" + current() + "', want versions/" + version);
        }
        Marker m = marker(version);
        if (!m.ok) v.push_back("marker of " + version + " does not parse");
        if (m.version != version) v.push_back("marker version '" + m.version + "'");
        struct stat st {};
        if (::stat(binary(version).c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
            (st.st_mode & 0111) == 0) {
            v.push_back("binary of " + version + " missing or not executable");
        } else if (sha256_of(binary(version)) != m.sha256) {
            v.push_back("binary of " + version + " does not match its marker's hash");
        }
        if (!entries(install + "/.staging").empty()) v.push_back(".staging is not empty");
        if (exists(state + "/journal.json")) v.push_back("journal.json remains");
        for (const auto& e : entries(install)) {
            if (e != "current" && e != "versions" && e != ".staging") {
                v.push_back("unexpected entry in installDir: " + e);
            }
        }
        return v;
    }

    TempDir dir;
    std::string install, state, storage, signals;

  private:
    int health_port_;
    int images_ = 0;
};

}  // namespace myr::test::wired
