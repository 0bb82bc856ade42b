// in-toto Statements (v0.1 and v1) as a DSSE envelope carries them: the subject list that binds
// an attestation to artifact digests. Only the fields verification needs are read; the predicate
// is left alone (its shape depends on predicateType), but the whole document must be well-formed
// JSON within the bounds below.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "verify/pbjson.hpp"

namespace myr::verify {

struct StatementSubject {
    std::string name;
    // (algorithm, lower-case hex value) as written, e.g. ("sha256", "a0cf…"), ("sha512", "…").
    std::vector<std::pair<std::string, std::string>> digests;
};

struct Statement {
    std::string type;  // the _type URI
    std::string predicate_type;
    std::vector<StatementSubject> subjects;
};

inline constexpr std::string_view kStatementV01 = "https://in-toto.io/Statement/v0.1";
inline constexpr std::string_view kStatementV1 = "https://in-toto.io/Statement/v1";

// Bounds on a statement: the payload of a SLSA provenance is a few KiB; 256 subjects cover a
// release that attests every archive of every platform at once.
inline constexpr size_t kMaxStatementBytes = 512 * 1024;
inline constexpr int kMaxStatementDepth = 32;
inline constexpr size_t kMaxStatementSubjects = 256;
inline constexpr size_t kMaxSubjectDigests = 16;

// Errors read "in-toto statement: <field>: <why>".
[[nodiscard]] Result<Statement> parse_statement(std::string_view payload);

// True when a subject carries `algorithm` with exactly `hex` (lower case).
bool statement_names_digest(const Statement& s, std::string_view algorithm, std::string_view hex);

}  // namespace myr::verify
