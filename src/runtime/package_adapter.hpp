// The thin layer between the OpAMP agent and the installer (runtime.md, "How the installer plugs
// in"): PackagesAvailable becomes an update::Offer, the installer's Report becomes
// PackageStatuses. Only translation lives here — every decision (what is installed, what is
// refused, when a repeat is ignored) and every record of it (update/ledger.hpp) is the
// installer's — so update/ never sees an OpAMP type.
#pragma once

#include "opamp/messages.hpp"
#include "opamp/providers.hpp"
#include "update/installer.hpp"

namespace myr::runtime {

update::Offer to_offer(const opamp::PackagesAvailable& in);
// `refused`: entries the codec dropped past its cap (answered with one error message).
opamp::PackageStatuses to_statuses(const update::Report& r, size_t refused);

class PackageAdapter : public opamp::PackageHandler {
  public:
    explicit PackageAdapter(update::Installer& installer) : installer_(installer) {}
    void offer(const opamp::PackagesAvailable& offer) override;
    opamp::PackageStatuses statuses() const override;

  private:
    update::Installer& installer_;
};

}  // namespace myr::runtime
