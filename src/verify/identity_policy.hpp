// The part of a signer identity that binds a signature to one release: facts from the Fulcio
// certificate's extensions (the source repository, its ref, the build config, the GitHub workflow)
// that must equal configured values. Configured values are templates in which `{version}` is the
// offered version (version/template.hpp), so `refs/tags/v{version}` admits only the tag of the
// version on offer, and never an older release signed by the same workflow.
//
// Where a newer extension (1.3.6.1.4.1.57264.1.8-22) and a legacy GitHub one (.2-.6) state the same
// fact, the newer one is read and the legacy one only when the newer is absent:
//
// clang-format off
//   field                       extension read          else
//   sourceRepositoryRef         .14 Source Repo Ref     .6 GitHub Workflow Ref
//   buildConfigUri              .18 Build Config URI    -
//   sourceRepositoryUri         .12 Source Repo URI     -
//   githubWorkflowName          .4  Workflow Name       -   (no newer equivalent)
//   githubWorkflowRef           .14 Source Repo Ref     .6 GitHub Workflow Ref
//   githubWorkflowRepository    .5  Workflow Repository -   (.12 is a URL, not owner/name)
//   githubWorkflowTrigger       .20 Build Trigger       .2 GitHub Workflow Trigger
//   githubWorkflowSha           .13 Source Repo Digest  .3 GitHub Workflow SHA
// clang-format on
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "verify/fulcio_extensions.hpp"

namespace myr::verify {

enum class IdentityField {
    source_repository_ref,
    build_config_uri,
    source_repository_uri,
    github_workflow_name,
    github_workflow_ref,
    github_workflow_repository,
    github_workflow_trigger,
    github_workflow_sha,
};

// The camelCase name used in updater.yaml and in messages: "sourceRepositoryRef".
const char* field_name(IdentityField f);

// One required fact: `expected` is compared exactly (a template before bind_version()).
struct FieldRule {
    IdentityField field;
    std::string expected;
};

// A fact that was checked, and the certificate's value (equal to the expected one).
struct FieldCheck {
    IdentityField field;
    std::string value;
};

// Each rule's `{version}` replaced by `version` (canonical, as the installer names it); an
// unknown placeholder is an error naming the field.
[[nodiscard]] Result<std::vector<FieldRule>> bind_version(const std::vector<FieldRule>& rules,
                                                          std::string_view version);

// Every rule must hold: errors read `sourceRepositoryRef: expected "refs/tags/v0.158.0",
// certificate has "refs/tags/v0.157.0"` (or "... certificate has no <extension>").
[[nodiscard]] Result<std::vector<FieldCheck>> check_fields(const FulcioExtensions& ext,
                                                           const std::vector<FieldRule>& rules);

}  // namespace myr::verify
