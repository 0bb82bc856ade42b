// Helpers for the OpAMP integration tests: the scripted test server, the agent driver, their JSON
// line records, and TLS material made with openssl at test time.
#pragma once

#include <json-c/json.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace myr::test::opamp {

using Json = std::shared_ptr<json_object>;

inline Json parse_json(const std::string& line) {
    return Json(json_tokener_parse(line.c_str()), [](json_object* o) {
        if (o) json_object_put(o);
    });
}

inline json_object* get(json_object* o, const char* key) {
    json_object* v = nullptr;
    if (o && json_object_object_get_ex(o, key, &v)) return v;
    return nullptr;
}
inline std::string str(json_object* o, const char* key) {
    json_object* v = get(o, key);
    return v ? json_object_get_string(v) : "";
}
inline int64_t num(json_object* o, const char* key) {
    json_object* v = get(o, key);
    return v ? json_object_get_int64(v) : -1;
}
inline bool flag(json_object* o, const char* key) {
    json_object* v = get(o, key);
    return v && json_object_get_boolean(v);
}

inline std::vector<Json> read_lines(const std::string& path) {
    std::vector<Json> out;
    std::string text = read_file(path);
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos) break;  // a partial last line is still being written
        if (Json j = parse_json(text.substr(pos, nl - pos)); j && j.get()) out.push_back(j);
        pos = nl + 1;
    }
    return out;
}

inline std::vector<Json> events_of(const std::vector<Json>& all, const std::string& event) {
    std::vector<Json> out;
    for (auto& j : all) {
        if (str(j.get(), "event") == event) out.push_back(j);
    }
    return out;
}

// The scripted OpAMP server ($MYRIARCH_OPAMP_TEST_SERVER).
class Server {
  public:
    Server(const TempDir& dir, std::vector<std::string> args, int port = 0,
           const std::string& name = "server")
        : record_(dir / (name + ".jsonl")), port_file_(dir / (name + ".port")) {
        std::vector<std::string> argv{env_path("MYRIARCH_OPAMP_TEST_SERVER"),
                                      "--port",
                                      std::to_string(port),
                                      "--port-file",
                                      port_file_,
                                      "--record",
                                      record_};
        argv.insert(argv.end(), args.begin(), args.end());
        // A server restarted under the same name must not be taken as listening on the strength
        // of its predecessor's port file.
        std::remove(port_file_.c_str());
        proc_.emplace(Process::spawn(argv));
        if (!wait_until([&] { return !read_file(port_file_).empty(); }, 10s)) {
            FAIL("opamp-test-server did not start: " << proc_->err());
        }
        port_ = std::stoi(read_file(port_file_));
    }
    int port() const { return port_; }
    std::string ws_url() const { return "ws://127.0.0.1:" + std::to_string(port_) + "/v1/opamp"; }
    std::string wss_url(const std::string& host = "127.0.0.1") const {
        return "wss://" + host + ":" + std::to_string(port_) + "/v1/opamp";
    }
    const std::string& record() const { return record_; }
    std::vector<Json> all() const { return read_lines(record_); }
    std::vector<Json> events(const std::string& e) const { return events_of(all(), e); }
    std::vector<Json> messages() const { return events("message"); }
    bool wait_events(const std::string& e, size_t n, Millis timeout = 20s) const {
        return wait_until([&] { return events(e).size() >= n; }, timeout, 20ms);
    }
    bool wait_messages(size_t n, Millis timeout = 20s) const {
        return wait_events("message", n, timeout);
    }
    void stop() {
        if (proc_) {
            proc_->signal(SIGTERM);
            proc_->wait(5s);
            proc_.reset();
        }
    }
    std::string err() const { return proc_ ? proc_->err() : ""; }

  private:
    std::string record_, port_file_;
    std::optional<Process> proc_;
    int port_ = 0;
};

