// What the installer asks of its parts, built from the offered package and the settings: the
// download, the preflight, the health rounds and the Checking policy. Pure: no port is called.
#pragma once

#include <vector>

#include "download/downloader.hpp"
#include "stage/preflight.hpp"
#include "update/check.hpp"
#include "update/health_rounds.hpp"
#include "update/ports.hpp"
#include "update/settings.hpp"

namespace myr::update {

download::Request download_request(const OfferedPackage& pkg, const Settings& s);
// `{config}` in the validate arguments becomes collector.configFile.
stage::PreflightRequest preflight_request(const OfferedPackage& pkg, const Stager::Staged& staged,
                                          const Settings& s);
// The health URLs that are set, the supervisor's first.
std::vector<HealthCheck> health_checks(const Settings& s);
RoundsSettings rounds_settings(const Settings& s);
CheckPolicy check_policy(const Settings& s);

}  // namespace myr::update
