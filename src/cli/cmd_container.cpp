// `container --config F`: PID 1 of a container (spec "Process model"; docs/pid1.md). This file
// parses, loads and prints; runtime/runtime.hpp is the story from start to exit.
#include <unistd.h>

#include <cstdio>

#include "cli/args.hpp"
#include "cli/build_info.hpp"
#include "cli/commands.hpp"
#include "config/config.hpp"
#include "core/log.hpp"
#include "runtime/runtime.hpp"
#include "runtime/termination_message.hpp"

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
        // The configuration names no path the updater can trust: the kubelet's default one.
        std::string reason = "configuration " + *path + " refused:";
        for (const config::Problem& p : r.problems) {
            bool whole_file = p.line == 0 && p.key.empty();
            std::fprintf(stderr, "%s%s\n", whole_file ? "myriarch-updater: " : "", p.str().c_str());
            reason += "\n" + p.str();
        }
        runtime::leave_termination_message(config::Container{}.termination_message_path, reason);
        return 1;
    }
    log::configure(r.config->log.level, r.config->log.format);
    log::info("container: starting", {{"config", *path}, {"pid", ::getpid()}});
    const std::string& message_path = r.config->container->termination_message_path;
    auto exit = runtime::run_mode(*r.config, runtime::Mode::container, build_info::version());
    if (!exit) {
        runtime::leave_termination_message(message_path, exit.error().message());
        return runtime_error(exit.error());
    }
    if (exit->code != 0) runtime::leave_termination_message(message_path, exit->reason);
    return exit->code;
}

}  // namespace myr::cli
