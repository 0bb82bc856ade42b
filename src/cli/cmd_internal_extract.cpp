// The hidden `internal-extract` command: the staging's extractor child (stage/child.hpp). Its
// arguments and its one result line are the stage module's protocol with itself.
#include "cli/commands.hpp"
#include "stage/child.hpp"

namespace myr::cli {

int cmd_internal_extract(const std::vector<std::string>& args) {
    return stage::child_main(args);
}

}  // namespace myr::cli
