#include "opamp/providers.hpp"

namespace myr::opamp {

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
    statuses_ = std::move(s);
}

}  // namespace myr::opamp
