// Fake ports for the installer: each records what it was asked into one shared trace (so a test
// can check the order of journal writes and work), answers on a later turn of the FakeScheduler
// with what the test configured, or holds the answer until the test releases it.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loop/fake_scheduler.hpp"
#include "service/service_controller.hpp"
#include "update/ports.hpp"
#include "update/state_files.hpp"

namespace myr::update::testing {

using Trace = std::vector<std::string>;

// The health URLs the tests probe.
inline const Url kSupervisorHealth{"http", "127.0.0.1", 23233, "/health"};
inline const Url kCollectorHealth{"http", "127.0.0.1", 13133, "/"};

// A step whose cancellation the fake can see.
class FakeStep : public Step {
  public:
    explicit FakeStep(std::shared_ptr<bool> alive) : alive_(std::move(alive)) {}
    ~FakeStep() override { *alive_ = false; }

  private:
    std::shared_ptr<bool> alive_;
};

// One outstanding answer: `fire` runs it (on a later turn) unless its step was cancelled.
struct Held {
    std::shared_ptr<bool> alive;
    std::function<void()> fire;
};

class Answers {
  public:
    explicit Answers(loop::FakeScheduler& s) : sched_(s) {}
    bool hold = false;
    std::deque<Held> held;
    int cancelled() const {
        int n = 0;
        for (auto& a : all_) n += *a ? 0 : 1;
        return n;
    }
    // Returns the step for the caller; answers now (next turn) or when released.
    std::unique_ptr<Step> answer(std::function<void()> fire) {
        auto alive = std::make_shared<bool>(true);
        all_.push_back(alive);
        Held h{alive, std::move(fire)};
        if (hold) {
            held.push_back(std::move(h));
        } else {
            send(std::move(h));
        }
        return std::make_unique<FakeStep>(alive);
    }
    void release() {
        Held h = std::move(held.front());
        held.pop_front();
        send(std::move(h));
    }

  private:
    void send(Held h) {
        sched_.post([h = std::move(h)] {
            if (*h.alive) h.fire();
        });
    }
    loop::FakeScheduler& sched_;
    std::vector<std::shared_ptr<bool>> all_;
};

class FakeFetcher : public Fetcher {
  public:
    FakeFetcher(loop::FakeScheduler& s, Trace& t) : answers(s), trace_(t) {}
    Status check_url(const std::string& url) const override {
        if (url.rfind(allowed_prefix, 0) == 0) return {};
        return fail(Errc::invalid, url + " is not under an allowed prefix");
    }
    std::unique_ptr<Step> fetch(download::Request req, download::Downloader::Handlers h) override {
        trace_.push_back("fetch:" + req.url);
        requests.push_back(req);
        handlers = h;
        auto result = result_for ? result_for(req) : Result<download::Artifact>(artifact(req));
        return answers.answer([h, result] { h.on_done(result); });
    }
    download::Artifact artifact(const download::Request& r) const {
        download::Artifact a;
        a.path = "/state/spool/" + r.content_hash_hex;
        a.sha256_hex = sha_override.empty() ? r.content_hash_hex : sha_override;
        a.size = 1000;
        return a;
    }
    std::string allowed_prefix = "https://artifacts.example/";
    std::string sha_override;  // what the download "computed"
    std::function<Result<download::Artifact>(const download::Request&)> result_for;
    std::vector<download::Request> requests;
    download::Downloader::Handlers handlers;
    Answers answers;

  private:
    Trace& trace_;
};

class FakeVerifier : public Verifier {
  public:
    FakeVerifier(loop::FakeScheduler& s, Trace& t) : answers(s), trace_(t) {}
    std::unique_ptr<Step> verify(Request req, Callback<Verified> done) override {
        trace_.push_back("verify:" + req.bundle_json);
        Result<Verified> r = fail(Errc::integrity, "identity: wrong subject");
        if (!root_problem.empty()) r = fail(Errc::refused, root_problem);
        if (req.bundle_json == good_bundle) r = Verified{"subject@example", "issuer"};
        return answers.answer([done, r] { done(r); });
    }
    std::string trust() const override { return trust_id; }
    std::string good_bundle = "{good bundle}";
    std::string trust_id;      // the root in use, as the real verifier names it (its SHA-256)
    std::string root_problem;  // set: no usable root (every bundle but the good one refused so)
    Answers answers;

  private:
    Trace& trace_;
};

class FakeStager : public Stager {
  public:
    FakeStager(loop::FakeScheduler& s, Trace& t) : answers(s), trace_(t) {}
    std::unique_ptr<Step> stage(std::string path, Callback<Staged> done) override {
        trace_.push_back("stage:" + path);
        Result<Staged> r =
            error.empty()
                ? Result<Staged>(Staged{"st1", "/c/.staging/st1/otelcol", std::string(64, 'b'), 10})
                : Result<Staged>(fail(
                      Error(error_errno != 0 ? Errc::system : Errc::invalid, error, error_errno)));
        return answers.answer([done, r] { done(r); });
    }
    std::string error;
    int error_errno = 0;  // with `error`: a system error (ENOSPC: the volume full)
    Answers answers;

  private:
    Trace& trace_;
};

class FakePreflight : public Preflighter {
  public:
    FakePreflight(loop::FakeScheduler& s, Trace& t) : answers(s), trace_(t) {}
    std::unique_ptr<Step> run(stage::PreflightRequest req,
                              Callback<stage::PreflightReport> done) override {
        trace_.push_back("preflight:" + req.binary);
        requests.push_back(req);
        Result<stage::PreflightReport> r = fail(Errc::process, error);
        if (error.empty()) r = stage::PreflightReport{req.expected_version, 1234, {}};
        return answers.answer([done, r] { done(r); });
    }
    std::string error;
    std::vector<stage::PreflightRequest> requests;
    Answers answers;

