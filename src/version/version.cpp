#include "version/version.hpp"

#include <algorithm>

namespace myr::version {
namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_ident_char(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}
bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), is_digit);
}

// A numeric identifier: digits only, no leading zero unless it is "0".
bool is_numeric(std::string_view s) {
    return all_digits(s) && (s.size() == 1 || s[0] != '0');
}

// Splits on `sep`; empty pieces are kept so the caller can refuse them.
std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t start = 0;
    while (true) {
        size_t pos = s.find(sep, start);
        out.push_back(
            s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
        if (pos == std::string_view::npos) break;
        start = pos + 1;
    }
    return out;
}

// Compares two numbers given as canonical digit strings.
int compare_numeric(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
    int c = a.compare(b);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

int compare_identifier(std::string_view a, std::string_view b) {
    bool an = all_digits(a), bn = all_digits(b);
    if (an && bn) return compare_numeric(a, b);
    // Numeric identifiers have lower precedence than alphanumeric ones (§11.4.3).
    if (an != bn) return an ? -1 : 1;
    int c = a.compare(b);  // ASCII order (§11.4.2)
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

}  // namespace

std::optional<Version> parse(std::string_view text) {
    if (!text.empty() && text[0] == 'v') text.remove_prefix(1);
    Version v;
    size_t plus = text.find('+');
    if (plus != std::string_view::npos) {
        std::string_view build = text.substr(plus + 1);
        for (std::string_view id : split(build, '.')) {
            if (id.empty() || !std::all_of(id.begin(), id.end(), is_ident_char))
                return std::nullopt;
        }
        v.build = std::string(build);
        text = text.substr(0, plus);
    }
    size_t dash = text.find('-');
    if (dash != std::string_view::npos) {
        for (std::string_view id : split(text.substr(dash + 1), '.')) {
            if (id.empty() || !std::all_of(id.begin(), id.end(), is_ident_char))
                return std::nullopt;
            if (all_digits(id) && !is_numeric(id)) return std::nullopt;  // leading zero
            v.prerelease.emplace_back(id);
        }
        text = text.substr(0, dash);
    }
    std::vector<std::string_view> core = split(text, '.');
    if (core.size() != 3) return std::nullopt;
    for (std::string_view n : core) {
        if (!is_numeric(n)) return std::nullopt;
    }
    v.major = std::string(core[0]);
    v.minor = std::string(core[1]);
    v.patch = std::string(core[2]);
    return v;
}

int compare(const Version& a, const Version& b) {
    if (int c = compare_numeric(a.major, b.major)) return c;
    if (int c = compare_numeric(a.minor, b.minor)) return c;
    if (int c = compare_numeric(a.patch, b.patch)) return c;
    // A pre-release has lower precedence than the release itself (§11.3).
    if (a.prerelease.empty() || b.prerelease.empty()) {
        if (a.prerelease.empty() == b.prerelease.empty()) return 0;
        return a.prerelease.empty() ? 1 : -1;
    }
    size_t n = std::min(a.prerelease.size(), b.prerelease.size());
    for (size_t i = 0; i < n; ++i) {
        if (int c = compare_identifier(a.prerelease[i], b.prerelease[i])) return c;
    }
    // A longer set of identifiers wins when all before are equal (§11.4.4).
    if (a.prerelease.size() == b.prerelease.size()) return 0;
    return a.prerelease.size() < b.prerelease.size() ? -1 : 1;
}

Order compare(std::string_view a, std::string_view b) {
    auto va = parse(a);
    auto vb = parse(b);
    if (!va || !vb) return Order::not_comparable;
    int c = compare(*va, *vb);
    return c < 0 ? Order::less : (c > 0 ? Order::greater : Order::equal);
}

std::string to_string(const Version& v) {
    std::string s = v.major + "." + v.minor + "." + v.patch;
    for (size_t i = 0; i < v.prerelease.size(); ++i) {
        s += (i == 0 ? "-" : ".");
        s += v.prerelease[i];
    }
    if (!v.build.empty()) s += "+" + v.build;
    return s;
}

const char* to_string(Order o) {
    switch (o) {
        case Order::less:
            return "less";
        case Order::equal:
            return "equal";
        case Order::greater:
            return "greater";
        case Order::not_comparable:
            return "not comparable";
    }
    return "not comparable";
}

bool is_canonical(std::string_view text) {
    auto v = parse(text);
    return v && to_string(*v) == text;
}

}  // namespace myr::version
