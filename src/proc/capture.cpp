// run_capture: a short-lived command (`seedBinary --version`, the installer's preflight) whose
// output is read through a pipe on the loop while the Reaper waits for its end.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "core/log.hpp"
#include "proc/reaper.hpp"

namespace myr::proc {

int Captured::exit_code() const {
    return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

namespace {

// One run. Owns itself: deleted in the pipe's close callback after the user's callback ran.
// Finishes when the process ended and its output reached EOF; a grandchild that keeps the pipe
// open after the process ended gets a short grace before we stop reading.
struct CaptureJob {
    loop::Handle<uv_pipe_t> pipe;  // empty when the pipe could not be opened
    std::unique_ptr<loop::Timer> timer;
    CaptureOptions opts;
    CaptureCallback callback;
    std::string what;
    pid_t pid = -1;
    int exec_errno = 0;
    bool exited = false;
    bool eof = false;
    bool timed_out = false;
    bool done = false;
    Captured result;

    void finish(Result<Captured> r) {
        if (done) return;
        done = true;
        timer.reset();
        CaptureCallback cb = std::move(callback);
        // With a pipe, the job is freed once libuv is done with it; the callback runs first.
        const bool freed_on_close = static_cast<bool>(pipe);
        if (pipe) {
            uv_read_stop(pipe.stream());
            pipe.close([this] { delete this; });
        }
        cb(std::move(r));
        if (!freed_on_close) delete this;
    }

    void maybe_finish() {
        if (!exited || !eof) return;
        if (exec_errno != 0) {
            finish(fail(Error(Errc::process, Error::from_errno("run " + what, exec_errno).message(),
                              exec_errno)));
        } else if (timed_out) {
            finish(fail(Errc::timeout, "run " + what + ": timed out after " +
                                           format_duration(opts.timeout) + " (killed)"));
        } else {
            finish(std::move(result));
        }
    }

    void on_exit(int status, const struct rusage& usage) {
        exited = true;
        // The group outlives its leader while a member lives; its id is not reused before the
        // group is empty, so the kill cannot reach anybody else's processes.
        result.left_processes = ::kill(-pid, SIGKILL) == 0;
        result.wait_status = status;
        result.max_rss_kib = usage.ru_maxrss;
        if (eof) return maybe_finish();
        // Give the pipe a moment to drain; a descendant holding it open does not hold us up.
        timer->start(Duration(200), [this] {
            eof = true;
            maybe_finish();
        });
    }
};

void on_alloc(uv_handle_t*, size_t suggested, uv_buf_t* buf) noexcept {
    buf->base = new char[suggested];
    buf->len = suggested;
}

void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) noexcept {
    auto* job = static_cast<CaptureJob*>(s->data);
    if (n > 0) {
        std::string& out = job->result.output;
        const size_t max = job->opts.max_output;
        if (job->opts.keep_tail) {
            out.append(buf->base, static_cast<size_t>(n));
            if (out.size() > max) {
                out.erase(0, out.size() - max);
                job->result.truncated = true;
            }
        } else {
            size_t room = max - std::min(max, out.size());
            size_t take = std::min(room, static_cast<size_t>(n));
            out.append(buf->base, take);
            if (take < static_cast<size_t>(n)) job->result.truncated = true;
        }
    }
    delete[] buf->base;
    if (n < 0) {
        uv_read_stop(s);
        job->eof = true;
        job->maybe_finish();
    }
}

}  // namespace

pid_t run_capture(Reaper& reaper, loop::Scheduler& sched, const std::vector<std::string>& argv,
                  const CaptureOptions& opts, CaptureCallback callback) {
    auto* job = new CaptureJob();
    job->opts = opts;
    job->callback = std::move(callback);
    job->what = argv.empty() ? std::string("(empty command)") : argv[0];
    job->timer = sched.timer();

    // Failures before the process exists still answer through the loop, never from inside the call.
    auto fail_later = [job, &sched](Error e) -> pid_t {
        sched.post([job, e] { job->finish(fail(e)); });
        return -1;
    };

    int p[2];
    if (auto st = make_pipe(p); !st) return fail_later(st.error().context("run " + job->what));
    SpawnOptions so;
    so.output_fd = p[1];
    so.run_as = opts.run_as;
    so.env = opts.env;
    auto s = reaper.spawn_with_usage(
        argv, so, [job](int status, const struct rusage& usage) { job->on_exit(status, usage); });
    ::close(p[1]);
    if (!s) {
        ::close(p[0]);
        return fail_later(s.error().context("run"));
    }
    job->pid = s->pid;
    job->exec_errno = s->exec_errno;

    job->pipe = loop::Handle<uv_pipe_t>(reaper.loop().get());
    if (!job->pipe || uv_pipe_open(job->pipe.get(), p[0]) != 0) {
        ::close(p[0]);
        job->pipe.close();
        job->eof = true;  // nothing to read; the exit still finishes the job
    } else {
        job->pipe->data = job;
        uv_read_start(job->pipe.stream(), on_alloc, on_read);
    }
    job->timer->start(opts.timeout, [job] {
        job->timed_out = true;
        ::kill(-job->pid, SIGKILL);
    });
    return s->pid;
}

}  // namespace myr::proc
