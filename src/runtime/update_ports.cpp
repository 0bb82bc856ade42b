#include "runtime/update_ports.hpp"

#include <optional>

#include "hash/sha256.hpp"
#include "loop/step.hpp"
#include "net/http_client.hpp"
#include "version/version.hpp"

namespace myr::runtime {
namespace {

Result<update::Verifier::Verified> check(const std::shared_ptr<const verify::LoadedRoot>& root,
                                         const std::string& no_root,
                                         const verify::Identity& identity,
                                         const verify::Options& options,
                                         const update::Verifier::Request& request) {
    auto digest = hash::digest_from_hex(request.sha256_hex);
    if (!digest) return digest.fail("artifact digest");
    // No usable root is the node's state, not the package's fault: refused, never quarantined.
    if (!root) return fail(Errc::refused, no_root);
    // The offered version is canonical (update/check names the install by it): no braces to
    // expand again, no leading 'v' to double the one a template writes. Checked, not assumed.
    if (!version::is_canonical(request.version)) {
        return fail("signer identity: offered version \"" + request.version +
                    "\" is not in canonical form");
    }
    auto bound = verify::bind_identity(identity, request.version);
    if (!bound) return bound.fail("signer identity");
    auto v = verify::verify_bundle(*root->root, request.bundle_json, *digest, *bound, options);
    if (!v) return v.fail();
    std::string checked;
    for (const verify::FieldCheck& f : v->fields) {
        checked += (checked.empty() ? "" : " ") + std::string(verify::field_name(f.field)) + "=\"" +
                   f.value + "\"";
    }
    return update::Verifier::Verified{v->subject, v->issuer, checked};
}

}  // namespace

std::unique_ptr<update::Step> HttpHealthProbe::get(const Url& url, Duration timeout,
                                                   update::Callback<int> done) {
    net::HttpRequest req;
    req.url = url;
    net::HttpOptions opts;
    // Health URLs are the collector's and the supervisor's own endpoints, on loopback by
    // default; a non-loopback http:// one was accepted by the configuration on purpose.
    opts.allow_insecure_transport = true;
    opts.connect_timeout = timeout;
    opts.idle_timeout = timeout;
    opts.total_timeout = timeout;
    opts.limits.max_body = 64 * 1024;
    net::HttpClient::Handlers h;
    h.on_done = [done](Result<net::HttpResponse> r) {
        if (!r) return done(r.fail());
        done(r->head.status);
    };
    auto client =
        std::make_unique<net::HttpClient>(loop_, sched_, std::move(req), opts, std::move(h));
    client->start();
    return client;
}

std::string SigstoreVerifier::trust() const {
    auto root = roots_.current();
    return root ? root->sha256_hex : std::string();
}

std::unique_ptr<update::Step> SigstoreVerifier::verify(Request request,
                                                       update::Callback<Verified> done) {
    return loop::post_job<Verified>(
        sched_, "signature check",
        // The root is taken now, on the loop; the job holds it however the watch changes.
        [request = std::move(request), root = roots_.current(), no_root = roots_.problem(),
         identity = identity_,
         options = options_] { return check(root, no_root, identity, options, request); },
        std::move(done));
}

}  // namespace myr::runtime
