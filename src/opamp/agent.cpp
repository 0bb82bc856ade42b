#include "opamp/agent.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/file.hpp"
#include "core/log.hpp"
#include "core/text.hpp"

namespace myr::opamp {

namespace {

constexpr size_t kMaxTokenSize = 16 * 1024;

// The token file is named by the operator and, in Kubernetes, is a symlink into the secret
// volume's ..data directory, so symlinks are followed here (unlike files on the shared volume).
// It must be a regular file of at most kMaxTokenSize bytes.
Result<std::string> read_token_file(const std::string& path) {
    auto fd = open_regular(path);
    if (!fd) return fd.fail();
    auto text = read_bounded(fd->get(), kMaxTokenSize);
    if (!text) return text.fail(path);
    return text;
}

std::string ms_text(Duration d) {
    return std::to_string(d.count()) + "ms";
}

}  // namespace

const char* to_string(Agent::State s) {
    switch (s) {
        case Agent::State::idle:
            return "idle";
        case Agent::State::connecting:
            return "connecting";
        case Agent::State::connected:
            return "connected";
        case Agent::State::closing:
            return "closing";
        case Agent::State::waiting:
            return "waiting";
        case Agent::State::stopping:
            return "stopping";
        case Agent::State::stopped:
            return "stopped";
    }
    return "?";
}

std::string resolve_host_name(const std::string& configured) {
    if (!configured.empty()) return configured;
    if (const char* h = std::getenv("HOSTNAME"); h && *h) return h;
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) == 0) return buf;
    return "";
}

std::string host_arch() {
    struct utsname u {};
    if (uname(&u) != 0) return "";
    const std::string m = u.machine;
    if (m == "x86_64") return "amd64";
    if (m == "aarch64" || m == "arm64") return "arm64";
    if (m == "i386" || m == "i486" || m == "i586" || m == "i686") return "x86";
    if (m == "ppc64le" || m == "ppc64") return "ppc64";
    if (m == "ppc") return "ppc32";
    if (m == "s390x") return "s390x";
    if (m.rfind("arm", 0) == 0) return "arm32";
    return m;
}

Result<std::unique_ptr<Agent>> Agent::create(AgentOptions options, AgentDeps deps) {
    if (!deps.sched || !deps.status || !deps.packages || !deps.transport) {
        return fail("opamp agent: missing dependency");
    }
    auto uid = load_or_create_instance_uid(options.state_dir, deps.sched->wall());
    if (!uid) return uid.fail("opamp agent");
    return std::unique_ptr<Agent>(new Agent(std::move(options), std::move(deps), *uid));
}

Agent::Agent(AgentOptions options, AgentDeps deps, Uid uid)
    : opt_(std::move(options)),
      deps_(std::move(deps)),
      uid_(uid),
      backoff_(deps_.random01 ? deps_.random01 : default_random01()),
      heartbeat_(opt_.heartbeat_interval) {
    heartbeat_timer_ = deps_.sched->timer();
    reconnect_timer_ = deps_.sched->timer();
    stop_timer_ = deps_.sched->timer();
    if (!opt_.supervisor_storage_dir.empty()) {
        watcher_ = std::make_unique<PersistentStateWatcher>(
            *deps_.sched, opt_.supervisor_storage_dir, opt_.persistent_state_poll,
            [this] { state_changed(); });
    }
}

Agent::~Agent() {
    // Timers and the watcher go first so no callback can reach a half-destroyed agent.
    heartbeat_timer_.reset();
    reconnect_timer_.reset();
    stop_timer_.reset();
    watcher_.reset();
    transport_.reset();
}

const std::string& Agent::collector_uid() const {
    static const std::string none;
    return watcher_ ? watcher_->collector_uid() : none;
}

void Agent::start() {
    if (state_ != State::idle) return;
    if (watcher_) watcher_->start();
    log::info("opamp agent starting",
              {{"instance_uid", uid_to_text(uid_)}, {"heartbeat", ms_text(heartbeat_)}});
    connect_now();
}

