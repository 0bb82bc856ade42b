// Small text helpers: ASCII ones (configuration keys, URLs, tokens, header names) and the one
// UTF-8 rule for text that leaves the process in a field that must be UTF-8 (OpAMP's strings).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace myr::text {

// Without leading and trailing spaces, tabs, CR and LF.
std::string trim(std::string_view s);
// A-Z mapped to a-z; everything else unchanged.
std::string lower(std::string_view s);
// Equal but for the case of A-Z (header names, schemes).
bool iequals(std::string_view a, std::string_view b);

// `s` as valid UTF-8: every ill-formed sequence (a stray byte, a truncated or overlong sequence, a
// surrogate, past U+10FFFF) becomes U+FFFD, one per maximal ill-formed subpart (Unicode's
// "substitution of maximal subparts"). Longer than `max_bytes`, it is cut on a code point boundary
// and ends in "…" (the result is then at most `max_bytes`; `max_bytes` below 3 is taken as 3).
std::string valid_utf8(std::string_view s, size_t max_bytes = SIZE_MAX);

// `s` with every line break (\n, \r) made a space: a message that must stay one log or protocol
// line.
std::string single_line(std::string s);

// `s` made safe for a terminal: valid UTF-8 (as valid_utf8), and every control character, which a
// terminal would act on instead of showing, written out: C0 and DEL as `\xNN` (ESC, so no escape
// sequence survives; CR, LF and TAB too, so the text stays one line that cannot overwrite
// itself), C1 (U+0080..U+009F, the 8-bit CSI among them) as `\u00NN`, and a backslash as `\\`
// so that what is shown can be read back unambiguously. For text a file or a peer supplied.
std::string escape_controls(std::string_view s);

}  // namespace myr::text
