// The mode's life from start-up to exit on the fake scheduler: the start-up steps in order, every
// way a stop begins (signal, failed start, crash loop), the wait for an install's critical
// section, and signal forwarding. The steps, the service, the critical section and the agent are
// fakes that take time on the fake clock the way the real ones do (work-queue jobs, a probe, a
// stop that waits for the child), and every case ends with no timer left armed.
#include "runtime/lifecycle.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include "loop/fake_scheduler.hpp"

using namespace myr;
using namespace std::chrono_literals;
using runtime::Stage;
using service::Desired;
using service::State;

namespace {

using Trace = std::vector<std::string>;

// The supervisor: starts at once, takes `stop_takes` to stop (as a child that honours TERM
// does), announces changes on a later turn like ChildService.
class FakeService : public service::ServiceController {
  public:
    FakeService(loop::FakeScheduler& s, Trace& t) : sched_(s), trace_(t), stop_timer_(s.timer()) {}

    State state() const override { return state_; }
    Desired desired() const override { return desired_; }
    void on_change(std::function<void()> l) override { listeners_.push_back(std::move(l)); }
    void stop(service::Done done) override {
        trace_.push_back("service stop");
        set(State::stopping, Desired::stopped);
        stop_timer_->start(stop_takes, [this, done] {
            set(State::stopped, Desired::stopped);
            done({});
        });
    }
    void start(service::Done done) override {
        trace_.push_back("service start");
        sched_.post([this, done] {
            set(State::running, Desired::running);
            done({});
        });
    }
    std::optional<pid_t> forward(int sig) override {
        forwarded.push_back(sig);
        if (state_ != State::running) return std::nullopt;
        return 42;
    }

    // What the restart policy does after too many unexpected ends.
    void give_up() { set(State::stopped, Desired::gave_up); }
    void set(State s, Desired d) {
        state_ = s;
        desired_ = d;
        sched_.post([this] {
            for (auto& l : listeners_) l();
        });
    }

    Duration stop_takes = 2s;
    std::vector<int> forwarded;

  private:
    loop::FakeScheduler& sched_;
    Trace& trace_;
    std::unique_ptr<loop::Timer> stop_timer_;
    State state_ = State::stopped;
    Desired desired_ = Desired::not_started;
    std::vector<std::function<void()>> listeners_;
};

// The installer's critical section, opened and closed by the test.
class FakeCritical : public service::CriticalSection {
  public:
    bool active() const override { return active_; }
    void on_end(std::function<void()> cb) override {
        if (!active_) return cb();
        waiters_.push_back(std::move(cb));
    }
    void begin() { active_ = true; }
    // Waiters run inside the call, as the installer's transition runs them.
    void end() {
        active_ = false;
        auto w = std::move(waiters_);
        waiters_.clear();
        for (auto& cb : w) cb();
    }
    size_t waiting() const { return waiters_.size(); }

  private:
    bool active_ = false;
    std::vector<std::function<void()>> waiters_;
};

struct Rig {
    loop::FakeScheduler sched;
    Trace trace;
    FakeService service{sched, trace};
    FakeCritical critical;
    std::unique_ptr<loop::Timer> probe_timer = sched.timer();
    std::unique_ptr<loop::Timer> agent_timer = sched.timer();
    Status recover_result;
    Status seed_result;
    std::optional<int> finished;
    std::unique_ptr<runtime::Lifecycle> life;

    // `host`: host mode's steps (the unit outlives the updater, a crash loop is only reported).
    explicit Rig(bool host = false) {
        runtime::LifecycleSteps s;
        s.leave_service_running = host;
        s.exit_on_crash_loop = !host;
        s.recovering = [this](auto done) {
            trace.push_back("recover");
            sched.post_work([] {}, [this, done](bool) { done(recover_result); });
        };
        // `seedBinary --version` through the reaper takes a moment.
        s.probing_image = [this](auto done) {
            trace.push_back("probe image");
            probe_timer->start(50ms, done);
        };
        s.seeding = [this](auto done) {
            trace.push_back("seed");
            sched.post_work([] {}, [this, done](bool) { done(seed_result); });
        };
        s.start_installer = [this] {
            trace.push_back("start installer");
            return &critical;
        };
        s.start_agent = [this] { trace.push_back("start agent"); };
        s.stop_installer = [this] { trace.push_back("stop installer"); };
        // The goodbye and the close take a moment.
        s.stop_agent = [this](std::function<void()> done) {
            trace.push_back("stop agent");
            agent_timer->start(100ms, [this, done] {
                trace.push_back("agent stopped");
                done();
            });
        };
        life = std::make_unique<runtime::Lifecycle>(sched, service, std::move(s));
    }