std::string Agent::read_token() const {
    if (!opt_.enrollment_token_file.empty()) {
        auto text = read_token_file(opt_.enrollment_token_file);
        if (text) return text::trim(*text);
        log::error("cannot read the enrollment token; connecting without it",
                   {{"error", text.error().message()}});
        return "";
    }
    if (!opt_.enrollment_token_env.empty()) {
        const char* v = std::getenv(opt_.enrollment_token_env.c_str());
        if (v && *v) return text::trim(v);
        log::error("enrollment token variable is empty or unset; connecting without it",
                   {{"variable", opt_.enrollment_token_env}});
    }
    return "";
}

void Agent::connect_now() {
    state_ = State::connecting;
    HttpHeaders headers;
    // The token is read at every attempt (it may be rotated) and never logged.
    if (std::string token = read_token(); !token.empty()) {
        headers.emplace_back("Authorization", "Bearer " + token);
    }
    Transport::Handlers h;
    h.on_open = [this] { on_open(); };
    h.on_message = [this](std::string_view d) { on_message(d); };
    h.on_closed = [this](TransportClosed c) { on_closed(std::move(c)); };
    // Replacing the previous transport here is safe: this runs from start() or a timer, never
    // from inside that transport's own callbacks.
    transport_ = deps_.transport(std::move(headers), std::move(h));
    transport_->connect();
}

void Agent::on_open() {
    if (state_ != State::connecting) return;
    state_ = State::connected;
    opened_at_ = deps_.sched->now();
    sent_desc_.reset();
    sent_health_.reset();
    sent_packages_.reset();
    uid_change_this_connection_ = false;
    log::info("opamp connected", {{"instance_uid", uid_to_text(uid_)}});
    report(true, true);
}

void Agent::on_message(std::string_view data) {
    if (state_ != State::connected) return;
    auto body = unframe_message(data);
    if (!body) {
        log::warn("ignoring malformed OpAMP message", {{"error", body.error().message()}});
        return;
    }
    auto msg = decode_server_to_agent(*body);
    if (!msg) {
        log::warn("ignoring undecodable OpAMP message",
                  {{"error", msg.error().message()}, {"bytes", body->size()}});
        return;
    }
    if (!msg->instance_uid.empty() && msg->instance_uid != uid_bytes(uid_)) {
        log::warn("ignoring OpAMP message for another instance uid");
        return;
    }
    if (deps_.on_server_message) deps_.on_server_message(*msg);
    apply(*msg);
}

void Agent::apply(const ServerToAgent& msg) {
    bool full = (msg.flags & server_flag::report_full_state) != 0;
    if (msg.error_response) {
        const ServerErrorResponse& e = *msg.error_response;
        if (e.type == ServerErrorType::unavailable) {
            // Clamped in uint64 first: a hostile value must not overflow the millisecond count.
            Duration delay =
                e.retry_after_nanoseconds
                    ? refusal_delay(Duration(std::min<uint64_t>(
                          *e.retry_after_nanoseconds / 1'000'000, kMaxRetryAfter.count())))
                    : backoff_.next();
            log::warn("opamp server unavailable, disconnecting",
                      {{"error", e.error_message}, {"retry_in", ms_text(delay)}});
            closing_delay_ = delay;
            state_ = State::closing;
            heartbeat_timer_->stop();
            transport_->close(1000, "server unavailable");
            return;
        }
        log::warn("opamp server reported an error",
                  {{"type", static_cast<int>(e.type)}, {"error", e.error_message}});
    }
    if (msg.new_instance_uid) {
        auto nu = uid_from_bytes(*msg.new_instance_uid);
        if (!nu) {
            log::warn("ignoring new_instance_uid from the server",
                      {{"error", nu.error().message()}});
        } else if (*nu != uid_ && uid_change_this_connection_) {
            // A server flapping between two uids once cost an fsync per message on the loop.
            log::warn("ignoring a second new_instance_uid on this connection",
                      {{"new", uid_to_text(*nu)}});
        } else if (*nu != uid_) {
            uid_change_this_connection_ = true;
            adopt_uid(*nu);
        }
    }
    if (msg.heartbeat_interval_seconds) {
        // Clamped so that a hostile value cannot overflow the millisecond count.
        Duration hb = std::chrono::seconds(std::min<uint64_t>(
            *msg.heartbeat_interval_seconds,
            std::chrono::duration_cast<std::chrono::seconds>(kMaxHeartbeat).count()));
        if (hb != heartbeat_) {
            log::info("heartbeat interval from the server", {{"interval", ms_text(hb)}});
            heartbeat_ = hb;
            arm_heartbeat();
        }
    }
    if (msg.packages_available) deps_.packages->offer(*msg.packages_available);
    if (msg.command) log::info("ignoring server command", {{"type", *msg.command}});
    if (full && !full_report_posted_) {
        // However many ReportFullState flags one read carries, one full report answers them.
        full_report_posted_ = true;
        deps_.sched->post(guard_.bind([this] {
            full_report_posted_ = false;
            report(true, true);
        }));
    }
    if (!full_report_posted_) report(false, false);
}

