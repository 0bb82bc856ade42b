// `forget --config F [--package-hash HEX]`: lifts the quarantine of a package that failed
// deterministically (docs/update.md, "Failure classes"), so that the server's next offer of it is
// installed again. It works while PID 1 runs: it does not take the writer lock, it rewrites
// last-attempt.json atomically and PID 1 reads that file at its next Checking
// (update::lift_quarantine says which race that accepts).
#include <cstdio>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "core/text.hpp"
#include "core/time.hpp"
#include "statedir/state_dir.hpp"
#include "update/state_files.hpp"

namespace myr::cli {
namespace {

bool is_sha256_hex(const std::string& s) {
    return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

int cmd_forget(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, {{"config", "package-hash"}, {}, {}});
    if (!args) return usage_error("forget", args.error().message());
    if (args->flag("help")) return print_help("forget");
    if (!args->positional().empty()) {
        return usage_error("forget", "unexpected argument " + args->positional()[0]);
    }
    auto path = args->get("config");
    if (!path || path->empty()) return usage_error("forget", "--config FILE is required");
    const std::string hash = args->get("package-hash").value_or("");
    if (args->get("package-hash") && !is_sha256_hex(hash)) {
        return usage_error("forget",
                           "--package-hash must be 64 lower-case hex digits (the "
                           "packageHash of last-attempt.json), not \"" +
                               hash + "\"");
    }
    config::LoadResult r = config::load_file(*path, config::Mode::any);
    if (!r.config) {
        for (const config::Problem& p : r.problems) {
            std::fprintf(stderr, "myriarch-updater: %s\n", p.str().c_str());
        }
        return 1;
    }
    // Opened, never created: a missing directory is a wrong --config or an unmounted volume, and
    // an empty directory made here would hide that from the next start.
    auto dir = statedir::StateDir::open_existing(r.config->collector.state_dir);
    if (!dir) return state_error(dir.error().context("forget"));
    auto lifted = update::lift_quarantine(*dir, hash, format_rfc3339(wall_now()));
    if (!lifted) return state_error(lifted.error().context("forget"));
    const std::string file = text::escape_controls(dir->path_of(statedir::entry::last_attempt));
    if (!lifted->has_value()) {
        std::printf("nothing to lift: %s quarantines no package%s\n", file.c_str(),
                    hash.empty() ? "" : (" with hash " + hash).c_str());
        return 0;
    }
    // Every field comes from last-attempt.json, which anyone with the volume can edit.
    const update::Attempt& a = **lifted;
    std::printf("lifted the quarantine of %s (package hash %s, failed at %s): %s\n",
                text::escape_controls(a.version).c_str(),
                text::escape_controls(a.package_hash_hex).c_str(),
                text::escape_controls(a.at).c_str(), text::escape_controls(a.reason).c_str());
    return 0;
}

}  // namespace myr::cli
