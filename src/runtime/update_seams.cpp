#include "runtime/update_seams.hpp"

#include <fcntl.h>

#include <optional>

#include "core/fd.hpp"
#include "loop/step.hpp"
#include "store/activate.hpp"

namespace myr::runtime {
namespace {

Result<update::Stager::Staged> extract(const store::Volume& vol, const std::string& archive,
                                       const stage::ExtractLimits& limits) {
    auto staging = store::create_staging(vol);
    if (!staging) return staging.fail("stage");
    UniqueFd fd(::open(archive.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    Result<stage::Extracted> got = fail_errno("stage: open " + archive);
    if (fd.get() >= 0) {
        got = stage::extract_binary(fd.get(), vol.binary(), staging->fd.get(), limits);
    }
    if (!got) {
        // The extraction error is the one to report, as it is: `stage: <member>: <rule>` names
        // what is wrong with the archive (every error of a Stager names the step: the installer
        // reports it as it is); the spool path would only hide it. A leftover is
        // cleaned at the next start.
        (void)store::discard_staging(vol, staging->id);
        return got.fail();
    }
    return update::Stager::Staged{staging->id, store::staged_binary_path(vol, staging->id),
                                  got->sha256_hex, got->size};
}

}  // namespace

std::unique_ptr<update::Step> ExtractStager::stage(std::string archive_path,
                                                   update::Callback<Staged> done) {
    return loop::post_job<Staged>(
        sched_, "staging",
        [vol = vol_, archive_path = std::move(archive_path), limits = limits_] {
            return extract(*vol, archive_path, limits);
        },
        std::move(done));
}

}  // namespace myr::runtime