// The agent alone ($MYRIARCH_OPAMP_AGENT_DRIVER).
class Driver {
  public:
    Driver(const TempDir& dir, const std::string& endpoint, std::vector<std::string> args,
           const std::string& name = "agent", SpawnOptions opts = {})
        : events_(dir / (name + "-events.jsonl")) {
        const std::string state = dir / (name + "-state");
        run({"mkdir", "-p", state});
        std::vector<std::string> argv{env_path("MYRIARCH_OPAMP_AGENT_DRIVER"),
                                      "--endpoint",
                                      endpoint,
                                      "--state-dir",
                                      state,
                                      "--events",
                                      events_,
                                      "--host-name",
                                      "pod-7",
                                      "--image-version",
                                      "0.115.0",
                                      "--collector-version",
                                      "0.116.0"};
        argv.insert(argv.end(), args.begin(), args.end());
        proc_.emplace(Process::spawn(argv, opts));
        state_dir_ = state;
    }
    ~Driver() { stop(); }
    const std::string& state_dir() const { return state_dir_; }
    std::vector<Json> server_messages() const {
        return events_of(read_lines(events_), "server_message");
    }
    // SIGTERM and wait; returns the exit code (-1 when killed).
    int stop() {
        if (!proc_) return exit_code_;
        proc_->signal(SIGTERM);
        auto st = proc_->wait(10s);
        exit_code_ = st && WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
        err_ = proc_->err();
        proc_.reset();
        return exit_code_;
    }
    std::string err() const { return proc_ ? proc_->err() : err_; }
    bool running() { return proc_ && proc_->running(); }

  private:
    std::string events_, state_dir_, err_;
    std::optional<Process> proc_;
    int exit_code_ = -1;
};

// A CA, a server certificate for 127.0.0.1/localhost, a wrong-host certificate and an untrusted
// CA with its own certificate for 127.0.0.1, all made with openssl in `dir`.
struct TlsMaterial {
    std::string ca, cert, key, wrong_cert, wrong_key, rogue_ca, rogue_cert, rogue_key;

    static TlsMaterial make(const TempDir& dir) {
        TlsMaterial m;
        auto sh = [&](const std::string& cmd) {
            auto r = run({"sh", "-c", cmd}, 60s, SpawnOptions{{}, {}, dir.path(), "", true});
            REQUIRE_MESSAGE(r.exit_code == 0, cmd << ": " << r.err);
        };
        const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes";
        auto make_ca = [&](const std::string& name) {
            sh("openssl req -x509 " + ec + " -keyout " + name + ".key -out " + name +
               ".pem -days 2 -subj /CN=" + name +
               " -addext basicConstraints=critical,CA:TRUE"
               " -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null");
        };
        auto make_leaf = [&](const std::string& name, const std::string& ca,
                             const std::string& san) {
            sh("openssl req " + ec + " -keyout " + name + ".key -out " + name +
               ".csr -subj /CN=" + name + " 2>/dev/null");
            sh("printf 'subjectAltName=" + san +
               "\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > " + name + ".ext");
            sh("openssl x509 -req -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
               ".key -CAcreateserial -out " + name + ".pem -days 2 -extfile " + name +
               ".ext 2>/dev/null");
        };
        make_ca("ca");
        make_ca("rogue-ca");
        make_leaf("server", "ca", "IP:127.0.0.1,DNS:localhost");
        make_leaf("wrong", "ca", "DNS:wrong.example");
        make_leaf("rogue", "rogue-ca", "IP:127.0.0.1,DNS:localhost");
        m.ca = dir / "ca.pem";
        m.cert = dir / "server.pem";
        m.key = dir / "server.key";
        m.wrong_cert = dir / "wrong.pem";
        m.wrong_key = dir / "wrong.key";
        m.rogue_ca = dir / "rogue-ca.pem";
        m.rogue_cert = dir / "rogue.pem";
        m.rogue_key = dir / "rogue.key";
        return m;
    }
};

}  // namespace myr::test::opamp