    void begin() {
        life->start([this](int code) {
            trace.push_back("finished " + std::to_string(code));
            finished = code;
        });
    }
    // Through start-up to running.
    void start() {
        begin();
        sched.run_pending();
        sched.advance(50ms);
    }
    // Long enough for every stop the fakes take.
    void settle() { sched.advance(10s); }
    // The stop ran to its end exactly once, with `code`, and left no timer armed.
    void check_finished_once(int code) {
        settle();
        CHECK(finished == code);
        CHECK(count("finished " + std::to_string(code)) == 1);
        CHECK(count("stop installer") == 1);
        CHECK(count("service stop") == 1);
        CHECK(count("stop agent") == 1);
        CHECK(sched.armed_timers() == 0);
    }
    // Running, inside an install's critical section, when the service gives up.
    void give_up_inside_critical_section() {
        start();
        critical.begin();
        service.give_up();
        sched.run_pending();
    }
    bool traced(const std::string& what) const {
        return std::find(trace.begin(), trace.end(), what) != trace.end();
    }
    long count(const std::string& what) const {
        return std::count(trace.begin(), trace.end(), what);
    }
};

}  // namespace

TEST_CASE(
    "lifecycle: start-up runs recovery, the probe and seeding, then installer, service, agent") {
    Rig rig;
    rig.start();
    CHECK(rig.life->stage() == Stage::running);
    CHECK(rig.trace == Trace{"recover", "probe image", "seed", "start installer", "service start",
                             "start agent"});
    rig.sched.run_pending();
    CHECK(rig.service.state() == State::running);
    CHECK_FALSE(rig.finished.has_value());
    CHECK(rig.sched.armed_timers() == 0);
}

TEST_CASE("lifecycle: a failed recovery or seed ends the start with exit 1; no service starts") {
    // The stop after a failed start is the usual one: the installer (none yet), the service
    // (never started), the agent (none).
    const Trace stop{"stop installer", "service stop", "stop agent", "agent stopped", "finished 1"};
    struct Case {
        Status Rig::*result;
        Trace start;
        const char* reason;  // the termination message's
    };
    const Case cases[] = {
        {&Rig::recover_result,
         {"recover"},
         "start-up failed while recovering: volume /otel: read-only file system"},
        {&Rig::seed_result,
         {"recover", "probe image", "seed"},
         "start-up failed while seeding: volume /otel: read-only file system"},
    };
    for (const Case& c : cases) {
        Rig rig;
        rig.*c.result = fail("volume /otel: read-only file system");
        rig.start();
        rig.settle();
        Trace want = c.start;
        want.insert(want.end(), stop.begin(), stop.end());
        CHECK(rig.trace == want);
        CHECK(rig.finished == 1);
        CHECK(rig.life->exit_code() == 1);
        CHECK(rig.life->exit_reason() == c.reason);
        CHECK(rig.sched.armed_timers() == 0);
    }
}

TEST_CASE("lifecycle: TERM during start-up drops the step's late answer and exits 0") {
    Rig rig;
    rig.begin();
    CHECK(rig.life->stage() == Stage::recovering);
    rig.life->signal(SIGTERM);
    CHECK(rig.life->stage() == Stage::stopping);
    rig.check_finished_once(0);
    CHECK(rig.life->exit_reason().empty());
    CHECK_FALSE(rig.traced("probe image"));
    CHECK_FALSE(rig.traced("service start"));
}

TEST_CASE("lifecycle: TERM outside the critical section stops service and agent side by side") {
    Rig rig;
    rig.start();
    rig.trace.clear();
    rig.life->signal(SIGTERM);
    CHECK(rig.life->stage() == Stage::stopping);
    CHECK(rig.trace == Trace{"stop installer", "service stop", "stop agent"});
    // The agent is gone after 100 ms; the stop is complete only with the service, after 2 s.
    rig.sched.advance(1s);
    CHECK(rig.traced("agent stopped"));
    CHECK_FALSE(rig.finished.has_value());
    rig.sched.advance(1s);
    CHECK(rig.finished == 0);
    CHECK(rig.service.state() == State::stopped);
    CHECK(rig.sched.armed_timers() == 0);
}

TEST_CASE(
    "lifecycle: host mode's exit waits for the critical section and leaves the unit running") {
    Rig rig(true);
    rig.start();
    rig.critical.begin();
    rig.trace.clear();
    rig.life->signal(SIGTERM);
    CHECK(rig.trace == Trace{"stop installer"});
    rig.critical.end();
    rig.sched.run_pending();
    CHECK(rig.trace == Trace{"stop installer", "stop agent"});
    rig.settle();
    CHECK(rig.finished == 0);
    CHECK_FALSE(rig.traced("service stop"));
    CHECK(rig.service.state() == State::running);
    CHECK(rig.sched.armed_timers() == 0);
}

