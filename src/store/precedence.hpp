// Seeding and precedence (spec "Seeding and precedence", volume.md): which binary is active after a
// start, given the image's collector version and what the volume holds. A pure decision: the
// journaled execution is journal::seed.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "store/volume.hpp"

namespace myr::store {

// container.seedPolicy: `newest` keeps an active version newer than the image's; `image` makes the
// image's version active at every start.
enum class SeedPolicy { newest, image };

// The rows of the precedence table, named for logs and tests.
enum class Rule {
    nothing_active,         // no version active yet                              -> activate X
    active_broken,          // active missing, not executable, hash differs      -> activate X
    image_policy,           // policy image, active is not the intact image binary -> activate X
    image_policy_current,   // policy image, active already is X from the image  -> keep
    newest_active_newer,    // policy newest, active newer than X                -> keep
    newest_tie,             // policy newest, active equal to X                  -> keep
    newest_active_older,    // policy newest, active older than X                -> activate X
    not_comparable,         // versions not comparable                           -> activate X
    image_version_unknown,  // `seedBinary --version` failed, an intact version is active -> keep
};
const char* to_string(Rule r);

struct Decision {
    bool activate = false;
    Rule rule = Rule::nothing_active;
};

// `image_version` is canonical. `image_sha256` is the image binary's hash (hex) when known; policy
// image needs it only when the active version is X from the image (same version, other bytes means
// the image changed and wins). Pass "" when not computed: the active one then counts as current.
Decision decide(SeedPolicy policy, const std::string& image_version, const Active& active,
                const std::string& image_sha256 = "");

// True when policy image needs the image's hash for `decide` (so the caller hashes only then).
bool needs_image_hash(SeedPolicy policy, const std::string& image_version, const Active& active);

// The version token from `seedBinary --version` output: "otelcol-contrib version 0.116.0" ->
// "0.116.0" (canonical; a leading 'v' is accepted). nullopt for empty, garbage or a token that is
// not a version.
std::optional<std::string> version_from_output(std::string_view output);

}  // namespace myr::store
