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
    uv_pipe_t pipe{};
    bool pipe_open = false;
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
        if (pipe_open) {
            uv_read_stop(reinterpret_cast<uv_stream_t*>(&pipe));
            uv_close(reinterpret_cast<uv_handle_t*>(&pipe),
                     [](uv_handle_t* h) { delete static_cast<CaptureJob*>(h->data); });
        }
        bool self_delete = pipe_open;
        cb(std::move(r));
        if (!self_delete) delete this;
    }

    void maybe_finish() {
        if (!exited || !eof) return;
        if (exec_errno != 0) {
            finish(fail(Error::from_errno("run " + what, exec_errno)));
        } else if (timed_out) {
            finish(fail("run " + what + ": timed out after " + format_duration(opts.timeout) +
                        " (killed)"));
        } else {
            finish(std::move(result));
        }
    }

    void on_exit(int status) {
        exited = true;
        result.wait_status = status;
        if (eof) return maybe_finish();
        // Give the pipe a moment to drain; a descendant holding it open does not hold us up.
        timer->start(Duration(200), [this] {
            eof = true;
            maybe_finish();
        });
    }
};

void on_alloc(uv_handle_t*, size_t suggested, uv_buf_t* buf) {
    buf->base = new char[suggested];
    buf->len = suggested;
}

void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
    auto* job = static_cast<CaptureJob*>(s->data);
    if (n > 0) {
        size_t room =
            job->opts.max_output - std::min(job->opts.max_output, job->result.output.size());
        size_t take = std::min(room, static_cast<size_t>(n));
        job->result.output.append(buf->base, take);
        if (take < static_cast<size_t>(n)) job->result.truncated = true;
    }
    delete[] buf->base;
    if (n < 0) {
        uv_read_stop(s);
        job->eof = true;
        job->maybe_finish();
    }
}

}  // namespace

void run_capture(Reaper& reaper, const std::vector<std::string>& argv, const CaptureOptions& opts,
                 CaptureCallback callback) {
    auto* job = new CaptureJob();
    job->opts = opts;
    job->callback = std::move(callback);
    job->what = argv.empty() ? std::string("(empty command)") : argv[0];
    job->timer = std::make_unique<loop::Timer>(reaper.loop());

    // Failures before the process exists still answer through the loop, never from inside the call.
    auto fail_later = [job](Error e) {
        job->timer->start(Duration(0), [job, e] { job->finish(fail(e)); });
    };

    int p[2];
    if (auto st = make_pipe(p); !st) return fail_later(st.error().context("run " + job->what));
    SpawnOptions so;
    so.output_fd = p[1];
    auto s = reaper.spawn(argv, so, [job](int status) { job->on_exit(status); });
    ::close(p[1]);
    if (!s) {
        ::close(p[0]);
        return fail_later(s.error().context("run"));
    }
    job->pid = s->pid;
    job->exec_errno = s->exec_errno;

    uv_pipe_init(reaper.loop().get(), &job->pipe, 0);
    job->pipe.data = job;
    if (uv_pipe_open(&job->pipe, p[0]) != 0) {
        ::close(p[0]);
        job->eof = true;  // nothing to read; the exit still finishes the job
    } else {
        job->pipe_open = true;
        uv_read_start(reinterpret_cast<uv_stream_t*>(&job->pipe), on_alloc, on_read);
    }
    job->timer->start(opts.timeout, [job] {
        job->timed_out = true;
        ::kill(-job->pid, SIGKILL);
    });
}

}  // namespace myr::proc
