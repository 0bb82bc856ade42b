#include "opamp/providers.hpp"

namespace myr::opamp {

std::string refused_packages_message(size_t refused) {
    return std::to_string(refused) + " more offered package" + (refused == 1 ? "" : "s") +
           " refused: an offer holds at most " + std::to_string(kMaxOfferedPackages);
}

void UnavailableInstaller::offer(const PackagesAvailable& offer) {
    PackageStatuses s;
    s.server_provided_all_packages_hash = offer.all_packages_hash;
    for (const PackageAvailable& p : offer.packages) {
        PackageStatus st;
        st.name = p.name;
        st.server_offered_version = p.version;
        st.server_offered_hash = p.hash;
        st.status = PackageStatusCode::install_failed;
        st.error_message = "installer not available";
        s.packages.push_back(std::move(st));
    }
    if (offer.refused) s.error_message = refused_packages_message(offer.refused);
    statuses_ = std::move(s);
}

}  // namespace myr::opamp
