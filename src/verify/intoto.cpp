#include "verify/intoto.hpp"

#include <cctype>

namespace myr::verify {

namespace {

bool is_lower_hex(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        if (!std::isdigit(static_cast<unsigned char>(c)) && (c < 'a' || c > 'f')) return false;
    }
    return true;
}

Result<StatementSubject> parse_subject(json_object* o, const std::string& path) {
    if (!json_object_is_type(o, json_type_object)) return fail(path + ": not an object");
    StatementSubject s;
    auto name = string_member(o, "name", path + ".name", false);
    if (!name) return name.fail();
    s.name = *name;
    auto digest = object_member(o, "digest", path + ".digest");
    if (!digest) return digest.fail();
    if (json_object_object_length(*digest) > static_cast<int>(kMaxSubjectDigests)) {
        return fail(path + ".digest: more than " + std::to_string(kMaxSubjectDigests) +
                    " algorithms");
    }
    json_object_object_foreach(*digest, alg, value) {
        const std::string vp = path + ".digest." + std::string(alg).substr(0, 40);
        if (!value || !json_object_is_type(value, json_type_string)) {
            return fail(vp + ": not a string");
        }
        std::string hex(json_object_get_string(value), json_object_get_string_len(value));
        // The spec's digests are lower-case hex; anything else cannot equal a digest we compute.
        if (!is_lower_hex(hex)) return fail(vp + ": not lower-case hex");
        s.digests.emplace_back(alg, std::move(hex));
    }
    if (s.digests.empty()) return fail(path + ".digest: empty");
    return s;
}

Result<Statement> parse(std::string_view payload) {
    auto doc = parse_json(payload, kMaxStatementBytes, kMaxStatementDepth);
    if (!doc) return doc.fail();
    json_object* root = doc->get();
    Statement st;
    auto type = string_member(root, "_type", "_type", true);
    if (!type) return type.fail();
    if (*type != kStatementV01 && *type != kStatementV1) {
        return fail("_type: \"" + type->substr(0, 100) +
                    "\" is not an in-toto Statement v0.1 or v1");
    }
    st.type = *type;
    auto pt = string_member(root, "predicateType", "predicateType", false);
    if (!pt) return pt.fail();
    st.predicate_type = *pt;
    auto subjects = array_member(root, "subject", "subject", kMaxStatementSubjects);
    if (!subjects) return subjects.fail();
    if (subjects->empty()) return fail("subject: missing or empty");
    for (size_t i = 0; i < subjects->size(); ++i) {
        auto s = parse_subject((*subjects)[i], "subject[" + std::to_string(i) + "]");
        if (!s) return s.fail();
        st.subjects.push_back(std::move(*s));
    }
    return st;
}

}  // namespace

Result<Statement> parse_statement(std::string_view payload) {
    auto st = parse(payload);
    if (!st) return st.fail("in-toto statement");
    return st;
}

bool statement_names_digest(const Statement& s, std::string_view algorithm, std::string_view hex) {
    for (const StatementSubject& subject : s.subjects) {
        for (const auto& [alg, value] : subject.digests) {
            if (alg == algorithm && value == hex) return true;
        }
    }
    return false;
}

}  // namespace myr::verify
