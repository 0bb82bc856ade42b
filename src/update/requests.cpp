#include "update/requests.hpp"

#include "core/hex.hpp"

namespace myr::update {
namespace {

std::string substitute_config(const std::string& arg, const std::string& config) {
    std::string out = arg;
    const std::string token = "{config}";
    for (size_t at = out.find(token); at != std::string::npos; at = out.find(token, at)) {
        out.replace(at, token.size(), config);
        at += config.size();
    }
    return out;
}

}  // namespace

download::Request download_request(const OfferedPackage& pkg, const Settings& s) {
    download::Request req;
    req.url = pkg.file->url;
    req.headers = pkg.file->headers;
    req.content_hash_hex = hex::encode(pkg.file->content_hash);
    req.max_size = s.max_artifact_size;
    return req;
}

stage::PreflightRequest preflight_request(const OfferedPackage& pkg, const Stager::Staged& staged,
                                          const Settings& s) {
    stage::PreflightRequest req;
    req.binary = staged.binary_path;
    // Checking made the package's version canonical.
    req.expected_version = pkg.version;
    for (const std::string& a : s.validate_args) {
        req.validate_args.push_back(substitute_config(a, s.config_file));
    }
    req.uid = s.uid;
    req.gid = s.gid;
    return req;
}

std::vector<HealthCheck> health_checks(const Settings& s) {
    std::vector<HealthCheck> out;
    if (s.supervisor_health_url) out.push_back({"supervisor", *s.supervisor_health_url});
    if (s.collector_health_url) out.push_back({"collector", *s.collector_health_url});
    return out;
}

RoundsSettings rounds_settings(const Settings& s) {
    return RoundsSettings{s.health_timeout, s.health_successes, s.health_interval, s.probe_timeout};
}

CheckPolicy check_policy(const Settings& s) {
    return CheckPolicy{s.minimum_version, s.allow_downgrade, s.max_minor_skew, s.supervisor_version,
                       s.quarantine_for};
}

}  // namespace myr::update
