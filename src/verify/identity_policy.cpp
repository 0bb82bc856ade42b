#include "verify/identity_policy.hpp"

#include <optional>

#include "version/template.hpp"

namespace myr::verify {

namespace {

struct Source {
    const char* name;
    FulcioOid primary;
    std::optional<FulcioOid> fallback;
};

// The table in the header, in IdentityField order.
Source source(IdentityField f) {
    using O = FulcioOid;
    switch (f) {
        case IdentityField::source_repository_ref:
            return {"sourceRepositoryRef", O::source_repository_ref, O::github_workflow_ref};
        case IdentityField::build_config_uri:
            return {"buildConfigUri", O::build_config_uri, std::nullopt};
        case IdentityField::source_repository_uri:
            return {"sourceRepositoryUri", O::source_repository_uri, std::nullopt};
        case IdentityField::github_workflow_name:
            return {"githubWorkflowName", O::github_workflow_name, std::nullopt};
        case IdentityField::github_workflow_ref:
            return {"githubWorkflowRef", O::source_repository_ref, O::github_workflow_ref};
        case IdentityField::github_workflow_repository:
            return {"githubWorkflowRepository", O::github_workflow_repository, std::nullopt};
        case IdentityField::github_workflow_trigger:
            return {"githubWorkflowTrigger", O::build_trigger, O::github_workflow_trigger};
        case IdentityField::github_workflow_sha:
            return {"githubWorkflowSha", O::source_repository_digest, O::github_workflow_sha};
    }
    return {"?", O::issuer, std::nullopt};
}

std::string quoted(const std::string& s) {
    return "\"" + s + "\"";
}

}  // namespace

const char* field_name(IdentityField f) {
    return source(f).name;
}

Result<std::vector<FieldRule>> bind_version(const std::vector<FieldRule>& rules,
                                            std::string_view version) {
    std::vector<FieldRule> out;
    out.reserve(rules.size());
    for (const FieldRule& r : rules) {
        auto value = version::expand_template(r.expected, version);
        if (!value) return value.fail(field_name(r.field));
        out.push_back({r.field, std::move(*value)});
    }
    return out;
}

Result<std::vector<FieldCheck>> check_fields(const FulcioExtensions& ext,
                                             const std::vector<FieldRule>& rules) {
    std::vector<FieldCheck> out;
    for (const FieldRule& r : rules) {
        Source s = source(r.field);
        const std::optional<std::string>* found = &ext.get(s.primary);
        if (!*found && s.fallback) found = &ext.get(*s.fallback);
        std::string head = std::string(s.name) + ": expected " + quoted(r.expected);
        if (!*found) {
            std::string which =
                s.fallback ? "neither " + describe(s.primary) + " nor " + describe(*s.fallback)
                           : "no " + describe(s.primary);
            return fail(head + ", certificate has " + which);
        }
        if (**found != r.expected) return fail(head + ", certificate has " + quoted(**found));
        out.push_back({r.field, **found});
    }
    return out;
}

}  // namespace myr::verify
