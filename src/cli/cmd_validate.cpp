// `validate --config F [--mode any|container|run]`: every problem of F on stderr (exit 1), or the
// effective configuration and the recommended pod grace period on stdout (exit 0). The stdout is
// itself a valid updater.yaml: the recommendation is a comment. With update.requireSignature the
// trusted root is read and must be usable, as start-up requires.
#include <cstdio>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "verify/root_file.hpp"

namespace myr::cli {

int cmd_validate(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, {{"config", "mode"}, {}, {}});
    if (!args) return usage_error("validate", args.error().message());
    if (args->flag("help")) return print_help("validate");
    if (!args->positional().empty()) {
        return usage_error("validate", "unexpected argument " + args->positional()[0]);
    }
    auto path = args->get("config");
    if (!path || path->empty()) return usage_error("validate", "--config FILE is required");
    config::Mode mode = config::Mode::any;
    std::string mode_text = args->get("mode").value_or("any");
    if (mode_text == "container") {
        mode = config::Mode::container;
    } else if (mode_text == "run" || mode_text == "host") {
        mode = config::Mode::run;
    } else if (mode_text != "any") {
        return usage_error("validate",
                           "--mode must be any, container, host or run, not \"" + mode_text + "\"");
    }

    config::LoadResult r = config::load_file(*path, mode);
    if (!r.config) {
        for (const config::Problem& p : r.problems) {
            // A file that cannot be read is an ordinary runtime error; problems inside it are
            // listed compiler-style so editors can jump to them.
            bool whole_file = p.line == 0 && p.key.empty();
            std::fprintf(stderr, "%s%s\n", whole_file ? "myriarch-updater: " : "", p.str().c_str());
        }
        return 1;
    }
    // The trusted root is the one input of the configuration that is a file the updater cannot
    // do without: checked here as start-up checks it (runtime/runtime.cpp).
    if (r.config->update.require_signature) {
        auto root = verify::load_usable_root(r.config->update.trusted_root_file);
        if (!root) {
            std::fprintf(stderr, "myriarch-updater: update.trustedRootFile: %s\n",
                         root.error().message().c_str());
            return 1;
        }
    }
    long long ms = config::recommended_grace_period(*r.config).count();
    long long secs = ms / 1000 + (ms % 1000 != 0 ? 1 : 0);
    std::fputs(config::render_effective(*r.config).c_str(), stdout);
    if (mode == config::Mode::run) {
        std::printf(
            "\n# recommended TimeoutStopSec= of the updater's unit: %llds"
            "  (2 x 90s systemctl bound + 2 x healthTimeout + 60s)\n",
            secs);
    } else {
        std::printf(
            "\n# recommended pod terminationGracePeriodSeconds: %lld"
            "  (2 x stopTimeout + 2 x healthTimeout + 60s)\n",
            secs);
    }
    return 0;
}

}  // namespace myr::cli
