// Entry point: dispatches to a command; decides nothing itself.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
    using namespace myr::cli;
    if (argc < 2) {
        std::fputs(overview().c_str(), stderr);
        return 2;
    }
    std::string name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        std::fputs(overview().c_str(), stdout);
        return 0;
    }
    if (name == "--version") name = "version";
    const Command* cmd = find_command(name);
    if (!cmd) {
        std::fprintf(stderr,
                     "myriarch-updater: unknown command \"%s\" (see 'myriarch-updater --help')\n",
                     name.c_str());
        return 2;
    }
    std::vector<std::string> args(argv + 2, argv + argc);
    return cmd->run(args);
}
