#include "verify/der.hpp"

#include <cstdio>
#include <cstring>

namespace myr::verify {

bool DerElement::content_equals(const uint8_t* p, size_t n) const {
    return length == n && std::memcmp(content, p, n) == 0;
}

Result<DerElement> DerReader::next(const char* what) {
    if (done()) return fail(std::string(what) + ": missing");
    DerElement e;
    e.raw = p_;
    const uint8_t* p = p_;
    e.tag = *p++;
    if ((e.tag & 0x1F) == 0x1F) return fail(std::string(what) + ": multi-byte tag");
    if (p == end_) return fail(std::string(what) + ": truncated length");
    size_t len = *p++;
    if (len & 0x80) {
        size_t n = len & 0x7F;
        // Four length bytes already allow 4 GiB; more (or the indefinite form, n == 0) is not DER.
        if (n == 0 || n > 4) return fail(std::string(what) + ": unsupported length form");
        if (static_cast<size_t>(end_ - p) < n)
            return fail(std::string(what) + ": truncated length");
        if (*p == 0) return fail(std::string(what) + ": length not minimally encoded");
        len = 0;
        for (size_t i = 0; i < n; ++i) len = len << 8 | *p++;
        if (len < 0x80) return fail(std::string(what) + ": length not minimally encoded");
    }
    if (static_cast<size_t>(end_ - p) < len) {
        return fail(std::string(what) + ": length " + std::to_string(len) +
                    " runs past its container");
    }
    e.content = p;
    e.length = len;
    e.raw_length = static_cast<size_t>(p + len - e.raw);
    p_ = p + len;
    return e;
}

Result<DerElement> DerReader::expect(uint8_t tag, const char* what) {
    if (!done() && *p_ != tag) {
        char buf[64];
        std::snprintf(buf, sizeof buf, ": tag 0x%02x where 0x%02x is expected", *p_, tag);
        return fail(std::string(what) + buf);
    }
    return next(what);
}

Result<DerReader> DerReader::enter(const DerElement& e, const char* what) const {
    if (!(e.tag & 0x20)) return fail(std::string(what) + ": not a constructed element");
    if (depth_ + 1 > kMaxDerDepth) {
        return fail(std::string(what) + ": nested deeper than " + std::to_string(kMaxDerDepth));
    }
    return DerReader(e.content, e.length, depth_ + 1);
}

Status DerReader::finish(const char* what) const {
    if (!done()) return fail(std::string(what) + ": unexpected trailing data");
    return {};
}

Result<int64_t> parse_generalized_time(const DerElement& e) {
    if (e.tag != der::kGeneralizedTime) return fail("not a GeneralizedTime");
    std::string s(reinterpret_cast<const char*>(e.content), e.length);
    if (s.size() < 15 || s.back() != 'Z') return fail("GeneralizedTime \"" + s + "\" is not UTC");
    for (size_t i = 0; i < 14; ++i) {
        if (s[i] < '0' || s[i] > '9') return fail("GeneralizedTime \"" + s + "\" is malformed");
    }
    if (s.size() > 15) {
        // A fraction: ".d+" then Z (RFC 3161 allows it; seconds are what the policy uses).
        if (s[14] != '.' || s.size() < 17 || s.size() > 32) {
            return fail("GeneralizedTime \"" + s + "\" is malformed");
        }
        for (size_t i = 15; i + 1 < s.size(); ++i) {
            if (s[i] < '0' || s[i] > '9') return fail("GeneralizedTime \"" + s + "\" is malformed");
        }
    }
    auto num = [&](size_t at, size_t n) {
        int v = 0;
        for (size_t i = 0; i < n; ++i) v = v * 10 + (s[at + i] - '0');
        return v;
    };
    int year = num(0, 4), month = num(4, 2), day = num(6, 2);
    int hour = num(8, 2), minute = num(10, 2), second = num(12, 2);
    if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
        return fail("GeneralizedTime \"" + s + "\" is out of range");
    }
    return epoch_seconds(year, month, day, hour, minute, second);
}

}  // namespace myr::verify
