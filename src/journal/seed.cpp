#include "journal/seed.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.hpp"
#include "core/log.hpp"
#include "fsx/dir.hpp"
#include "hash/sha256.hpp"
#include "store/activate.hpp"

namespace myr::journal {
namespace {

// `trial_ok`: a new version's trial (op update, phase trial) is the one journal that recovery
// keeps; seeding may run over it (an activation replaces it, and the trial is moot then).
Status require_no_journal(const Journal& journal, const char* what, bool trial_ok = false) {
    auto loaded = journal.load();
    if (!loaded) return loaded.fail(what);
    const bool trial = loaded->kind == Loaded::Kind::ok && loaded->record.op == Op::update &&
                       loaded->record.phase == phase::trial;
    if (loaded->kind != Loaded::Kind::absent && !(trial && trial_ok)) {
        return fail(std::string(what) + ": " + journal.dir() +
                    "/journal.json exists: recovery must run first");
    }
    return {};
}

Result<std::string> hash_image(int fd, const std::string& path) {
    if (::lseek(fd, 0, SEEK_SET) < 0) return fail_errno("seek " + path);
    auto d = hash::sha256_fd(fd);
    if (!d) return d.fail("hash " + path);
    return hash::to_hex(*d);
}

// Whether versions/<version> exists, so that an activation might reuse it (an error reading the
// directory says yes: the activation then decides).
bool may_reuse(const store::Volume& vol, const std::string& version) {
    auto st = fsx::stat_at(vol.versions_fd(), version);
    return !st || st->has_value();
}

void log_outcome(const SeedOutcome& o, const std::string& image_path) {
    log::info(o.activated ? "seed: image version activated" : "seed: active version kept",
              {{"rule", store::to_string(o.rule)},
               {"image", image_path},
               {"image_version", o.image_version},
               {"active", o.active_version},
               {"previous", o.previous_version},
               {"reused", o.reused},
               {"reason", o.reason}});
}

}  // namespace

Result<SeedOutcome> seed(const store::Volume& vol, Journal& journal, const SeedInput& in) {
    MYR_TRY(require_no_journal(journal, "seed", true), "seed");
    SeedOutcome out;
    auto x = in.version_ok ? store::version_from_output(in.version_output) : std::nullopt;

    // Every binary is hashed at most once. Under policy image with the image's version active,
    // both the active binary (intact?) and the image (still the active one?) need hashing: when
    // they hold the same bytes, one pass over both answers both (store::active with the image).
    UniqueFd image;
    std::string image_sha;
    if (x && in.policy == store::SeedPolicy::image) {
        auto named = store::current_target(vol);
        if (named && *named == *x) {
            auto fd = open_regular(in.image_path);
            if (fd) image = std::move(*fd);  // else opened (and its failure reported) below
        }
    }
    auto act = image ? store::active(vol, image.get(), &image_sha) : store::active(vol);
    if (!act) return act.fail("seed");

    if (!x) {
        std::string why = in.image_path.empty() ? std::string("no seed binary is configured")
                          : in.version_ok ? "no version in `" + in.image_path + " --version` output"
                                          : "`" + in.image_path + " --version` failed";
        if (act->state != store::Active::State::intact) {
            return fail("seed: " + why + ", and no intact version is active" +
                        (act->reason.empty() ? "" : " (" + act->reason + ")"));
        }
        out.rule = store::Rule::image_version_unknown;
        out.active_version = act->version;
        out.previous_version = act->marker->previous_version;
        out.reason = why;
        log_outcome(out, in.image_path);
        return out;
    }
    out.image_version = *x;

    if (store::needs_image_hash(in.policy, *x, *act) && image_sha.empty()) {
        if (!image) {
            auto fd = open_regular(in.image_path);
            if (!fd) return fd.fail("seed");
            image = std::move(*fd);
        }
        auto h = hash_image(image.get(), in.image_path);
        if (!h) return h.fail("seed");
        image_sha = *h;
    }
    store::Decision d = store::decide(in.policy, *x, *act, image_sha);
    out.rule = d.rule;
    out.reason = act->reason;
    if (!d.activate) {
        out.active_version = act->version;
        out.previous_version = act->marker ? act->marker->previous_version : "";
        log_outcome(out, in.image_path);
        return out;
    }

    if (!image) {
        auto fd = open_regular(in.image_path);
        if (!fd) return fd.fail("seed");
        image = std::move(*fd);
    }
    if (image_sha.empty() && may_reuse(vol, *x)) {
        // An intact versions/<X> with the image's bytes is reused instead of copied: that takes
        // the image's hash first. Otherwise the copy hashes what it copies, in the same pass.
        auto h = hash_image(image.get(), in.image_path);
        if (!h) return h.fail("seed");
        image_sha = *h;
    }

    Record rec = begin(Op::seed, act->state == store::Active::State::intact ? act->version : "", *x,
                       std::string(phase::staging));
    store::ActivateRequest req;
    req.version = *x;
    req.source = store::Source::image;
    req.image_fd = image.get();
    req.expected_sha256 = image_sha;
    req.known_active = &*act;
    auto journaled = [&](store::Step s) -> Status {
        rec.phase = store::to_string(s);
        return journal.write(rec);
    };
    auto done = store::activate(vol, req, journaled);
    if (!done) {
        // Nothing was switched (a failed activation leaves `current` alone): the journal goes.
        Status cleared = journal.clear();
        if (!cleared)
            log::warn("seed: journal left for recovery", {{"error", cleared.error().message()}});
        return done.fail("seed");
    }
    MYR_TRY(journal.clear(), "seed");
    out.activated = true;
    out.reused = done->reused;
    out.active_version = *x;
    out.previous_version = done->marker.previous_version;
    log_outcome(out, in.image_path);

    auto collected = store::gc(vol, in.keep_versions);
    if (!collected) {
        log::warn("seed: garbage collection failed", {{"error", collected.error().message()}});
    }
    return out;
}

Result<std::string> rollback(const store::Volume& vol, Journal& journal) {
    MYR_TRY(require_no_journal(journal, "rollback"), "rollback");
    auto from = store::current_target(vol);
    if (!from) return from.fail("rollback");
    auto to = store::rollback_target(vol);
    if (!to) return to.fail();
    if (!store::intact(vol, *to)) return fail("rollback: " + *to + " is not intact");
    MYR_TRY(journal.write(begin(Op::rollback, *from, *to, std::string(phase::switching))),
            "rollback");
    auto done = store::rollback(vol);
    if (!done) return done.fail();
    MYR_TRY(journal.clear(), "rollback");
    return *done;
}

Result<store::GcResult> gc(const store::Volume& vol, const Journal& journal,
                           uint32_t keep_versions) {
    auto loaded = journal.load();
    if (!loaded) return loaded.fail("gc");
    std::vector<std::string> protect;
    switch (loaded->kind) {
        case Loaded::Kind::absent:
            break;
        case Loaded::Kind::corrupt:
            return fail("gc: " + journal.dir() + "/journal.json cannot be parsed; nothing removed");
        case Loaded::Kind::ok:
            if (!loaded->record.from.empty()) protect.push_back(loaded->record.from);
            if (!loaded->record.to.empty()) protect.push_back(loaded->record.to);
            break;
    }
    return store::gc(vol, keep_versions, protect);
}

}  // namespace myr::journal
