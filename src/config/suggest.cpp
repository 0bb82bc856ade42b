// "did you mean" for unknown keys: a typo in requireSignature must be caught, and the message
// should say which key was meant.
#include <algorithm>
#include <cctype>

#include "config/loader.hpp"

namespace myr::config {

namespace {

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), ignoring case.
// Words are capped by the caller so the table stays small.
size_t distance(const std::string& a, const std::string& b) {
    auto low = [](char c) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    };
    size_t n = a.size(), m = b.size();
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
    for (size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (size_t i = 1; i <= n; ++i) {
        for (size_t j = 1; j <= m; ++j) {
            size_t cost = low(a[i - 1]) == low(b[j - 1]) ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && low(a[i - 1]) == low(b[j - 2]) &&
                low(a[i - 2]) == low(b[j - 1])) {
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[n][m];
}

}  // namespace

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
    if (word.empty() || word.size() > 64) return "";
    std::string best;
    size_t best_d = SIZE_MAX;
    for (const std::string& c : candidates) {
        size_t d = distance(word, c);
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    // Close enough to be a typo: a third of the longer word, at least 2 edits.
    size_t limit = std::max<size_t>(2, std::max(word.size(), best.size()) / 3);
    return best_d <= limit ? best : "";
}

}  // namespace myr::config