void Agent::adopt_uid(const Uid& nu) {
    // Stored before use, so a restart never goes back to the old identity once the server has
    // seen the new one; the write and its fsyncs run on the work queue, not the loop.
    auto result = std::make_shared<Status>();
    uid_adopting_ = true;
    deps_.sched->post_work(
        [dir = opt_.state_dir, nu, result] { *result = store_instance_uid(dir, nu); },
        guard_.bind([this, nu, result](bool cancelled) {
            uid_adopting_ = false;
            const bool full = held_full_;
            held_full_ = false;
            if (cancelled) return;
            if (!*result) {
                log::error("cannot store the new instance uid; using it until restart",
                           {{"error", result->error().message()}});
            }
            log::info("adopted instance uid from the server",
                      {{"old", uid_to_text(uid_)}, {"new", uid_to_text(nu)}});
            uid_ = nu;
            // Whatever waited goes out now, with the new uid and service.instance.id.
            if (state_ == State::connected) report(full, full);
        }));
}

void Agent::state_changed() {
    if (state_ == State::connected) report(false, false);
}

AgentDescription Agent::description() const {
    AgentDescription d;
    d.identifying_attributes = {{"service.name", "myriarch-updater"},
                                {"service.instance.id", uid_to_text(uid_)},
                                {"service.version", opt_.service_version}};
    auto& n = d.non_identifying_attributes;
    n.push_back({"host.name", opt_.host_name});
    n.push_back({"os.type", "linux"});
    static const std::string arch = host_arch();  // uname once, not on every report
    n.push_back({"host.arch", arch});
    n.push_back({"dev.myriarch.updater.install_method", opt_.install_method});
    auto add = [&n](const char* key, const std::string& v) {
        if (!v.empty()) n.push_back({key, v});
    };
    add("dev.myriarch.updater.image_collector_version", deps_.status->image_collector_version());
    add("dev.myriarch.collector.instance_uid", collector_uid());
    add("dev.myriarch.collector.version", deps_.status->collector_version());
    return d;
}

void Agent::report(bool full, bool force) {
    if (state_ != State::connected) return;
    if (uid_adopting_) {
        held_full_ = held_full_ || full;
        return;
    }
    AgentToServer msg;
    AgentDescription desc = description();
    ComponentHealth health = deps_.status->health();
    PackageStatuses pkgs = deps_.packages->statuses();
    bool changed = false;
    if (full || sent_desc_ != desc) {
        msg.agent_description = desc;
        changed = true;
    }
    if (full || sent_health_ != health) {
        msg.health = health;
        changed = true;
    }
    if (full || sent_packages_ != pkgs) {
        msg.package_statuses = pkgs;
        changed = true;
    }
    if (!changed && !force) return;
    if (!send(msg)) return;
    sent_desc_ = std::move(desc);
    sent_health_ = std::move(health);
    sent_packages_ = std::move(pkgs);
}

bool Agent::send(AgentToServer& msg) {
    msg.instance_uid = uid_bytes(uid_);
    msg.sequence_num = seq_;
    msg.capabilities = kAgentCapabilities;
    auto st = transport_->send(frame_message(encode(msg)));
    if (!st) {
        log::warn("cannot send OpAMP message", {{"error", st.error().message()}});
        return false;
    }
    ++seq_;
    last_sent_at_ = deps_.sched->now();
    arm_heartbeat();
    return true;
}

