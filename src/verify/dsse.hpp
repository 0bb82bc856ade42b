// DSSE envelopes (github.com/secure-systems-lab/dsse) as a Sigstore bundle carries them: the
// signature is over PAE(payloadType, payload), not over the payload itself, and the Rekor v1
// entry that logs it is a `dsse` 0.0.1 or an `intoto` 0.0.2 body. The payload must be an in-toto
// Statement (verify/intoto.hpp); its subject binds the envelope to the artifact's digest.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "verify/pbjson.hpp"
#include "verify/signer.hpp"

namespace myr::verify {

struct TlogEntry;

struct Envelope {
    std::string payload_type;
    Bytes payload;
    std::vector<Bytes> signatures;  // the `sig` of each signature; `keyid` is a hint, unused
};

inline constexpr std::string_view kInTotoPayloadType = "application/vnd.in-toto+json";
// A Sigstore envelope carries one signature; a few more are parsed so the refusal can say so.
inline constexpr size_t kMaxEnvelopeSignatures = 8;

// `dsseEnvelope` of a bundle. Errors name the field ("dsseEnvelope.payload: missing").
[[nodiscard]] Result<Envelope> parse_envelope(json_object* dsse);

// DSSEv1 pre-authentication encoding: "DSSEv1 <len(type)> <type> <len(payload)> <payload>",
// lengths in ASCII decimal.
Bytes pae(std::string_view payload_type, const Bytes& payload);

// The Rekor v1 body agrees with the envelope, as the reference verifiers check it: one signature
// equal to the envelope's, the payload's SHA-256 equal to `payloadHash`, and the verifier the
// body records equal to the signer. Kinds: dsse 0.0.1, intoto 0.0.2.
[[nodiscard]] Status check_dsse_body(const TlogEntry& entry, const Envelope& envelope,
                                     const Signer& signer);

}  // namespace myr::verify
