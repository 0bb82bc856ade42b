// The state directory's writer lock (issue 22, finding 11). The volume is single-writer: two
// updaters on one stateDir (a stuck pod during a node failure with an RWX or hostPath volume, an
// operator's `kubectl debug` running the container command) would each run recovery and install
// beside the other. The container command takes this lock before recovery and holds it for the
// process's life; a second one refuses to start and names the holder.
//
// The lock is flock(2) LOCK_EX on `<stateDir>/.lock`: it goes with the holder (exit, kill -9, a
// crash), so a stale lock file never blocks a start. Its content names the holder for people
// ("pid 1 on collector-0 since 2026-12-02T23:50:18Z"); the pid is the holder's own view of it,
// which in a container is usually 1, so the host name (the pod's name) is the useful part.
// Commands that only read the state (`status`, `forget`, when they exist) do not take it.
#pragma once

#include <string>

#include "core/fd.hpp"
#include "core/result.hpp"
#include "statedir/state_dir.hpp"

namespace myr::statedir {

class WriterLock {
  public:
    WriterLock() = default;

    // Takes the lock without waiting: `<stateDir>/.lock` is opened (created 0600, O_CLOEXEC, a
    // symlink refused) and locked, and the holder line written into it, `since` its start time.
    // When another process holds it: Errc::invalid, "state directory D is in use by another
    // updater (pid P on H since T): …".
    [[nodiscard]] static Result<WriterLock> take(const StateDir& dir, const std::string& since);

    bool held() const { return static_cast<bool>(fd_); }

  private:
    UniqueFd fd_;
};

}  // namespace myr::statedir
