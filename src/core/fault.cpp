#include "core/fault.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "core/log.hpp"

namespace myr::fault {

#ifdef MYR_FAULT_INJECTION
namespace {

struct Rule {
    std::string point;
    std::string action;
    unsigned pass = 0;  // 0: every pass
};

struct State {
    bool loaded = false;
    std::string trace_path;  // MYRIARCH_FAULT_TRACE: every point passed is appended there
    std::vector<Rule> rules;
    std::map<std::string, unsigned, std::less<>> passes;
};

State& state() {
    static State s;
    return s;
}

void load() {
    State& s = state();
    s.rules.clear();
    s.passes.clear();
    s.loaded = true;
    const char* trace = std::getenv("MYRIARCH_FAULT_TRACE");
    s.trace_path = trace ? trace : "";
    const char* env = std::getenv("MYRIARCH_FAULT");
    if (!env) return;
    std::string spec(env);
    size_t pos = 0;
    while (pos <= spec.size()) {
        size_t comma = spec.find(',', pos);
        std::string item =
            spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        size_t colon = item.rfind(':');
        if (colon != std::string::npos) {
            Rule r;
            r.point = item.substr(0, colon);
            r.action = item.substr(colon + 1);
            size_t at = r.action.find('@');
            if (at != std::string::npos) {
                r.pass =
                    static_cast<unsigned>(std::strtoul(r.action.c_str() + at + 1, nullptr, 10));
                r.action.resize(at);
            }
            s.rules.push_back(r);
        }
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
}

// One line per pass, written with O_APPEND in a single write so that a crash right after the point
// still leaves the line behind: crash matrices enumerate the points an operation passes this way.
void append_trace(const std::string& path, std::string_view name) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    std::string line(name);
    line += '\n';
    ssize_t n = ::write(fd, line.data(), line.size());
    (void)n;
    ::close(fd);
}

// The `hold` action: the file MYRIARCH_FAULT_HOLD exists while the process waits in the point.
// Test builds only; polling keeps it free of any other machinery (the loop is held too).
void hold(std::string_view name) {
    const char* path = std::getenv("MYRIARCH_FAULT_HOLD");
    if (path == nullptr || *path == '\0') return;
    log::warn("fault injection: holding", {{"point", name}, {"until_removed", path}});
    int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ::close(fd);
    while (::access(path, F_OK) == 0) ::usleep(10'000);
    log::warn("fault injection: released", {{"point", name}});
}

}  // namespace

void reload() {
    load();
}

Status point(std::string_view name) {
    State& s = state();
    if (!s.loaded) load();
    if (!s.trace_path.empty()) append_trace(s.trace_path, name);
    if (s.rules.empty()) return {};
    auto it = s.passes.find(name);
    if (it == s.passes.end()) it = s.passes.emplace(std::string(name), 0).first;
    unsigned pass = ++it->second;
    for (const Rule& r : s.rules) {
        if (r.point != name || (r.pass != 0 && r.pass != pass)) continue;
        if (r.action == "crash") {
            log::warn("fault injection: crashing", {{"point", name}});
            ::_exit(137);
        }
        if (r.action == "term") {
            log::warn("fault injection: sending SIGTERM", {{"point", name}});
            ::kill(::getpid(), SIGTERM);
            continue;
        }
        if (r.action == "hold") {
            hold(name);
            continue;
        }
        if (r.action == "fail") {
            return fail(Errc::injected, "injected fault at " + std::string(name));
        }
    }
    return {};
}
#else
void reload() {}
Status point(std::string_view) {
    return {};
}
#endif

}  // namespace myr::fault
