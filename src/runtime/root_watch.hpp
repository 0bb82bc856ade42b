// update.trustedRootFile as a living file (docs/sigstore.md, "The trusted root"): read once at
// start, then watched, so that a refreshed root (a ConfigMap update) reaches the next install
// without a restart. This is the one reader: the verifier asks it for the current root, and
// /metrics hears of every root it takes.
//
// Watched by a stat(2) poll every `poll`, not inotify. A ConfigMap update renames a new `..data`
// symlink over the old one in the mounted directory: a watch on the file itself never fires, a
// watch on the directory sees only `..data` names, and a subPath mount is never updated at all;
// qemu-user (the arm64 stage) does not emulate inotify; and a timer goes through the Scheduler,
// so its tests run on the fake clock. One stat through the symlinks every few seconds costs
// nothing next to the kubelet's own delay in propagating an update (a minute and more).
//
// The newest usable root is kept: a new file that is unusable (missing, unparsable, no usable CA
// or log) is logged once and ignored, and the one before stays in use. Reading and parsing run on
// the work queue; only the stat runs on the loop.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "core/time.hpp"
#include "loop/scheduler.hpp"
#include "loop/step.hpp"
#include "verify/root_file.hpp"

namespace myr::runtime {

// How often the file is looked at.
inline constexpr Duration kRootPoll = std::chrono::seconds(5);

class RootWatch {
  public:
    using Changed = std::function<void(const verify::LoadedRoot&)>;
    // `path` "" watches nothing (update.requireSignature false and no file named).
    RootWatch(loop::Scheduler& sched, std::string path, Duration poll = kRootPoll);
    RootWatch(const RootWatch&) = delete;
    RootWatch& operator=(const RootWatch&) = delete;

    // Called with every root taken, the first one included.
    void on_change(Changed fn) { changed_ = std::move(fn); }
    // Reads the file now, on the calling thread (before the loop runs), logs what it holds and
    // starts the poll. The error says why the file is unusable: the caller decides whether that
    // stops the start (update.requireSignature) and logs it; the poll runs either way.
    [[nodiscard]] Status start();
    void stop();

    // The root in use; null while none was ever usable.
    std::shared_ptr<const verify::LoadedRoot> current() const { return current_; }
    // Why there is no root in use, or why the newest file was ignored ("" when it is in use).
    const std::string& problem() const { return problem_; }
    // Looks at the file now (what the poll does).
    void poll();

  private:
    void take(verify::LoadedRoot loaded, const char* how);
    void refuse(const std::string& why, bool first);

    loop::Scheduler& sched_;
    std::string path_;
    Duration every_;
    Changed changed_;
    std::unique_ptr<loop::Timer> timer_;
    std::unique_ptr<loop::Step> reading_;
    std::shared_ptr<const verify::LoadedRoot> current_;
    // What the file was the last time it was read, usable or not: a change is a new stamp, and a
    // bad file is reported once, not at every poll.
    std::optional<verify::FileStamp> seen_;
    std::string problem_;
};

}  // namespace myr::runtime
