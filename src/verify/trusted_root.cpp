#include "verify/trusted_root.hpp"

#include <cerrno>

#include "core/file.hpp"

namespace myr::verify {

namespace {

constexpr int kMaxDepth = 16;
constexpr size_t kMaxEntries = 256;
constexpr size_t kMaxChain = 16;

constexpr std::string_view kRootMediaPrefix = "application/vnd.dev.sigstore.trustedroot";

Result<ValidFor> parse_valid_for(json_object* parent, const std::string& path) {
    ValidFor vf;
    json_object* v = member(parent, "validFor");
    if (!v) return vf;
    if (!json_object_is_type(v, json_type_object)) return fail(path + ".validFor: not an object");
    for (const char* key : {"start", "end"}) {
        auto s = string_member(v, key, path + ".validFor." + key, false);
        if (!s) return s.fail();
        if (s->empty()) continue;
        auto t = parse_rfc3339(*s);
        if (!t) return t.fail(path + ".validFor." + key);
        (key[0] == 's' ? vf.start : vf.end) = *t;
    }
    return vf;
}

Result<std::vector<LogKey>> parse_logs(json_object* root, const char* key) {
    std::vector<LogKey> out;
    auto arr = array_member(root, key, key, kMaxEntries);
    if (!arr) return arr.fail();
    for (size_t i = 0; i < arr->size(); ++i) {
        std::string path = std::string(key) + "[" + std::to_string(i) + "]";
        json_object* e = (*arr)[i];
        if (!json_object_is_type(e, json_type_object)) return fail(path + ": not an object");
        LogKey lk;
        auto url = string_member(e, "baseUrl", path + ".baseUrl", false);
        if (!url) return url.fail();
        lk.base_url = *url;
        auto id = object_member(e, "logId", path + ".logId");
        if (!id) return id.fail();
        auto kid = bytes_member(*id, "keyId", path + ".logId.keyId", true);
        if (!kid) return kid.fail();
        lk.log_id = std::move(*kid);
        auto pk = object_member(e, "publicKey", path + ".publicKey");
        if (!pk) return pk.fail();
        auto raw = bytes_member(*pk, "rawBytes", path + ".publicKey.rawBytes", false);
        if (!raw) return raw.fail();
        lk.spki = std::move(*raw);
        auto det = string_member(*pk, "keyDetails", path + ".publicKey.keyDetails", false);
        if (!det) return det.fail();
        lk.key_details = *det;
        auto vf = parse_valid_for(*pk, path + ".publicKey");
        if (!vf) return vf.fail();
        lk.valid_for = *vf;
        out.push_back(std::move(lk));
    }
    return out;
}

// certificateAuthorities and timestampAuthorities share one shape.
Result<std::vector<CertificateAuthority>> parse_cas(json_object* root, const char* key) {
    std::vector<CertificateAuthority> out;
    auto arr = array_member(root, key, key, kMaxEntries);
    if (!arr) return arr.fail();
    for (size_t i = 0; i < arr->size(); ++i) {
        std::string path = std::string(key) + "[" + std::to_string(i) + "]";
        json_object* e = (*arr)[i];
        if (!json_object_is_type(e, json_type_object)) return fail(path + ": not an object");
        CertificateAuthority ca;
        auto uri = string_member(e, "uri", path + ".uri", false);
        if (!uri) return uri.fail();
        ca.uri = *uri;
        auto chain = object_member(e, "certChain", path + ".certChain");
        if (!chain) return chain.fail();
        auto certs =
            array_member(*chain, "certificates", path + ".certChain.certificates", kMaxChain);
        if (!certs) return certs.fail();
        if (certs->empty()) return fail(path + ".certChain.certificates: empty");
        for (size_t j = 0; j < certs->size(); ++j) {
            auto der = bytes_member(
                (*certs)[j], "rawBytes",
                path + ".certChain.certificates[" + std::to_string(j) + "].rawBytes", true);
            if (!der) return der.fail();
            ca.chain.push_back(std::move(*der));
        }
        auto vf = parse_valid_for(e, path);
        if (!vf) return vf.fail();
        ca.valid_for = *vf;
        out.push_back(std::move(ca));
    }
    return out;
}

}  // namespace

Result<TrustedRoot> parse_trusted_root(std::string_view json) {
    auto doc = parse_json(json, kMaxTrustedRootBytes, kMaxDepth);
    if (!doc) return doc.fail("trusted root");
    json_object* root = doc->get();
    auto media = string_member(root, "mediaType", "mediaType", true);
    if (!media) return media.fail("trusted root");
    if (media->compare(0, kRootMediaPrefix.size(), kRootMediaPrefix) != 0) {
        return fail("trusted root: unsupported mediaType " + media->substr(0, 100));
    }
    TrustedRoot tr;
    auto cas = parse_cas(root, "certificateAuthorities");
    if (!cas) return cas.fail("trusted root");
    tr.certificate_authorities = std::move(*cas);
    auto tsas = parse_cas(root, "timestampAuthorities");
    if (!tsas) return tsas.fail("trusted root");
    tr.timestamp_authorities = std::move(*tsas);
    auto tlogs = parse_logs(root, "tlogs");
    if (!tlogs) return tlogs.fail("trusted root");
    tr.tlogs = std::move(*tlogs);
    auto ctlogs = parse_logs(root, "ctlogs");
    if (!ctlogs) return ctlogs.fail("trusted root");
    tr.ctlogs = std::move(*ctlogs);
    return tr;
}

Result<std::string> read_small_file(const std::string& path, size_t max_bytes) {
    auto fd = open_regular(path);
    if (!fd) {
        if (fd.error().sys_errno() == EINVAL) return fail(path + ": not a regular file");
        return fail_errno(path, fd.error().sys_errno());
    }
    auto text = read_bounded(fd->get(), max_bytes);
    if (!text && text.error().sys_errno() == EFBIG) {
        return fail(path + ": larger than the limit of " + std::to_string(max_bytes) + " bytes");
    }
    if (!text) return text.fail(path);
    return text;
}

Result<TrustedRoot> load_trusted_root(const std::string& path) {
    auto text = read_small_file(path, kMaxTrustedRootBytes);
    if (!text) return text.fail("trusted root");
    auto tr = parse_trusted_root(*text);
    if (!tr) return fail(Error(tr.error().message() + " (" + path + ")"));
    return tr;
}

std::optional<int64_t> newest_validity_start(const TrustedRoot& root) {
    std::optional<int64_t> newest;
    auto take = [&](const ValidFor& v) {
        if (v.start && (!newest || *v.start > *newest)) newest = v.start;
    };
    for (const CertificateAuthority& ca : root.certificate_authorities) take(ca.valid_for);
    for (const LogKey& k : root.tlogs) take(k.valid_for);
    for (const LogKey& k : root.ctlogs) take(k.valid_for);
    return newest;
}

}  // namespace myr::verify
