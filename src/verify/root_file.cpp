#include "verify/root_file.hpp"

#include <sys/stat.h>

#include <cerrno>

#include "hash/sha256.hpp"
#include "verify/certificate.hpp"
#include "verify/ed25519.hpp"
#include "verify/public_key.hpp"

namespace myr::verify {
namespace {

int64_t nanos(const struct timespec& t) {
    return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// "" when every certificate of the chain parses, else why the first one does not.
std::string chain_problem(const CertificateAuthority& ca, size_t index) {
    for (size_t j = 0; j < ca.chain.size(); ++j) {
        auto cert = Certificate::parse(ca.chain[j]);
        if (!cert) {
            return "certificateAuthorities[" + std::to_string(index) + "] certificate " +
                   std::to_string(j) + ": " + cert.error().message();
        }
    }
    return "";
}

// A log key this build can load. Kept apart so that a build that verifies more key types (Rekor
// v2's Ed25519) widens it in one place.
std::string log_key_problem(const LogKey& k, size_t index) {
    const std::string at = "tlogs[" + std::to_string(index) + "]";
    if (k.spki.empty()) return at + ": no public key";
    if (is_ed25519_spki(k.spki)) return "";  // a Rekor v2 log, verified through libsodium
    auto key = PublicKey::from_spki(k.spki);
    if (!key) return at + " (" + k.key_details + "): " + key.error().message();
    return "";
}

}  // namespace

Result<FileStamp> stamp_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return fail_errno(path, errno);
    return FileStamp{st.st_dev, st.st_ino, st.st_size, nanos(st.st_mtim), nanos(st.st_ctim)};
}

Status check_usable(const TrustedRoot& root) {
    if (root.certificate_authorities.empty()) return fail("no certificate authority (Fulcio)");
    std::string ca_problem;
    bool ca_ok = false;
    for (size_t i = 0; i < root.certificate_authorities.size() && !ca_ok; ++i) {
        ca_problem = chain_problem(root.certificate_authorities[i], i);
        ca_ok = ca_problem.empty();
    }
    if (!ca_ok) return fail("no usable certificate authority: " + ca_problem);
    if (root.tlogs.empty()) return fail("no transparency log (tlogs is empty)");
    std::string log_problem;
    for (size_t i = 0; i < root.tlogs.size(); ++i) {
        log_problem = log_key_problem(root.tlogs[i], i);
        if (log_problem.empty()) return {};
    }
    return fail("no usable transparency log key: " + log_problem);
}

Result<LoadedRoot> load_usable_root(const std::string& path) {
    const std::string what = "trusted root " + path;
    auto stamp = stamp_file(path);
    if (!stamp) return stamp.fail("trusted root");
    auto text = read_small_file(path, kMaxTrustedRootBytes);
    if (!text) return text.fail("trusted root");
    auto parsed = parse_trusted_root(*text);
    // parse_trusted_root's errors start with "trusted root: ".
    if (!parsed) return fail(Error(parsed.error().message() + " (" + path + ")"));
    if (auto st = check_usable(*parsed); !st) return st.fail(what);
    LoadedRoot out;
    out.newest_start = newest_validity_start(*parsed);
    out.root = std::make_shared<const TrustedRoot>(std::move(*parsed));
    out.path = path;
    out.stamp = *stamp;
    out.sha256_hex = hash::to_hex(hash::sha256(*text));
    return out;
}

}  // namespace myr::verify
