// Stand-ins for what the agent reports but does not know itself, for the agent's unit tests, its
// fuzz target and the agent driver program (the product plugs in runtime::CollectorStatus and
// runtime::PackageAdapter). Header-only, so each of them uses it without another library.
#pragma once

#include <string>
#include <utility>

#include "opamp/messages.hpp"
#include "opamp/providers.hpp"

namespace myr::opamp::testing {

// Values set by hand.
class FixedStatusProvider : public StatusProvider {
  public:
    std::string image_collector_version() const override { return image_version; }
    std::string collector_version() const override { return active_version; }
    ComponentHealth health() const override { return health_value; }

    std::string image_version;
    std::string active_version;
    ComponentHealth health_value;
};

// Answers every offered package with InstallFailed "installer not available", echoing the offered
// version and hash (and the refused packages' one message), as an agent without an installer would.
class UnavailablePackageHandler : public PackageHandler {
  public:
    void offer(const PackagesAvailable& offer) override {
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
    PackageStatuses statuses() const override { return statuses_; }

  private:
    PackageStatuses statuses_;
};

}  // namespace myr::opamp::testing
