// A small YAML document tree built from libyaml events, keeping the line and column of every node.
//
// Only what a configuration file needs: mappings, sequences and scalars. Aliases, tags and a second
// document are refused, nesting is capped and the tree is built with an explicit stack, so hostile
// input (billion laughs, 10k nested brackets) ends in an error, never in deep recursion.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myr::config::yaml {

struct Mark {
    unsigned line = 0;  // 1-based
    unsigned column = 0;
};

struct Node {
    enum class Kind { scalar, sequence, mapping };
    Kind kind = Kind::scalar;
    Mark mark;
    std::string value;        // scalars only
    bool plain = true;        // a plain (unquoted, non-block) scalar
    std::vector<Node> items;  // sequence items, or mapping keys and values alternating

    // A plain scalar that YAML's core schema reads as null: empty, "~", "null".
    bool is_null() const;
};

// How a node looks, for "expected X, got Y" messages: "\"five\"", "a mapping", "an empty value".
std::string describe(const Node& n);

struct ParseError {
    Mark mark;
    std::string message;
};

struct Limits {
    size_t max_depth = 32;
    size_t max_nodes = 100000;
};

// The root node of the single document in `text`, or nullopt for a stream without content (only
// comments or whitespace). A document whose root is a null scalar is returned as such.
struct ParseResult {
    std::optional<Node> root;
    std::optional<ParseError> error;
};
ParseResult parse(std::string_view text, const Limits& limits = {});

// Text safe to print: control and non-ASCII bytes as \xNN, cut at `max` bytes with "...", and
// '"' and '\' escaped unless `escape_quotes` is false (for messages that already quote values).
std::string printable(std::string_view s, size_t max = 60, bool escape_quotes = true);

}  // namespace myr::config::yaml
