// Runs the project's OpAMP agent alone on a libuv loop, for the integration and interop tests
// (the container command wires the same agent next to the child service).
//
//   opamp-agent-driver --endpoint ws://127.0.0.1:P/v1/opamp --state-dir D [--storage-dir S]
//       [--ca-file F] [--token-file F | --token-env VAR] [--heartbeat-ms N] [--host-name H]
//       [--version V] [--image-version V] [--collector-version V] [--events FILE] [--poll-ms N]
//
// Every decoded ServerToAgent is appended to --events as one JSON line (what the agent understood
// of the peer's message). SIGTERM or SIGINT stop the agent cleanly (agent_disconnect, close 1000);
// the exit code is 0 after a clean stop, 1 when the agent cannot start.
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <unistd.h>
#include <uv.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/log.hpp"
#include "loop/uv_scheduler.hpp"
#include "opamp/agent.hpp"
#include "opamp/ws_transport.hpp"
// A relative path: the test programs do not take the test support library.
#include "../support/opamp_stand_ins.hpp"

using namespace myr;
using namespace myr::opamp;
using namespace myr::opamp::testing;

namespace {

std::string hex(std::string_view b) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (unsigned char c : b) {
        s.push_back(d[c >> 4]);
        s.push_back(d[c & 15]);
    }
    return s;
}

bool parse_url(const std::string& text, Url& u) {
    auto p = text.find("://");
    if (p == std::string::npos) return false;
    u.scheme = text.substr(0, p);
    std::string rest = text.substr(p + 3);
    auto slash = rest.find('/');
    std::string hostport = rest.substr(0, slash);
    u.path = slash == std::string::npos ? "/" : rest.substr(slash);
    auto colon = hostport.rfind(':');
    if (colon == std::string::npos) {
        u.host = hostport;
        u.port = u.secure() ? 443 : 80;
    } else {
        u.host = hostport.substr(0, colon);
        u.port = static_cast<uint16_t>(std::stoi(hostport.substr(colon + 1)));
    }
    return !u.host.empty();
}

int g_events = -1;

