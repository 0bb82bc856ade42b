#include "cli/commands.hpp"

namespace myr::cli {

// Placeholder until the module behind this command lands.
int cmd_validate(const std::vector<std::string>&) {
    return runtime_error(Error("validate: not available in this build yet"));
}

}  // namespace myr::cli