void Agent::arm_heartbeat() {
    heartbeat_timer_->stop();
    if (state_ != State::connected || heartbeat_.count() <= 0) return;
    // Counted from the last message sent, so a busy connection sends no extra heartbeats.
    const Duration since = std::chrono::duration_cast<Duration>(deps_.sched->now() - last_sent_at_);
    const Duration wait = since >= heartbeat_ ? Duration(0) : heartbeat_ - since;
    heartbeat_timer_->start(wait, [this] {
        if (state_ != State::connected) return;
        AgentToServer hb;
        send(hb);
    });
}

void Agent::on_closed(TransportClosed info) {
    heartbeat_timer_->stop();
    const State was = state_;
    if (was == State::stopping) {
        finish_stop();
        return;
    }
    if (was == State::stopped || was == State::idle) return;
    state_ = State::waiting;
    const MonoTime now = deps_.sched->now();
    if (was == State::closing && closing_delay_) {
        const Duration d = *closing_delay_;
        closing_delay_.reset();
        schedule_reconnect(d, "server unavailable");
        return;
    }
    if (was == State::connected && now - opened_at_ >= kStableConnection) {
        backoff_.reset();
        immediate_used_ = false;
    }
    if (info.http_status == 401) {
        log::error(
            "opamp server refused the enrollment token (HTTP 401); check "
            "server.enrollmentTokenFile / enrollmentTokenEnv");
        schedule_reconnect(backoff_.next(), "HTTP 401");
        return;
    }
    if (info.http_status == 429 || info.http_status == 503) {
        Duration d = refusal_delay(info.retry_after.value_or(kDefaultRetryAfter));
        schedule_reconnect(d, "HTTP " + std::to_string(info.http_status));
        return;
    }
    // The close code goes with a local error too: 1008 (our write budget) and 1009 (the message
    // cap) are how an operator tells a budget refusal from a lost connection.
    const bool telling_code = info.code != 0 && info.code != 1006;
    std::string why =
        info.http_status ? "HTTP " + std::to_string(info.http_status)
        : !info.error.empty()
            ? info.error +
                  (telling_code ? " (close " + std::to_string(info.code) + ")" : std::string())
            : "closed with code " + std::to_string(info.code) +
                  (info.reason.empty() ? "" : " (" + info.reason + ")");
    if (was == State::connected && !immediate_used_) {
        immediate_used_ = true;
        schedule_reconnect(Duration(0), why);
        return;
    }
    schedule_reconnect(backoff_.next(), why);
}

Duration Agent::refusal_delay(Duration asked) {
    const Duration grown = backoff_.next();
    return std::clamp(std::max(asked, grown), kMinRetryAfter, kMaxRetryAfter);
}

void Agent::schedule_reconnect(Duration delay, const std::string& why) {
    state_ = State::waiting;
    log::info("opamp disconnected, reconnecting",
              {{"reason", why}, {"delay", ms_text(delay)}, {"attempt", backoff_.attempts()}});
    reconnect_timer_->start(delay, [this] {
        if (state_ == State::waiting) connect_now();
    });
}

void Agent::stop(std::function<void()> done) {
    stop_waiters_.push_back(std::move(done));
    reconnect_timer_->stop();
    heartbeat_timer_->stop();
    switch (state_) {
        case State::connected: {
            AgentToServer bye;
            bye.agent_disconnect = true;
            send(bye);
            heartbeat_timer_->stop();
            [[fallthrough]];
        }
        case State::connecting:
        case State::closing:
            state_ = State::stopping;
            // The timer goes first: a transport may report the close from inside close().
            stop_timer_->start(kStopTimeout, [this] { finish_stop(); });
            transport_->close(1000, "agent shutting down");
            return;
        case State::stopping:
            return;
        case State::idle:
        case State::waiting:
        case State::stopped:
            finish_stop();
            return;
    }
}

void Agent::finish_stop() {
    if (state_ != State::stopped) {
        state_ = State::stopped;
        stop_timer_->stop();
        reconnect_timer_->stop();
        heartbeat_timer_->stop();
        if (watcher_) watcher_->stop();
        log::info("opamp agent stopped");
    }
    // A waiter may end the loop or destroy the agent: run them from a copy the agent no longer
    // owns.
    auto waiters = std::move(stop_waiters_);
    stop_waiters_.clear();
    for (auto& done : waiters) {
        if (done) done();
    }
}

}  // namespace myr::opamp
