// libFuzzer target over RFC 3161 timestamp parsing and verification (verify/timestamp.hpp).
//
// Input: one byte N, then N bytes of the bundle signature the timestamp should cover, then the
// timestamp (a TimeStampResp or bare token, DER). Seeds (corpus/timestamp) are the tokens of the
// sigstore-conformance and upstream-release bundles with their own signatures, so mutated copies
// pass the imprint check and reach the chain and signature checks against the timestamp
// authorities below (the public-good and staging TSAs, public test data).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "public_good_root.hpp"
#include "verify/der.hpp"
#include "verify/timestamp.hpp"
#include "verify/trusted_root.hpp"

namespace {

using namespace myr::verify;

// The staging TSA of the Rekor v2 conformance cases (public test data).
constexpr std::string_view kStagingAuthority =
    R"J({"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1","timestampAutho)J"
    R"J(rities":[{"subject":{"organization":"sigstore.dev","commonName":"sigstore-tsa-selfsigned)J"
    R"J("},"uri":"https://timestamp.sigstage.dev/api/v1/timestamp","certChain":{"certificates":[)J"
    R"J({"rawBytes":"MIICDzCCAZagAwIBAgIUCjWhBmHV4kFzxomWp/J98n4DfKcwCgYIKoZIzj0EAwMwOTEVMBMGA1U)J"
    R"J(EChMMc2lnc3RvcmUuZGV2MSAwHgYDVQQDExdzaWdzdG9yZS10c2Etc2VsZnNpZ25lZDAeFw0yNTAzMjgwOTE0MDZ)J"
    R"J(aFw0zNTAzMjYwODE0MDZaMC4xFTATBgNVBAoTDHNpZ3N0b3JlLmRldjEVMBMGA1UEAxMMc2lnc3RvcmUtdHNhMHY)J"
    R"J(wEAYHKoZIzj0CAQYFK4EEACIDYgAEx1v5F3HpD9egHuknpBFlRz7QBRDJu4aeVzt9zJLRY0lvmx1lF7WBM2c9AN8)J"
    R"J(ZGPQsmDqHlJN2R/7+RxLkvlLzkc19IOx38t7mGGEcB7agUDdCF/Ky3RTLSK0Xo/0AgHQdo2owaDAOBgNVHQ8BAf8)J"
    R"J(EBAMCB4AwHQYDVR0OBBYEFKj8ZPYo3i7mO3NPVIxSxOGc3VOlMB8GA1UdIwQYMBaAFDsgRlletTJNRzDObmPuc3R)J"
    R"J(H8gR9MBYGA1UdJQEB/wQMMAoGCCsGAQUFBwMIMAoGCCqGSM49BAMDA2cAMGQCMESvVS6GGtF33+J19TfwENWJXjR)J"
    R"J(v4i0/HQFwLUSkX6TfV7g0nG8VnqNHJLvEpAtOjQIwUD3uywTXorQP1DgbV09rF9Yen+CEqs/iEpieJWPst280SSO)J"
    R"J(Z5Na+dyPVk9/8SFk6"},{"rawBytes":"MIIB9zCCAXygAwIBAgIUCPExEFKiQh0dP4sp5ltmSYSSkFUwCgYIKoZ)J"
    R"J(Izj0EAwMwOTEVMBMGA1UEChMMc2lnc3RvcmUuZGV2MSAwHgYDVQQDExdzaWdzdG9yZS10c2Etc2VsZnNpZ25lZDA)J"
    R"J(eFw0yNTAzMjgwOTE0MDZaFw0zNTAzMjYwODE0MDZaMDkxFTATBgNVBAoTDHNpZ3N0b3JlLmRldjEgMB4GA1UEAxM)J"
    R"J(Xc2lnc3RvcmUtdHNhLXNlbGZzaWduZWQwdjAQBgcqhkjOPQIBBgUrgQQAIgNiAATt0tIDWyo4ARfL9BaSo0W5bJQ)J"
    R"J(EbKJTU/u7llvdjSI5aTkOAJa8tixn2+LEfPG4dMFdsMPtsIuU1qn2OqFiuMk6vHv/c+az25RQVY1oo50iMb0jIL3)J"
    R"J(N4FgwhPFpZnCbQPOjRTBDMA4GA1UdDwEB/wQEAwIBBjASBgNVHRMBAf8ECDAGAQH/AgEAMB0GA1UdDgQWBBQ7IEZ)J"
    R"J(ZXrUyTUcwzm5j7nN0R/IEfTAKBggqhkjOPQQDAwNpADBmAjEA2MI1VXgbf3dUOSc95hSRypBKOab18eh2xzQtxUs)J"
    R"J(HvWeY+1iFgyMluUuNR6taoSmFAjEA31m2czguZhKYX+4JSKu5pRYhBTXAd8KKQ3xdPRX/qCaLvT2qJAEQ1YQM3EJ)J"
    R"J(RrtI7"}]},"validFor":{"start":"2025-04-09T00:00:00Z"}}]})J";

// The public-good TSA (of the upstream-release bundle) and the staging one.
const std::vector<CertificateAuthority>& authorities() {
    static const std::vector<CertificateAuthority> all = [] {
        auto good = parse_trusted_root(myr::fuzz::kPublicGoodRoot);
        auto staging = parse_trusted_root(kStagingAuthority);
        if (!good || !staging) __builtin_trap();
        std::vector<CertificateAuthority> out = good->timestamp_authorities;
        out.insert(out.end(), staging->timestamp_authorities.begin(),
                   staging->timestamp_authorities.end());
        return out;
    }();
    return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    size_t n = data[0];
    if (size < 1 + n) return 0;
    Bytes signature(data + 1, data + 1 + n);
    Bytes token(data + 1 + n, data + size);
    auto parsed = parse_rfc3161(token);
    if (parsed) {
        // What the parser hands on must lie within what it was given.
        if (parsed->tst_info.size() > token.size() || parsed->signature.size() > token.size()) {
            __builtin_trap();
        }
    }
    (void)verify_rfc3161(token, signature, authorities());
    DerReader reader(token.data(), token.size());
    while (!reader.done()) {
        auto e = reader.next("element");
        if (!e) break;
        (void)parse_generalized_time(*e);
    }
    return 0;
}
