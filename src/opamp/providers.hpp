// What the agent reports but does not know itself: versions and health (StatusProvider) and the
// package work (PackageHandler: the agent's view of whoever handles offered packages). The runtime
// plugs in the child service's state (runtime::CollectorStatus) and the installer
// (runtime::PackageAdapter); tests use the stand-ins in tests/support/opamp_stand_ins.hpp.
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

class PackageHandler {
  public:
    virtual ~PackageHandler() = default;
    // Every PackagesAvailable the server sends, repeats included (the handler compares hashes).
    virtual void offer(const PackagesAvailable& offer) = 0;
    // The statuses to report now (an empty list before any offer).
    virtual PackageStatuses statuses() const = 0;
};

// The one PackageStatuses.error_message that answers the packages dropped past
// kMaxOfferedPackages (a handler must not answer each of them).
std::string refused_packages_message(size_t refused);

}  // namespace myr::opamp
