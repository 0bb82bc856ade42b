#include "core/regex.hpp"

#include <algorithm>
#include <string>

namespace myr {

namespace {

constexpr uint32_t kUnbounded = UINT32_MAX;
// Deeper nesting than any identity needs; it keeps the recursive parser's stack small.
constexpr int kMaxDepth = 100;
// Counts above this are refused by the state bound anyway; saturating here keeps sums in range.
constexpr uint64_t kSaturate = Regex::kMaxStates + 1;

// A parsed pattern: a tree of nodes in one vector, children by index.
struct Node {
    enum class Kind : uint8_t { set, begin, end, concat, alt, repeat } kind;
    uint32_t set = 0;           // set: index into the byte sets
    uint32_t min = 0, max = 0;  // repeat
    std::vector<uint32_t> kids;
};

void add_byte(Regex::ByteSet& s, unsigned c) {
    s[c >> 6] |= uint64_t{1} << (c & 63);
}
void add_range(Regex::ByteSet& s, unsigned lo, unsigned hi) {
    for (unsigned c = lo; c <= hi; ++c) add_byte(s, c);
}
bool has_byte(const Regex::ByteSet& s, unsigned char c) {
    return (s[c >> 6] >> (c & 63)) & 1;
}
void invert(Regex::ByteSet& s) {
    for (auto& w : s) w = ~w;
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_alnum(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
// \d, \w or \s (by its lower-case letter), as ECMAScript defines them over ASCII.
void named_class(char c, Regex::ByteSet& s) {
    if (c == 's') {
        add_range(s, '\t', '\r');
        add_byte(s, ' ');
        return;
    }
    add_range(s, '0', '9');
    if (c == 'w') {
        add_range(s, 'a', 'z');
        add_range(s, 'A', 'Z');
        add_byte(s, '_');
    }
}
int hex_value(char c) {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

// Recursive descent over the pattern into Node trees, then the instructions. Errors name the
// offset in the pattern, counted from 0.
class RegexCompiler {
  public:
    explicit RegexCompiler(std::string_view p) : p_(p) {}

    Result<Regex> run() {
        uint32_t root = 0;
        if (auto st = alternation(0, root); !st) return st.fail();
        if (i_ < p_.size()) return bad("unmatched )");
        if (size(root) + 1 > Regex::kMaxStates) {
            return fail(Errc::invalid, "repetition counts expand to more than " +
                                           std::to_string(Regex::kMaxStates) + " states");
        }
        emit(root);
        re_.prog_.push_back({Regex::Op::match});
        re_.sets_ = std::move(sets_);
        return std::move(re_);
    }

  private:
    std::string_view p_;
    size_t i_ = 0;
    std::vector<Node> nodes_;
    std::vector<Regex::ByteSet> sets_;
    Regex re_;

    Failure bad(const std::string& why) const {
        return fail(Errc::invalid, why + " at offset " + std::to_string(i_));
    }
    uint32_t node(Node n) {
        nodes_.push_back(std::move(n));
        return static_cast<uint32_t>(nodes_.size() - 1);
    }
    uint32_t set_node(const Regex::ByteSet& s) {
        sets_.push_back(s);
        return node({Node::Kind::set, static_cast<uint32_t>(sets_.size() - 1), 0, 0, {}});
    }
    bool at(char c) const { return i_ < p_.size() && p_[i_] == c; }

    Status alternation(int depth, uint32_t& out) {
        if (depth > kMaxDepth) return bad("groups nested deeper than " + std::to_string(kMaxDepth));
        Node alt{Node::Kind::alt, 0, 0, 0, {}};
        for (;;) {
            uint32_t seq = 0;
            if (auto st = sequence(depth, seq); !st) return st;
            alt.kids.push_back(seq);
            if (!at('|')) break;
            ++i_;
        }
        out = alt.kids.size() == 1 ? alt.kids[0] : node(std::move(alt));
        return {};
    }

    Status sequence(int depth, uint32_t& out) {
        Node cat{Node::Kind::concat, 0, 0, 0, {}};
        while (i_ < p_.size() && !at('|') && !at(')')) {
            uint32_t a = 0;
            if (auto st = atom(depth, a); !st) return st;
            if (auto st = quantifiers(a); !st) return st;
            cat.kids.push_back(a);
        }
        out = node(std::move(cat));
        return {};
    }

    // Any number of quantifiers after an atom, each applied to what is before it (libstdc++'s
    // std::regex accepted `a{2}{3}` too); a `?` right after one makes it lazy, which for a match of
    // the whole text changes nothing.
    Status quantifiers(uint32_t& a) {
        for (;;) {
            uint32_t lo = 0, hi = 0;
            if (at('*')) {
                lo = 0, hi = kUnbounded, ++i_;
            } else if (at('+')) {
                lo = 1, hi = kUnbounded, ++i_;
            } else if (at('?')) {
                lo = 0, hi = 1, ++i_;
            } else if (at('{')) {
                if (auto st = counts(lo, hi); !st) return st;
            } else {
                return {};
            }
            if (at('?')) ++i_;
            a = node({Node::Kind::repeat, 0, lo, hi, {a}});
        }
    }

    uint32_t number() {
        uint64_t v = 0;
        while (i_ < p_.size() && is_digit(p_[i_])) {
            v = std::min<uint64_t>(v * 10 + static_cast<uint64_t>(p_[i_++] - '0'), kSaturate);
        }
        return static_cast<uint32_t>(v);
    }

    Status counts(uint32_t& lo, uint32_t& hi) {
        const size_t open = i_++;
        if (i_ >= p_.size() || !is_digit(p_[i_])) {
            i_ = open;
            return bad("{ starts no repetition count (write \\{ for the character)");
        }
        lo = hi = number();
        if (at(',')) {
            ++i_;
            hi = i_ < p_.size() && is_digit(p_[i_]) ? number() : kUnbounded;
        }
        if (!at('}')) {
            i_ = open;
            return bad("repetition count without its }");
        }
        ++i_;
        if (hi < lo) {
            i_ = open;
            return bad("repetition count {n,m} with m below n");
        }
        return {};
    }

    Status atom(int depth, uint32_t& out) {
        const char c = p_[i_];
        switch (c) {
            case '(':
                return group(depth, out);
            case '[':
                return byte_class(out);
            case '\\':
                return escape(out);
            case '*':
            case '+':
            case '?':
            case '{':
                return bad(std::string("nothing to repeat before ") + c);
            case '^':
            case '$':
                ++i_;
                out = node({c == '^' ? Node::Kind::begin : Node::Kind::end, 0, 0, 0, {}});
                return {};
            case '.': {
                ++i_;
                Regex::ByteSet s{};
                add_byte(s, '\n');
                add_byte(s, '\r');
                invert(s);
                out = set_node(s);
                return {};
            }
            default: {
                ++i_;
                Regex::ByteSet s{};
                add_byte(s, static_cast<unsigned char>(c));
                out = set_node(s);
                return {};
            }
        }
    }

    Status group(int depth, uint32_t& out) {
        const size_t open = i_++;
        if (at('?')) {
            if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') {
                i_ += 2;
            } else {
                return bad("lookaround and named groups ((?=, (?!, (?<) are not supported");
            }
        }
        if (auto st = alternation(depth + 1, out); !st) return st;
        if (!at(')')) {
            i_ = open;
            return bad("unmatched (");
        }
        ++i_;
        return {};
    }

    // One escape after a backslash: a class (\d…), a control character, or the character itself.
    // `in_class` is true inside […], where \b is a backspace.
    Status escape_set(Regex::ByteSet& s, bool in_class) {
        ++i_;
        if (i_ >= p_.size()) return bad("pattern ends in a backslash");
        const char c = p_[i_++];
        switch (c) {
            case 'd':
            case 'w':
            case 's':
            case 'D':
            case 'W':
            case 'S': {
                Regex::ByteSet k{};
                named_class(static_cast<char>(c | 0x20), k);
                if (c < 'a') invert(k);
                for (size_t w = 0; w < s.size(); ++w) s[w] |= k[w];
                return {};
            }
            case 't':
                add_byte(s, '\t');
                return {};
            case 'n':
                add_byte(s, '\n');
                return {};
            case 'v':
                add_byte(s, '\v');
                return {};
            case 'f':
                add_byte(s, '\f');
                return {};
            case 'r':
                add_byte(s, '\r');
                return {};
            case 'x': {
                const int h = i_ + 1 < p_.size() ? hex_value(p_[i_]) : -1;
                const int l = h >= 0 ? hex_value(p_[i_ + 1]) : -1;
                if (l < 0) return bad("\\x needs two hex digits");
                i_ += 2;
                add_byte(s, static_cast<unsigned>(h * 16 + l));
                return {};
            }
            case '0':
                if (i_ < p_.size() && is_digit(p_[i_]))
                    return bad("octal escapes are not supported");
                add_byte(s, 0);
                return {};
            case 'b':
                if (in_class) {
                    add_byte(s, '\b');
                    return {};
                }
                return bad("word boundaries (\\b) are not supported");
            default:
                if (is_digit(c)) return bad("backreferences are not supported");
                if (is_alnum(c)) return bad(std::string("unknown escape \\") + c);
                add_byte(s, static_cast<unsigned char>(c));
                return {};
        }
    }

    Status escape(uint32_t& out) {
        Regex::ByteSet s{};
        if (auto st = escape_set(s, false); !st) return st;
        out = set_node(s);
        return {};
    }

    // One member of a class: a byte (its value in `byte`) or an escaped class such as \d (-1).
    Status class_member(Regex::ByteSet& s, int& byte) {
        if (p_[i_] != '\\') {
            byte = static_cast<unsigned char>(p_[i_++]);
            add_byte(s, static_cast<unsigned>(byte));
            return {};
        }
        Regex::ByteSet one{};
        if (auto st = escape_set(one, true); !st) return st;
        int count = 0;
        for (unsigned c = 0; c < 256; ++c) {
            if (has_byte(one, static_cast<unsigned char>(c))) ++count, byte = static_cast<int>(c);
        }
        if (count != 1) byte = -1;
        for (size_t k = 0; k < s.size(); ++k) s[k] |= one[k];
        return {};
    }

    Status byte_class(uint32_t& out) {
        const size_t open = i_++;
        const bool negate = at('^');
        if (negate) ++i_;
        Regex::ByteSet s{};
        while (i_ < p_.size() && !at(']')) {
            int lo = 0;
            if (auto st = class_member(s, lo); !st) return st;
            if (at('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
                ++i_;
                int hi = 0;
                const size_t range_at = i_;
                if (auto st = class_member(s, hi); !st) return st;
                if (lo < 0 || hi < 0) return bad("a class such as \\d cannot end a range");
                if (hi < lo) {
                    i_ = range_at;
                    return bad("range out of order");
                }
                add_range(s, static_cast<unsigned>(lo), static_cast<unsigned>(hi));
            }
        }
        if (!at(']')) {
            i_ = open;
            return bad("unmatched [");
        }
        ++i_;
        if (negate) invert(s);
        out = set_node(s);
        return {};
    }

    // Instructions a node compiles to, saturated at kSaturate.
    uint64_t size(uint32_t n) const {
        const Node& nd = nodes_[n];
        uint64_t total = 0;
        switch (nd.kind) {
            case Node::Kind::set:
            case Node::Kind::begin:
            case Node::Kind::end:
                return 1;
            case Node::Kind::concat:
                for (uint32_t k : nd.kids) total += size(k);
                return std::min(total, kSaturate);
            case Node::Kind::alt:
                for (uint32_t k : nd.kids) total += size(k) + 2;
                return std::min(total, kSaturate);
            case Node::Kind::repeat: {
                const uint64_t one = size(nd.kids[0]);
                total = one * nd.min;
                total += nd.max == kUnbounded ? one + 2 : (one + 1) * (nd.max - nd.min);
                return std::min(total, kSaturate);
            }
        }
        return kSaturate;
    }

    uint32_t here() const { return static_cast<uint32_t>(re_.prog_.size()); }
    uint32_t push(Regex::Op op, uint32_t x = 0, uint32_t y = 0) {
        re_.prog_.push_back({op, x, y});
        return here() - 1;
    }

    // Thompson's construction; counted repetitions are written out (size() bounded them first).
    void emit(uint32_t n) {
        const Node& nd = nodes_[n];
        switch (nd.kind) {
            case Node::Kind::set:
                push(Regex::Op::set, nd.set);
                return;
            case Node::Kind::begin:
                push(Regex::Op::begin);
                return;
            case Node::Kind::end:
                push(Regex::Op::end);
                return;
            case Node::Kind::concat:
                for (uint32_t k : nd.kids) emit(k);
                return;
            case Node::Kind::alt: {
                std::vector<uint32_t> jumps;
                for (size_t k = 0; k < nd.kids.size(); ++k) {
                    const bool last = k + 1 == nd.kids.size();
                    const uint32_t split = last ? 0 : push(Regex::Op::split, here() + 1);
                    emit(nd.kids[k]);
                    if (!last) {
                        jumps.push_back(push(Regex::Op::jump));
                        re_.prog_[split].y = here();
                    }
                }
                for (uint32_t j : jumps) re_.prog_[j].x = here();
                return;
            }
            case Node::Kind::repeat:
                emit_repeat(nd);
                return;
        }
    }

    void emit_repeat(const Node& nd) {
        const uint32_t kid = nd.kids[0];
        for (uint32_t k = 0; k < nd.min; ++k) emit(kid);
        if (nd.max == kUnbounded) {  // loop: split body, out; body; jump back
            const uint32_t split = push(Regex::Op::split, here() + 1);
            emit(kid);
            push(Regex::Op::jump, split);
            re_.prog_[split].y = here();
            return;
        }
        std::vector<uint32_t> skips;  // each optional copy may skip to the end
        for (uint32_t k = nd.min; k < nd.max; ++k) {
            skips.push_back(push(Regex::Op::split, here() + 1));
            emit(kid);
        }
        for (uint32_t s : skips) re_.prog_[s].y = here();
    }
};

Result<Regex> Regex::compile(std::string_view pattern) {
    return RegexCompiler(pattern).run();
}

bool Regex::full_match(std::string_view text) const {
    const size_t n = prog_.size();
    // mark[pc] is the text position + 1 for which pc was last added, so a state is listed once per
    // position and a loop of empty steps ends.
    std::vector<uint32_t> cur, next, stack, mark(n, 0);
    cur.reserve(n), next.reserve(n);
    auto add = [&](std::vector<uint32_t>& list, uint32_t pc0, size_t pos) {
        const uint32_t stamp = static_cast<uint32_t>(pos + 1);
        stack.push_back(pc0);
        while (!stack.empty()) {
            const uint32_t pc = stack.back();
            stack.pop_back();
            if (mark[pc] == stamp) continue;
            mark[pc] = stamp;
            const Inst& in = prog_[pc];
            switch (in.op) {
                case Op::jump:
                    stack.push_back(in.x);
                    break;
                case Op::split:
                    stack.push_back(in.y);
                    stack.push_back(in.x);
                    break;
                case Op::begin:
                    if (pos == 0) stack.push_back(pc + 1);
                    break;
                case Op::end:
                    if (pos == text.size()) stack.push_back(pc + 1);
                    break;
                case Op::set:
                case Op::match:
                    list.push_back(pc);
                    break;
            }
        }
    };
    if (text.size() >= UINT32_MAX - 1) return false;
    add(cur, 0, 0);
    for (size_t pos = 0; pos < text.size() && !cur.empty(); ++pos) {
        next.clear();
        const auto c = static_cast<unsigned char>(text[pos]);
        for (uint32_t pc : cur) {
            if (prog_[pc].op == Op::set && has_byte(sets_[prog_[pc].x], c))
                add(next, pc + 1, pos + 1);
        }
        cur.swap(next);
    }
    for (uint32_t pc : cur) {
        if (prog_[pc].op == Op::match) return true;
    }
    return false;
}

}  // namespace myr