TEST_CASE("lifecycle: TERM inside the critical section waits for its end before stopping") {
    Rig rig;
    rig.start();
    rig.critical.begin();
    rig.trace.clear();
    rig.life->signal(SIGINT);
    CHECK(rig.trace == Trace{"stop installer"});
    rig.sched.advance(5min);
    CHECK_FALSE(rig.traced("service stop"));
    CHECK_FALSE(rig.traced("stop agent"));
    CHECK_FALSE(rig.finished.has_value());
    rig.critical.end();
    CHECK(rig.trace == Trace{"stop installer", "service stop", "stop agent"});
    rig.check_finished_once(0);
}

TEST_CASE("lifecycle: a second TERM or INT changes nothing") {
    Rig rig;
    rig.start();
    rig.critical.begin();
    rig.life->signal(SIGTERM);
    rig.life->signal(SIGTERM);
    rig.life->signal(SIGINT);
    CHECK(rig.count("stop installer") == 1);
    CHECK(rig.critical.waiting() == 1);
    rig.critical.end();
    rig.life->signal(SIGTERM);
    rig.check_finished_once(0);
}

TEST_CASE("lifecycle: a crash loop ends with exit 1, and a later TERM keeps that code") {
    Rig rig;
    rig.start();
    rig.service.give_up();
    rig.sched.run_pending();
    CHECK(rig.life->stage() == Stage::stopping);
    rig.life->signal(SIGTERM);
    rig.check_finished_once(1);
    CHECK(rig.life->exit_reason() == "crash loop");
}

TEST_CASE("lifecycle: host mode reports a unit's crash loop and keeps running; TERM exits 0") {
    Rig rig(true);
    rig.start();
    rig.service.give_up();
    rig.sched.run_pending();
    rig.sched.advance(1min);
    CHECK(rig.life->stage() == Stage::running);
    CHECK_FALSE(rig.finished.has_value());
    // Inside a critical section and after it too.
    rig.critical.begin();
    rig.service.give_up();
    rig.critical.end();
    rig.sched.run_pending();
    CHECK(rig.life->stage() == Stage::running);
    rig.life->signal(SIGTERM);
    rig.settle();
    CHECK(rig.finished == 0);
    CHECK(rig.life->exit_reason().empty());
    CHECK_FALSE(rig.traced("service stop"));
}

TEST_CASE("lifecycle: a crash loop inside the critical section is the installer's to roll back") {
    Rig rig;
    rig.give_up_inside_critical_section();
    rig.sched.advance(1min);
    CHECK(rig.life->stage() == Stage::running);
    // The rollback starts the previous version, which runs: no exit when the section ends.
    rig.service.set(State::running, Desired::running);
    rig.critical.end();
    rig.sched.run_pending();
    rig.sched.advance(1min);
    CHECK(rig.life->stage() == Stage::running);
    CHECK_FALSE(rig.finished.has_value());
    CHECK(rig.sched.armed_timers() == 0);
}

TEST_CASE("lifecycle: a crash loop still there when the critical section ends exits 1, once") {
    Rig rig;
    rig.give_up_inside_critical_section();
    // More change events while the section runs register no second exit.
    rig.service.give_up();
    rig.sched.run_pending();
    CHECK(rig.life->stage() == Stage::running);
    CHECK(rig.critical.waiting() == 1);
    rig.critical.end();
    // Decided on a later turn, not inside the installer's transition.
    CHECK(rig.life->stage() == Stage::running);
    rig.sched.run_pending();
    CHECK(rig.life->stage() == Stage::stopping);
    rig.check_finished_once(1);
}

TEST_CASE("lifecycle: HUP, USR1 and USR2 go to the service and stop nothing") {
    Rig rig;
    rig.start();
    rig.sched.run_pending();
    for (int sig : runtime::kForwardedSignals) rig.life->signal(sig);
    CHECK(rig.service.forwarded == std::vector<int>{SIGHUP, SIGUSR1, SIGUSR2});
    CHECK(rig.life->stage() == Stage::running);
    CHECK_FALSE(rig.traced("stop installer"));
    // Before the service runs there is nobody to forward to; still no stop.
    Rig early;
    early.life->signal(SIGHUP);
    CHECK(early.service.forwarded == std::vector<int>{SIGHUP});
    CHECK(early.life->stage() == Stage::recovering);
    CHECK(rig.sched.armed_timers() == 0);
    CHECK(early.sched.armed_timers() == 0);
}