void write_event(const ServerToAgent& m) {
    json_object* o = json_object_new_object();
    json_object_object_add(o, "event", json_object_new_string("server_message"));
    json_object_object_add(o, "instance_uid", json_object_new_string(hex(m.instance_uid).c_str()));
    json_object_object_add(o, "flags", json_object_new_int64(static_cast<int64_t>(m.flags)));
    json_object_object_add(o, "capabilities",
                           json_object_new_int64(static_cast<int64_t>(m.capabilities)));
    if (m.heartbeat_interval_seconds) {
        json_object_object_add(
            o, "heartbeat_interval_seconds",
            json_object_new_int64(static_cast<int64_t>(*m.heartbeat_interval_seconds)));
    }
    if (m.new_instance_uid) {
        json_object_object_add(o, "new_instance_uid",
                               json_object_new_string(hex(*m.new_instance_uid).c_str()));
    }
    if (m.command) json_object_object_add(o, "command", json_object_new_int(*m.command));
    if (m.error_response) {
        json_object* e = json_object_new_object();
        json_object_object_add(e, "type",
                               json_object_new_int(static_cast<int>(m.error_response->type)));
        json_object_object_add(e, "message",
                               json_object_new_string(m.error_response->error_message.c_str()));
        if (m.error_response->retry_after_nanoseconds) {
            json_object_object_add(e, "retry_after_nanoseconds",
                                   json_object_new_int64(static_cast<int64_t>(
                                       *m.error_response->retry_after_nanoseconds)));
        }
        json_object_object_add(o, "error_response", e);
    }
    if (m.packages_available) {
        json_object* pa = json_object_new_object();
        json_object_object_add(
            pa, "all_packages_hash",
            json_object_new_string(hex(m.packages_available->all_packages_hash).c_str()));
        json_object* arr = json_object_new_array();
        for (const auto& p : m.packages_available->packages) {
            json_object* e = json_object_new_object();
            json_object_object_add(e, "name", json_object_new_string(p.name.c_str()));
            json_object_object_add(e, "type", json_object_new_int(static_cast<int>(p.type)));
            json_object_object_add(e, "version", json_object_new_string(p.version.c_str()));
            json_object_object_add(e, "hash", json_object_new_string(hex(p.hash).c_str()));
            if (p.file) {
                json_object_object_add(e, "download_url",
                                       json_object_new_string(p.file->download_url.c_str()));
                json_object_object_add(e, "content_hash",
                                       json_object_new_string(hex(p.file->content_hash).c_str()));
                json_object_object_add(e, "signature",
                                       json_object_new_string(p.file->signature.c_str()));
                json_object* hs = json_object_new_object();
                for (const auto& h : p.file->headers) {
                    json_object_object_add(hs, h.key.c_str(),
                                           json_object_new_string(h.value.c_str()));
                }
                json_object_object_add(e, "headers", hs);
            }
            json_object_array_add(arr, e);
        }
        json_object_object_add(pa, "packages", arr);
        json_object_object_add(o, "packages_available", pa);
    }
    std::string line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    json_object_put(o);
    line.push_back('\n');
    if (g_events >= 0) {
        ssize_t n = write(g_events, line.data(), line.size());
        (void)n;
    }
}

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr, "opamp-agent-driver: %s\n", why.c_str());
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    signal(SIGPIPE, SIG_IGN);
    log::configure(log::Level::debug, log::Format::text);
    AgentOptions o;
    o.service_version = "0.1.0";
    WsTransportOptions w;
    FixedStatusProvider status;
    status.health_value.healthy = true;
    status.health_value.status = "running";
    status.health_value.start_time_unix_nano = 1'700'000'000'000'000'000ull;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) usage("missing value for " + a);
            return argv[++i];
        };
        if (a == "--endpoint") {
            if (!parse_url(val(), w.url)) usage("bad --endpoint");
        } else if (a == "--state-dir") {
            auto state = statedir::StateDir::open(val());
            if (!state) usage("--state-dir: " + state.error().message());
            o.state_dir = *state;
        } else if (a == "--storage-dir")
            o.supervisor_storage_dir = val();
        else if (a == "--ca-file")
            w.ca_file = val();
        else if (a == "--allow-insecure")
            w.allow_insecure_transport = true;
        else if (a == "--token-file")
            o.enrollment_token_file = val();
        else if (a == "--token-env")
            o.enrollment_token_env = val();
        else if (a == "--heartbeat-ms")
            o.heartbeat_interval = Duration(std::stoll(val()));
        else if (a == "--host-name")
            o.host_name = val();
        else if (a == "--version")
            o.service_version = val();
        else if (a == "--image-version")
            status.image_version = val();
        else if (a == "--collector-version")
            status.active_version = val();
        else if (a == "--poll-ms")
            o.persistent_state_poll = Duration(std::stoll(val()));
        else if (a == "--events") {
            g_events = open(val().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (g_events < 0) usage("cannot open --events file");
        } else
            usage("unknown argument " + a);
    }
    if (w.url.host.empty() || !o.state_dir.is_open()) {
        usage("--endpoint and --state-dir are required");
    }
    o.host_name = resolve_host_name(o.host_name);

    uv_loop_t* loop = uv_default_loop();
    auto sched = std::make_unique<loop::UvScheduler>(loop);
    UnavailablePackageHandler packages;
    AgentDeps d;
    d.sched = sched.get();
    d.status = &status;
    d.packages = &packages;
    d.transport = ws_transport_factory(loop, *sched, w);
    d.on_server_message = write_event;
    auto agent = Agent::create(o, std::move(d));
    if (!agent) {
        std::fprintf(stderr, "opamp-agent-driver: %s\n", agent.error().message().c_str());
        return 1;
    }
    Agent& a = **agent;

    static uv_signal_t sigterm, sigint;
    static Agent* g_agent = &a;
    auto on_signal = [](uv_signal_t*, int) {
        uv_signal_stop(&sigterm);
        uv_signal_stop(&sigint);
        g_agent->stop([] {
            uv_close(reinterpret_cast<uv_handle_t*>(&sigterm), nullptr);
            uv_close(reinterpret_cast<uv_handle_t*>(&sigint), nullptr);
        });
    };
    uv_signal_init(loop, &sigterm);
    uv_signal_init(loop, &sigint);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    uv_signal_start(&sigint, on_signal, SIGINT);
    a.start();
    uv_run(loop, UV_RUN_DEFAULT);
    agent->reset();
    sched.reset();
    uv_run(loop, UV_RUN_DEFAULT);
    const int rc = uv_loop_close(loop);
    if (rc != 0) {
        std::fprintf(stderr, "opamp-agent-driver: loop not empty at exit\n");
        return 3;
    }
    return 0;
}
