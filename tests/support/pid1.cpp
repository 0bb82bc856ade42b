#include "pid1.hpp"

#include <dirent.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>

namespace myr::test {

std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> out;
    std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
    DIR* d = ::opendir(task_dir.c_str());
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream f(task_dir + "/" + e->d_name + "/children");
        pid_t c;
        while (f >> c) out.push_back(c);
    }
    ::closedir(d);
    return out;
}

bool can_run_pid1() {
    if (!can_unshare_pid()) {
        report_skip("needs root and `unshare --pid --fork --mount-proc`");
        return false;
    }
    return true;
}

Updater::Updater(const std::string& config, Launch how, const SpawnOptions& opts) {
    std::vector<std::string> argv;
    if (how == Launch::pid1) argv = {"unshare", "--pid", "--fork", "--mount-proc"};
    argv.insert(argv.end(), {updater_bin(), "container", "--config", config});
    proc_.emplace(Process::spawn(argv, opts));
    if (how == Launch::subreaper) {
        pid_ = proc_->pid();
        return;
    }
    // Found as unshare's child; a very early exit (a crash point) leaves none to find.
    bool settled = wait_until(
        [&] {
            auto c = children_of(proc_->pid());
            if (c.empty()) return !proc_->running();
            pid_ = c.front();
            return true;
        },
        10s);
    REQUIRE_MESSAGE(settled, "the updater did not appear behind unshare within 10 s");
}

Updater::~Updater() {
    if (proc_) proc_->kill_now();
}

void Updater::signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
}

std::optional<int> Updater::wait(Millis t) {
    return proc_->wait(t);
}

int Updater::wait_exit(Millis t) {
    auto st = proc_->wait(t);
    if (!st) return -2;
    return WIFEXITED(*st) ? WEXITSTATUS(*st) : -1;
}

int Updater::stop(Millis t) {
    signal(SIGTERM);
    return wait_exit(t);
}

std::string Updater::log() const {
    return proc_->err();
}

std::string Updater::out() const {
    return proc_->out();
}

bool Updater::log_has(const std::string& needle) const {
    return log().find(needle) != std::string::npos;
}

bool Updater::wait_for_log(const std::string& needle, Millis t) const {
    return wait_until([&] { return log_has(needle); }, t);
}

int Updater::count(const std::string& needle) const {
    std::string l = log();
    int n = 0;
    for (size_t p = l.find(needle); p != std::string::npos; p = l.find(needle, p + 1)) ++n;
    return n;
}

}  // namespace myr::test
