// `run --config F`: host mode, the updater as a systemd service beside the supervisor's unit
// (docs/host-mode.md). This file parses, loads and prints; runtime/runtime.hpp is the story.
#include <unistd.h>

#include <cstdio>

#include "cli/args.hpp"
#include "cli/build_info.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "core/log.hpp"
#include "runtime/runtime.hpp"

namespace myr::cli {

int cmd_run(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, {{"config"}, {}, {}});
    if (!args) return usage_error("run", args.error().message());
    if (args->flag("help")) return print_help("run");
    if (!args->positional().empty()) {
        return usage_error("run", "unexpected argument " + args->positional()[0]);
    }
    auto path = args->get("config");
    if (!path || path->empty()) return usage_error("run", "--config FILE is required");
    config::LoadResult r = config::load_file(*path, config::Mode::run);
    if (!r.config) {
        // systemd's journal keeps stderr: the problems are there, each with its line.
        for (const config::Problem& p : r.problems) {
            bool whole_file = p.line == 0 && p.key.empty();
            std::fprintf(stderr, "%s%s\n", whole_file ? "myriarch-updater: " : "", p.str().c_str());
        }
        return 1;
    }
    log::configure(r.config->log.level, r.config->log.format);
    log::info("host mode: starting", {{"config", *path}, {"pid", ::getpid()}});
    auto exit = runtime::run_mode(*r.config, runtime::Mode::host, build_info::version());
    if (!exit) return runtime_error(exit.error());
    if (exit->code != 0) log::error("host mode: exit", {{"reason", exit->reason}});
    return exit->code;
}

}  // namespace myr::cli
