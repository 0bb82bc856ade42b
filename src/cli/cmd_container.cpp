// `container --config F`: PID 1 of a container (spec "Process model"; docs/pid1.md). This file
// parses, loads and prints; runtime/container.hpp is the story from start to exit.
#include <unistd.h>

#include <cstdio>

#include "cli/args.hpp"
#include "cli/build_info.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "core/log.hpp"
#include "runtime/container.hpp"

namespace myr::cli {

int cmd_container(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, {{"config"}, {}, {}});
    if (!args) return usage_error("container", args.error().message());
    if (args->flag("help")) return print_help("container");
    if (!args->positional().empty()) {
        return usage_error("container", "unexpected argument " + args->positional()[0]);
    }
    auto path = args->get("config");
    if (!path || path->empty()) return usage_error("container", "--config FILE is required");
    config::LoadResult r = config::load_file(*path, config::Mode::container);
    if (!r.config) {
        for (const config::Problem& p : r.problems) {
            bool whole_file = p.line == 0 && p.key.empty();
            std::fprintf(stderr, "%s%s\n", whole_file ? "myriarch-updater: " : "", p.str().c_str());
        }
        return 1;
    }
    log::configure(r.config->log.level, r.config->log.format);
    log::info("container: starting", {{"config", *path}, {"pid", ::getpid()}});
    auto code = runtime::run_container(*r.config, build_info::version());
    if (!code) return runtime_error(code.error());
    return *code;
}

}  // namespace myr::cli
