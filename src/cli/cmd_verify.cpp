#include "cli/commands.hpp"

namespace myr::cli {

// Placeholder until the module behind this command lands.
int cmd_verify(const std::vector<std::string>&) {
    return runtime_error(Error("verify: not available in this build yet"));
}

}  // namespace myr::cli
