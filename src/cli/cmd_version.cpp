#include <cstdio>

#include "cli/args.hpp"
#include "cli/build_info.hpp"
#include "cli/commands.hpp"
#include "hash/sha256.hpp"

namespace myr::cli {

int cmd_version(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, {});
    if (!args) return usage_error("version", args.error().message());
    if (args->flag("help")) return print_help("version");
    if (!args->positional().empty()) return usage_error("version", "takes no arguments");
    std::printf("myriarch-updater %s\ncommit: %s\nbuild: %s\nlinkage: %s\nsha256: %s\n",
                build_info::version(), build_info::git_commit(), build_info::build_type(),
                build_info::is_static() ? "static" : "dynamic",
                hash::to_string(hash::fastest_backend()));
    return 0;
}

}  // namespace myr::cli
