// The signer of the public sigstore-conformance cases (tests/data/sigstore-conformance): the
// identity their certificates carry, for the unit tests and the fuzz targets that verify them.
// Header-only and free of doctest, so the fuzz build (-Dtests=false) can include it too.
#pragma once

#include "verify/sigstore.hpp"

namespace myr::test {

inline constexpr const char* kBeacon =
    "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/"
    "workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
inline constexpr const char* kActions = "https://token.actions.githubusercontent.com";

inline verify::Identity conformance_identity() {
    verify::Identity id;
    id.subject = kBeacon;
    id.issuer = kActions;
    return id;
}

}  // namespace myr::test
