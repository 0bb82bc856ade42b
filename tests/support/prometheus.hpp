// A real Prometheus server for tests (Debian's prometheus package, scripts/deps.sh): it scrapes
// the given targets' /metrics every second and evaluates rule files every second, on 127.0.0.1
// with a reserved port and a storage directory of its own that goes with it. Queries go through
// its HTTP API (/api/v1/query) with curl, which also speaks the chunked answers of larger results.
// A test waits for the scrape that holds what it expects by polling a query, never by sleeping.
// The destructor stops the server (TERM, then KILL after 10 s): nothing is left running.
#pragma once

#include <doctest/doctest.h>
#include <json-c/json.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace myr::test {

using namespace std::chrono_literals;

// One sample of an instant vector.
struct PromSample {
    std::map<std::string, std::string> labels;  // __name__ included when the result keeps it
    double value = NAN;
};

// $MYR_<NAME> when set, else `name` found on PATH; "" when that is not an executable file.
inline std::string prom_tool(const char* name, const char* env) {
    std::string path;
    if (const char* v = std::getenv(env); v != nullptr && *v != '\0') {
        path = v;
    } else if (RunResult r = run({"sh", "-c", std::string("command -v ") + name});
               r.exit_code == 0) {
        path = r.out.substr(0, r.out.find('\n'));
    }
    return !path.empty() && ::access(path.c_str(), X_OK) == 0 ? path : "";
}
inline std::string prometheus_bin() {
    return prom_tool("prometheus", "MYR_PROMETHEUS");
}
inline std::string promtool_bin() {
    return prom_tool("promtool", "MYR_PROMTOOL");
}

class Prometheus {
  public:
    // `targets`: host:port of each /metrics to scrape (job "myriarch"); `rule_files`: loaded as
    // they are. The caller checks prometheus_bin() first (and skips without it).
    explicit Prometheus(const std::vector<std::string>& targets,
                        const std::vector<std::string>& rule_files = {})
        : port_(reserve_port()) {
        std::string yaml =
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n";
        if (!rule_files.empty()) {
            yaml += "rule_files:\n";
            for (const std::string& f : rule_files) yaml += "  - '" + f + "'\n";
        }
        yaml += "scrape_configs:\n  - job_name: myriarch\n    static_configs:\n      - targets:\n";
        for (const std::string& t : targets) yaml += "          - '" + t + "'\n";
        write_file(dir_ / "prometheus.yml", yaml);
        proc_.emplace(Process::spawn(
            {prometheus_bin(), "--config.file=" + (dir_ / "prometheus.yml"),
             "--storage.tsdb.path=" + (dir_ / "data"),
             "--web.listen-address=127.0.0.1:" + std::to_string(port_), "--log.level=warn"}));
        const bool ready = wait_until(
            [&] {
                return !proc_->running() || http_get("127.0.0.1", port_, "/-/ready").status == 200;
            },
            30s, 50ms);
        REQUIRE_MESSAGE((ready && proc_->running()),
                        "prometheus did not become ready on 127.0.0.1:" << port_ << "; its log:\n"
                                                                        << log());
    }
    ~Prometheus() { stop(); }
    Prometheus(const Prometheus&) = delete;
    Prometheus& operator=(const Prometheus&) = delete;

    int port() const { return port_; }
    std::string log() const { return proc_ ? proc_->err() : ""; }

    // TERM and wait for the exit (it closes its storage), KILL after 10 s. Returns the raw wait
    // status, also when it had ended before (-1 when it had to be killed).
    int stop() {
        if (!proc_) return 0;
        if (auto st = proc_->wait(0ms)) return *st;
        proc_->signal(SIGTERM);
        if (auto st = proc_->wait(10s)) return *st;
        proc_->kill_now();
        return -1;
    }

