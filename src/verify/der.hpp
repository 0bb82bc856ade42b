// A small bounded DER reader for the structures mbedTLS 2.28 cannot parse (CMS SignedData and the
// RFC 3161 TSTInfo). Only what DER allows is accepted: definite, minimally encoded lengths and
// single-byte tags; every element must fit in its parent, and readers nest at most kMaxDerDepth
// deep, so a hostile token cannot make the parser recurse or read out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/result.hpp"
#include "verify/pbjson.hpp"

namespace myr::verify {

inline constexpr int kMaxDerDepth = 16;

namespace der {
// Universal and context tags as they appear on the wire (class and constructed bits included).
inline constexpr uint8_t kInteger = 0x02;
inline constexpr uint8_t kOctetString = 0x04;
inline constexpr uint8_t kOid = 0x06;
inline constexpr uint8_t kGeneralizedTime = 0x18;
inline constexpr uint8_t kSequence = 0x30;
inline constexpr uint8_t kSet = 0x31;
inline constexpr uint8_t kContext0 = 0xA0;  // [0] constructed
inline constexpr uint8_t kContext1 = 0xA1;  // [1] constructed
}  // namespace der

// One element: its tag, its content, and the whole encoding (header included).
struct DerElement {
    uint8_t tag = 0;
    const uint8_t* content = nullptr;
    size_t length = 0;
    const uint8_t* raw = nullptr;
    size_t raw_length = 0;

    Bytes content_bytes() const { return Bytes(content, content + length); }
    Bytes raw_bytes() const { return Bytes(raw, raw + raw_length); }
    bool content_equals(const uint8_t* p, size_t n) const;
};

class DerReader {
  public:
    DerReader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}

    bool done() const { return p_ == end_; }
    uint8_t peek_tag() const { return done() ? 0 : *p_; }
    // The next element, whatever its tag.
    [[nodiscard]] Result<DerElement> next(const char* what);
    // The next element, which must carry `tag`.
    [[nodiscard]] Result<DerElement> expect(uint8_t tag, const char* what);
    // A reader over the content of `e` (a constructed element), one level deeper.
    [[nodiscard]] Result<DerReader> enter(const DerElement& e, const char* what) const;
    // The reader must be at its end: DER leaves no trailing bytes inside a structure.
    [[nodiscard]] Status finish(const char* what) const;

  private:
    DerReader(const uint8_t* p, size_t n, int depth) : p_(p), end_(p + n), depth_(depth) {}
    const uint8_t* p_;
    const uint8_t* end_;
    int depth_ = 0;
};

// A GeneralizedTime "YYYYMMDDHHMMSS[.f+]Z" to Unix seconds (fraction dropped).
[[nodiscard]] Result<int64_t> parse_generalized_time(const DerElement& e);

}  // namespace myr::verify
