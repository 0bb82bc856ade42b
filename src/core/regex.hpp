// A regular expression matched against a whole string, with a bounded cost: the signer identity
// pattern (update.signerIdentity.subjectRegexp, `verify --subject-regexp`). It replaces std::regex,
// whose locale and stream machinery was about a third of the binary's C++ library share, and whose
// backtracking matcher has no bound on time.
//
// The syntax is the part of ECMAScript that identity patterns use, matched byte by byte like
// std::regex over `char` (no flags: case-sensitive, `.` is any byte but \n and \r):
//   literals, `.`, `^` and `$` (start and end of the text), `|`, groups `(…)` and `(?:…)`,
//   quantifiers `*` `+` `?` `{n}` `{n,}` `{n,m}` (a lazy `?` after one is accepted: for a match of
//   the whole text it changes nothing), classes `[…]` and `[^…]` with ranges, the escapes \d \D \w
//   \W \s \S \t \n \v \f \r \0 \xHH and a backslash before any other character that is not a
//   letter or a digit.
// Refused with a message naming the construct and its offset: backreferences, lookaround (`(?=`,
// `(?!`, `(?<`), word boundaries \b \B, \cX, \u, named groups, and any other letter escape.
//
// Cost: the pattern compiles to at most kMaxStates instructions (counted repetitions are expanded,
// so `[a-z]{99999}` is refused, not built); a match runs the instructions as a set of states
// (Thompson's construction, no backtracking), so it takes time proportional to the text's length
// times the instructions and three arrays of one 32-bit word per instruction.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace myr {

class Regex {
  public:
    static constexpr size_t kMaxStates = 20000;

    // A compiled pattern, or an error such as "unmatched ( at offset 4" or "repetition counts
    // expand to more than 20000 states".
    [[nodiscard]] static Result<Regex> compile(std::string_view pattern);

    // Whether the whole of `text` matches (std::regex_match, not a search).
    bool full_match(std::string_view text) const;

    enum class Op : uint8_t { set, split, jump, begin, end, match };
    struct Inst {
        Op op;
        uint32_t x = 0;  // set: index into sets_; split, jump: target
        uint32_t y = 0;  // split: second target
    };
    using ByteSet = std::array<uint64_t, 4>;

  private:
    friend class RegexCompiler;
    std::vector<Inst> prog_;
    std::vector<ByteSet> sets_;
};

}  // namespace myr
