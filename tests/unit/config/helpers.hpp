// Shared by the config unit tests: load a YAML string and look for a problem.
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "config/config.hpp"

namespace myr::config::test {

// A signed-update identity, needed by any file that leaves requireSignature at its default (true).
inline const std::string kIdentity =
    "update:\n"
    "  signerIdentity:\n"
    "    subject: https://github.com/o/r/.github/workflows/release.yml@refs/tags/v1.0.0\n";

inline LoadResult load(const std::string& yaml, Mode mode = Mode::any) {
    return load_string(yaml, "t.yaml", mode);
}

// Every problem, one per line, for failure messages.
inline std::string dump(const LoadResult& r) {
    std::string out;
    for (const Problem& p : r.problems) out += p.str() + "\n";
    return out;
}

// The problem about `key` whose message contains `text`, or nullptr.
inline const Problem* find(const LoadResult& r, const std::string& key, const std::string& text) {
    for (const Problem& p : r.problems) {
        if (p.key == key && p.message.find(text) != std::string::npos) return &p;
    }
    return nullptr;
}

// Loads, expecting failure with a problem about `key` containing `text`.
inline void expect_problem(const std::string& yaml, const std::string& key, const std::string& text,
                           Mode mode = Mode::any) {
    LoadResult r = load(yaml, mode);
    INFO("yaml:\n" << yaml << "problems:\n" << dump(r));
    CHECK_FALSE(r.config.has_value());
    CHECK(find(r, key, text) != nullptr);
}

// Loads, expecting success.
inline Config expect_ok(const std::string& yaml, Mode mode = Mode::any) {
    LoadResult r = load(yaml, mode);
    INFO("yaml:\n" << yaml << "problems:\n" << dump(r));
    REQUIRE(r.config.has_value());
    CHECK(r.problems.empty());
    return *r.config;
}

}  // namespace myr::config::test
