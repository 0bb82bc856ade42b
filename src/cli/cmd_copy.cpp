#include "cli/commands.hpp"

namespace myr::cli {

// Placeholders until fsx/ lands.
int cmd_copy(const std::vector<std::string>&) {
    return runtime_error(Error("copy: not available in this build yet"));
}
int cmd_install_self(const std::vector<std::string>&) {
    return runtime_error(Error("install-self: not available in this build yet"));
}

}  // namespace myr::cli
