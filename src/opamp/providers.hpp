// What the agent reports but does not know itself: versions and health (StatusProvider) and the
// package work (Installer). The container command plugs in the child service state and the update
// pipeline; until then FixedStatusProvider and UnavailableInstaller stand in.
//
// All calls happen on the loop. After any value behind these interfaces changes, the owner calls
// Agent::state_changed(); the agent compares with what it last sent and reports only differences.
#pragma once

#include <string>

#include "opamp/messages.hpp"

namespace myr::opamp {

class StatusProvider {
  public:
    virtual ~StatusProvider() = default;
    // The collector version the image seeded (dev.myriarch.updater.image_collector_version);
    // "" while not known: the attribute is omitted.
    virtual std::string image_collector_version() const = 0;
    // The active collector version (dev.myriarch.collector.version); "" while not known.
    virtual std::string collector_version() const = 0;
    // healthy, status text (why not), start time of the child, status time.
    virtual ComponentHealth health() const = 0;
};

// Values set by hand (the driver program, tests, and the container command before the service
// module reports).
class FixedStatusProvider : public StatusProvider {
  public:
    std::string image_collector_version() const override { return image_version; }
    std::string collector_version() const override { return active_version; }
    ComponentHealth health() const override { return health_value; }

    std::string image_version;
    std::string active_version;
    ComponentHealth health_value;
};

class Installer {
  public:
    virtual ~Installer() = default;
    // Every PackagesAvailable the server sends, repeats included (the installer compares hashes).
    virtual void offer(const PackagesAvailable& offer) = 0;
    // The statuses to report now (an empty list before any offer).
    virtual PackageStatuses statuses() const = 0;
};

// The one PackageStatuses.error_message that answers the packages dropped past
// kMaxOfferedPackages (an installer must not answer each of them).
std::string refused_packages_message(size_t refused);

// Answers every offered package with InstallFailed "installer not available", echoing the offered
// version and hash, until the update pipeline provides the real installer.
class UnavailableInstaller : public Installer {
  public:
    void offer(const PackagesAvailable& offer) override;
    PackageStatuses statuses() const override { return statuses_; }

  private:
    PackageStatuses statuses_;
};

}  // namespace myr::opamp