    // An instant query; nullopt when the API did not answer with success (`error()` says why).
    std::optional<std::vector<PromSample>> query(const std::string& expr) const {
        RunResult r =
            run({"curl", "-sS", "--max-time", "5", "-G", "--data-urlencode", "query=" + expr,
                 "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/query"},
                10s);
        if (r.exit_code != 0) {
            error_ = "curl: " + r.err;
            return std::nullopt;
        }
        return parse(r.out);
    }
    // The value of a query whose result is one sample; nullopt when it is empty (not scraped
    // yet) or holds several.
    std::optional<double> value(const std::string& expr) const {
        auto v = query(expr);
        if (!v || v->size() != 1) return std::nullopt;
        return v->front().value;
    }
    // Polls `expr` until `pred` holds for its result.
    bool wait_for(const std::string& expr,
                  const std::function<bool(const std::vector<PromSample>&)>& pred,
                  Millis t = 30s) const {
        return wait_until(
            [&] {
                auto v = query(expr);
                return v && pred(*v);
            },
            t, 200ms);
    }
    // Polls until the one sample of `expr` is `want` (exactly: counters and gauges of whole
    // numbers).
    bool wait_value(const std::string& expr, double want, Millis t = 30s) const {
        return wait_for(
            expr, [&](const auto& v) { return v.size() == 1 && v[0].value == want; }, t);
    }
    const std::string& error() const { return error_; }

    // Each target with its health and last scrape error, one a line, for failure messages.
    std::string targets() const {
        RunResult r = run({"curl", "-sS", "--max-time", "5",
                           "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/targets"},
                          10s);
        json_object* root = json_tokener_parse(r.out.c_str());
        if (root == nullptr) return "GET /api/v1/targets: " + r.err + r.out.substr(0, 200);
        std::string out;
        json_object *data = nullptr, *active = nullptr;
        if (json_object_object_get_ex(root, "data", &data) &&
            json_object_object_get_ex(data, "activeTargets", &active)) {
            for (size_t i = 0; i < json_object_array_length(active); ++i) {
                json_object* t = json_object_array_get_idx(active, i);
                out += "target " + field(t, "scrapeUrl") + ": " + field(t, "health") + " " +
                       field(t, "lastError") + "\n";
            }
        }
        json_object_put(root);
        return out;
    }

  private:
    std::optional<std::vector<PromSample>> parse(const std::string& body) const {
        json_object* root = json_tokener_parse(body.c_str());
        if (root == nullptr) {
            error_ = "not JSON: " + body.substr(0, 200);
            return std::nullopt;
        }
        std::optional<std::vector<PromSample>> out;
        json_object *status = nullptr, *data = nullptr, *result = nullptr;
        if (json_object_object_get_ex(root, "status", &status) &&
            std::string(json_object_get_string(status)) == "success" &&
            json_object_object_get_ex(root, "data", &data) &&
            json_object_object_get_ex(data, "result", &result) &&
            json_object_is_type(result, json_type_array)) {
            out.emplace();
            for (size_t i = 0; i < json_object_array_length(result); ++i) {
                out->push_back(sample(json_object_array_get_idx(result, i)));
            }
        } else {
            error_ = "query failed: " + body.substr(0, 400);
        }
        json_object_put(root);
        return out;
    }
    static std::string field(json_object* o, const char* key) {
        json_object* v = nullptr;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
    }
    static PromSample sample(json_object* item) {
        PromSample s;
        json_object *metric = nullptr, *value = nullptr;
        if (json_object_object_get_ex(item, "metric", &metric)) {
            json_object_object_foreach(metric, k, v) {
                s.labels[k] = json_object_get_string(v);
            }
        }
        // "value": [ <unix time>, "<number as a string>" ]
        if (json_object_object_get_ex(item, "value", &value) &&
            json_object_array_length(value) == 2) {
            s.value =
                std::strtod(json_object_get_string(json_object_array_get_idx(value, 1)), nullptr);
        }
        return s;
    }

    TempDir dir_;
    int port_;
    std::optional<Process> proc_;
    mutable std::string error_;
};

}  // namespace myr::test
