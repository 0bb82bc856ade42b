#include <cstdio>

#include "cli/args.hpp"
#include "cli/commands.hpp"

namespace myr::cli {

// Host mode is a later milestone; the command exists so that operators get a clear answer.
int cmd_run(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, {{"config"}, {}, {}});
    if (!args) return usage_error("run", args.error().message());
    if (args->flag("help")) return print_help("run");
    return runtime_error(
        Error("run: host mode is not built yet in this release; "
              "use `myriarch-updater container`"));
}

}  // namespace myr::cli
