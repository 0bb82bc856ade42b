#include "systemd_rig.hpp"

#include <doctest/doctest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace myr::test {

namespace {

// Mounts the tmpfs and the overlay in the mount namespace nspawn then runs in, copies the seed,
// and becomes nspawn. $1 the tmpfs mount point, $2 the lower layer, $3 the seed ("" = none); the
// rest are directories bound into the machine at the same path.
constexpr const char* boot_script = R"(set -e
t=$1 lower=$2 seed=$3
shift 3
mount -t tmpfs -o mode=0755 myr-host-upper "$t"
mkdir "$t/upper" "$t/work" "$t/root"
mount -t overlay myr-host-root -o "lowerdir=$lower,upperdir=$t/upper,workdir=$t/work" "$t/root"
# Entry by entry, not "$seed/.": that would give / the mode of the seed's own directory.
if [ -n "$seed" ]; then
    for f in "$seed"/* "$seed"/.[!.]*; do if [ -e "$f" ]; then cp -a "$f" "$t/root/"; fi; done
fi
binds=
for b in "$@"; do mkdir -p "$t/root$b"; binds="$binds --bind=$b"; done
exec systemd-nspawn --register=no --keep-unit --quiet --boot --directory="$t/root" $binds
)";

std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// The children of `pid` (/proc/<pid>/task/<pid>/children).
std::vector<pid_t> children_of(pid_t pid) {
    std::string p = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children";
    std::istringstream in(read_file(p));
    std::vector<pid_t> out;
    for (pid_t c; in >> c;) out.push_back(c);
    return out;
}

}  // namespace

std::string host_rootfs() {
    if (const char* d = std::getenv("MYR_HOST_ROOTFS"); d && *d) return d;
    RunResult r = run({"bash", source_dir() + "/tests/host/rootfs.sh"}, std::chrono::seconds(900));
    if (r.exit_code == 77) {
        report_skip("no rootfs for the host-mode tests: " + trimmed(r.err));
        return "";
    }
    REQUIRE_MESSAGE(r.exit_code == 0, "tests/host/rootfs.sh failed:\n" << r.err);
    size_t at = r.out.rfind("MYR_HOST_ROOTFS=");
    REQUIRE(at != std::string::npos);
    return trimmed(r.out.substr(at + 16));
}

std::string bootable_rootfs(const std::vector<std::string>& binaries) {
    if (!is_root()) {
        report_skip("needs root for systemd-nspawn");
        return "";
    }
    for (const std::string& b : binaries) {
        if (run({"ldd", b}).out.find("=>") != std::string::npos) {
            report_skip(b +
                        " is linked dynamically; the machine runs only static binaries "
                        "(meson setup -Dstatic=true, scripts/test.sh's static stage)");
            return "";
        }
    }
    return host_rootfs();
}

BootedSystemd::BootedSystemd(const std::string& rootfs, const BootOptions& opts) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> argv{"unshare",   "--mount", "--propagation", "private",
                                  "sh",        "-c",      boot_script,     "myr-boot",
                                  dir_.path(), rootfs,    opts.seed_dir};
    argv.insert(argv.end(), opts.binds.begin(), opts.binds.end());
    nspawn_.emplace(Process::spawn(argv));
    if (!find_init(opts.boot_timeout)) return;
    booted_ = wait_for_boot(opts.boot_timeout);
    boot_time_ = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - t0);
}

bool BootedSystemd::find_init(Millis timeout) {
    // unshare execs sh, sh execs nspawn: the same pid. nspawn's child is the machine's PID 1.
    const pid_t nspawn = nspawn_->pid();
    bool found = wait_until(
        [&] {
            for (pid_t c : children_of(nspawn)) {
                if (trimmed(read_file("/proc/" + std::to_string(c) + "/comm")) == "systemd") {
                    init_pid_ = c;
                    return true;
                }
            }
            return !nspawn_->running();
        },
        timeout);
    if (init_pid_ > 0) return true;
    boot_state_ = found ? "systemd-nspawn ended before the boot: " + nspawn_->err() + console()
                        : "no systemd under systemd-nspawn within the boot timeout";
    return false;
}

bool BootedSystemd::wait_for_boot(Millis timeout) {
    // is-system-running --wait blocks until the boot is over; until systemd's private socket
    // exists it fails at once, and is asked again.
    RunResult r;
    bool answered = wait_until(
        [&] {
            r = run({"systemctl", "is-system-running", "--wait"}, timeout);
            std::string state = trimmed(r.out);
            return state == "running" || state == "degraded" || !nspawn_->running();
        },
        timeout, std::chrono::milliseconds(50));
    boot_state_ = trimmed(r.out);
    if (boot_state_ == "degraded") {
        boot_state_ += ": " + trimmed(run({"systemctl", "--failed", "--no-legend"}).out);
    }
    if (!answered || !nspawn_->running()) {
        boot_state_ = "boot did not finish (" + (r.timed_out ? "timed out" : boot_state_) +
                      "): " + trimmed(r.err) + "\n" + console();
        return false;
    }
    return true;
}

BootedSystemd::~BootedSystemd() {
    if (!nspawn_) return;
    nspawn_->signal(SIGTERM);  // nspawn passes it on as a halt request
    if (!nspawn_->wait(std::chrono::seconds(30))) {
        // PID 1 of a PID namespace takes every process of it along when it is killed.
        if (init_pid_ > 0) ::kill(init_pid_, SIGKILL);
        nspawn_->kill_now();
    }
}

std::string BootedSystemd::root() const {
    return "/proc/" + std::to_string(init_pid_) + "/root";
}

RunResult BootedSystemd::run(const std::vector<std::string>& argv, Millis timeout) {
    std::vector<std::string> cmd{"nsenter", "-t", std::to_string(init_pid_), "-a"};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    return test::run(cmd, timeout);
}

std::string BootedSystemd::console() const {
    return nspawn_ ? nspawn_->out() : "";
}

}  // namespace myr::test
