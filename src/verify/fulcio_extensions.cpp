#include "verify/fulcio_extensions.hpp"

#include <mbedtls/asn1.h>

#include <cstring>

namespace myr::verify {

namespace {

// 1.3.6.1.4.1.57264.1 (DER contents); one more byte names the arc (all of ours are below 128).
constexpr uint8_t kFulcioArc[] = {0x2B, 0x06, 0x01, 0x04, 0x01, 0x83, 0xBF, 0x30, 0x01};

// clang-format off
constexpr const char* kNames[23] = {
    nullptr,                       "Issuer (legacy)",
    "GitHub Workflow Trigger",     "GitHub Workflow SHA",
    "GitHub Workflow Name",        "GitHub Workflow Repository",
    "GitHub Workflow Ref",         nullptr,
    "Issuer",                      "Build Signer URI",
    "Build Signer Digest",         "Runner Environment",
    "Source Repository URI",       "Source Repository Digest",
    "Source Repository Ref",       "Source Repository Identifier",
    "Source Repository Owner URI", "Source Repository Owner Identifier",
    "Build Config URI",            "Build Config Digest",
    "Build Trigger",               "Run Invocation URI",
    "Source Repository Visibility At Signing",
};
// clang-format on

bool is_legacy(FulcioOid oid) {
    return static_cast<uint8_t>(oid) <= 6;
}

}  // namespace

std::string describe(FulcioOid oid) {
    auto arc = static_cast<unsigned>(oid);
    return "1.3.6.1.4.1.57264.1." + std::to_string(arc) + " (" + kNames[arc] + ")";
}

std::optional<FulcioOid> FulcioExtensions::recognise(const uint8_t* oid, size_t len) {
    if (len != sizeof kFulcioArc + 1 || std::memcmp(oid, kFulcioArc, sizeof kFulcioArc) != 0) {
        return std::nullopt;
    }
    uint8_t arc = oid[sizeof kFulcioArc];
    if (arc < 1 || arc > 22 || arc == 7) return std::nullopt;
    return static_cast<FulcioOid>(arc);
}

Status FulcioExtensions::add(FulcioOid oid, const uint8_t* value, size_t len) {
    std::optional<std::string>& slot = values_[static_cast<size_t>(oid)];
    if (slot) return fail("extension " + describe(oid) + " appears more than once");
    const uint8_t* text = value;
    size_t text_len = len;
    if (!is_legacy(oid)) {
        auto* p = const_cast<unsigned char*>(value);
        const unsigned char* end = p + len;
        if (mbedtls_asn1_get_tag(&p, end, &text_len, MBEDTLS_ASN1_UTF8_STRING) != 0 ||
            p + text_len != end) {
            return fail("extension " + describe(oid) + " is not one DER UTF8String");
        }
        text = p;
    }
    if (text_len > kMaxFulcioValueBytes) {
        return fail("extension " + describe(oid) + " is longer than " +
                    std::to_string(kMaxFulcioValueBytes) + " bytes");
    }
    for (size_t i = 0; i < text_len; ++i) {
        if (text[i] < 0x20 || text[i] == 0x7F) {
            return fail("extension " + describe(oid) + " holds a control character");
        }
    }
    slot.emplace(reinterpret_cast<const char*>(text), text_len);
    return {};
}

const std::optional<std::string>& FulcioExtensions::get(FulcioOid oid) const {
    return values_[static_cast<size_t>(oid)];
}

}  // namespace myr::verify
