// A booted systemd for the host-mode tests: the Debian rootfs of tests/host/rootfs.sh, on an
// overlay whose upper layer is a tmpfs (each machine starts clean and leaves nothing on disk),
// booted by `systemd-nspawn -b` as PID 1 of a new PID namespace, commands run inside through
// `nsenter -t <its PID 1> -a`.
//
// Why systemd-nspawn and not unshare + a cgroup2 mount: nspawn sets up what systemd checks for
// before it calls itself a container (its cgroup subtree, /run/host, a console, the
// $container variables) on this machine's hybrid cgroup hierarchy as well as on a pure cgroup2
// one, and halts the machine in order on SIGTERM. `--register=no --keep-unit` keep the host's
// systemd (there may be none, as in CI containers) out of it. Without --private-network the
// machine shares the host's network: a server on the host's 127.0.0.1 is reachable inside.
//
// The mounts are made in a mount namespace of their own (`unshare -m`, private propagation)
// that nspawn runs in: when the machine's last process ends, its mounts go with it, so a test
// that dies leaves no mount behind on the host. The host reaches the machine's files through
// /proc/<its PID 1>/root.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"

namespace myr::test {

// The unpacked rootfs (tests/host/rootfs.sh, cached; $MYR_HOST_ROOTFS when set). Reports a skip
// and answers "" when it cannot be built here (no mmdebstrap and no way to install it); a build
// that fails otherwise fails the test.
std::string host_rootfs();

// host_rootfs() for a test that boots it and runs `binaries` inside: "" after reporting a skip
// when this process is not root (systemd-nspawn needs it) or one of them is linked dynamically
// (the machine has none of the host's libraries: the static build runs them, scripts/test.sh's
// static stage).
std::string bootable_rootfs(const std::vector<std::string>& binaries = {});

struct BootOptions {
    // Copied over the root before the boot: units, binaries, configuration ("" = nothing).
    std::string seed_dir;
    // Host directories the machine sees at the same path, read-write (`--bind=`): a test's
    // volume and state, read by the test's oracle as they are while the machine writes them.
    std::vector<std::string> binds;
    Millis boot_timeout = std::chrono::seconds(90);
};

class BootedSystemd {
  public:
    // Boots a fresh machine from `rootfs` and waits until `systemctl is-system-running --wait`
    // answers: the boot is over (running, or degraded with its failed units in the message).
    BootedSystemd(const std::string& rootfs, const BootOptions& opts = {});
    // Halts the machine (SIGTERM to nspawn, the order systemd keeps on poweroff), kills what is
    // left after 30 s, and waits for the end of its PID 1.
    ~BootedSystemd();
    BootedSystemd(const BootedSystemd&) = delete;
    BootedSystemd& operator=(const BootedSystemd&) = delete;

    bool booted() const { return booted_; }
    // Why the boot failed, or the state it ended in ("running", "degraded: <failed units>").
    const std::string& boot_state() const { return boot_state_; }
    Millis boot_time() const { return boot_time_; }
    pid_t init_pid() const { return init_pid_; }
    // The machine's root as the host sees it (/proc/<PID 1>/root).
    std::string root() const;
    // Runs argv inside the machine (all its namespaces, its root).
    RunResult run(const std::vector<std::string>& argv, Millis timeout = std::chrono::seconds(60));
    // What the machine wrote on its console.
    std::string console() const;

  private:
    bool find_init(Millis timeout);
    bool wait_for_boot(Millis timeout);

    TempDir dir_;
    std::optional<Process> nspawn_;
    pid_t init_pid_ = -1;
    bool booted_ = false;
    std::string boot_state_;
    Millis boot_time_{0};
};

}  // namespace myr::test