  private:
    Trace& trace_;
};

// The supervisor. start() makes it `running` (or what `after_start` says: a collector that
// crashes at start leaves it waiting to restart); answers on a later turn unless held.
class FakeService : public service::ServiceController {
  public:
    FakeService(loop::FakeScheduler& s, Trace& t) : sched_(s), trace_(t) {}
    service::State state() const override { return state_; }
    service::Desired desired() const override { return desired_; }
    void on_change(std::function<void()> listener) override {
        listeners_.push_back(std::move(listener));
    }
    // The supervisor's state changed on its own (an unexpected end): the listeners hear it on a
    // later turn, as from the real one.
    void change(service::State st, service::Desired d = service::Desired::running) {
        state_ = st;
        desired_ = d;
        for (auto& l : listeners_) sched_.post(l);
    }
    void stop(service::Done done) override {
        trace_.push_back("stop");
        auto fire = [this, done] {
            state_ = service::State::stopped;
            desired_ = service::Desired::stopped;
            done(stop_result);
        };
        if (hold_stop) {
            held_stop.push_back(fire);
        } else {
            sched_.post(fire);
        }
    }
    void start(service::Done done) override {
        trace_.push_back("start");
        auto fire = [this, done] {
            ++starts;
            desired_ = service::Desired::running;
            state_ = after_start.empty() ? service::State::running : after_start.front();
            if (after_start.size() > 1) after_start.pop_front();
            done(start_result);
        };
        if (hold_start) {
            held_start.push_back(fire);
        } else {
            sched_.post(fire);
        }
    }
    std::optional<pid_t> forward(int) override { return std::nullopt; }

    service::State state_ = service::State::running;
    service::Desired desired_ = service::Desired::running;
    std::deque<service::State> after_start;  // state after each start (the last one repeats)
    Status stop_result;
    Status start_result;
    bool hold_stop = false;
    bool hold_start = false;
    std::vector<std::function<void()>> held_start;
    std::vector<std::function<void()>> held_stop;
    int starts = 0;

  private:
    loop::FakeScheduler& sched_;
    Trace& trace_;
    std::vector<std::function<void()>> listeners_;
};

class FakeHealth : public HealthProbe {
  public:
    FakeHealth(loop::FakeScheduler& s, Trace& t) : answers(s), trace_(t) {}
    std::unique_ptr<Step> get(const Url& url, Duration, Callback<int> done) override {
        ++gets;
        trace_.push_back("get:" + url.str());
        Result<int> r = answer ? answer(url) : Result<int>(200);
        return answers.answer([done, r] { done(r); });
    }
    std::function<Result<int>(const Url&)> answer;
    int gets = 0;
    Answers answers;

  private:
    Trace& trace_;
};

class FakeVolume : public VolumeOps {
  public:
    FakeVolume(loop::FakeScheduler& s, Trace& t) : answers(s), trace_(t) {}
    std::unique_ptr<Step> inspect(Callback<Inspection> done) override {
        trace_.push_back("inspect");
        Inspection i = inspection;
        return answers.answer([done, i] { done(i); });
    }
    std::unique_ptr<Step> write_journal(JournalEntry e, Done done) override {
        trace_.push_back("journal:" + e.phase);
        journal = e;
        Status st;
        if (journal_fails_at == e.phase) st = fail(Errc::system, "disk full");
        return answers.answer([done, st] { done(st); });
    }
    std::unique_ptr<Step> activate(Activation a, Done done) override {
        trace_.push_back("activate:" + a.version + ":prev=" + a.previous + ":" + a.staged_id);
        Status st = activate_result;
        return answers.answer([this, done, st, a] {
            if (st) inspection.active = a.version;
            done(st);
        });
    }
    std::unique_ptr<Step> switch_back(std::string version, Done done) override {
        trace_.push_back("switch_back:" + version);
        Status st = switch_result;
        return answers.answer([this, done, st, version] {
            if (st) inspection.active = version;
            done(st);
        });
    }
    std::unique_ptr<Step> finish(Finish f, Done done) override {
        trace_.push_back(
            std::string("finish:") + (f.clear_journal ? "clear" : "keep") + (f.gc ? ":gc" : "") +
            (f.staged_id.empty() ? "" : ":discard=" + f.staged_id) +
            (f.attempt ? std::string(":attempt=") + to_string(f.attempt->outcome) : "") +
            (f.packages ? ":packages" : ""));
        finishes.push_back(f);
        Status st;
        if (!finish_results.empty()) {
            st = finish_results.front();
            finish_results.pop_front();
        }
        if (!st) return answers.answer([done, st] { done(st); });  // nothing written
        if (f.clear_journal) journal.reset();
        if (f.attempt) inspection.last_attempt = f.attempt;
        return answers.answer([done] { done(Status()); });
    }
    Inspection inspection{"0.116.0", true, "0.115.0",    std::nullopt,
                          {},        0,    std::nullopt, std::nullopt};
    std::optional<JournalEntry> journal;
    std::string journal_fails_at;
    Status activate_result;
    Status switch_result;
    std::vector<Finish> finishes;
    std::deque<Status> finish_results;  // the answers of the next finishes (then success)
    Answers answers;

  private:
    Trace& trace_;
};

// The scheduler, the trace and the fakes that the installer and its parts (the health rounds, the
// rollback) run on.
struct FakeParts {
    loop::FakeScheduler sched;
    Trace trace;
    FakeService service{sched, trace};
    FakeVolume volume{sched, trace};
    FakeHealth health{sched, trace};
};

}  // namespace myr::update::testing
