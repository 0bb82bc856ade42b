#include "opamp/providers.hpp"

namespace myr::opamp {

std::string refused_packages_message(size_t refused) {
    return std::to_string(refused) + " more offered package" + (refused == 1 ? "" : "s") +
           " refused: an offer holds at most " + std::to_string(kMaxOfferedPackages);
}

}  // namespace myr::opamp
