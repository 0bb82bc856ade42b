#include "config/yaml_tree.hpp"

#include <yaml.h>

#include <cstdio>
#include <cstring>

namespace myr::config::yaml {

namespace {

Mark mark_of(const yaml_mark_t& m) {
    return Mark{static_cast<unsigned>(m.line) + 1, static_cast<unsigned>(m.column) + 1};
}

// Owns a libyaml parser; the event loop below may return from anywhere.
class Parser {
  public:
    explicit Parser(std::string_view text) {
        ok_ = yaml_parser_initialize(&p_) != 0;
        if (ok_) {
            yaml_parser_set_input_string(&p_, reinterpret_cast<const unsigned char*>(text.data()),
                                         text.size());
        }
    }
    ~Parser() {
        if (ok_) yaml_parser_delete(&p_);
    }
    Parser(const Parser&) = delete;
    Parser& operator=(const Parser&) = delete;

    bool ok() const { return ok_; }
    yaml_parser_t* get() { return &p_; }

  private:
    yaml_parser_t p_{};
    bool ok_ = false;
};

class Event {
  public:
    ~Event() {
        if (have_) yaml_event_delete(&e_);
    }
    bool next(yaml_parser_t* p) {
        if (have_) yaml_event_delete(&e_);
        have_ = yaml_parser_parse(p, &e_) != 0;
        return have_;
    }
    const yaml_event_t& operator*() const { return e_; }
    const yaml_event_t* operator->() const { return &e_; }

  private:
    yaml_event_t e_{};
    bool have_ = false;
};

// libyaml's own message, plus the usual cause when the offending character is a tab.
// Line and column of a byte offset, for the reader's errors which carry only an offset.
Mark mark_at(std::string_view text, size_t offset) {
    Mark m{1, 1};
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++m.line;
            m.column = 1;
        } else {
            ++m.column;
        }
    }
    return m;
}

ParseError libyaml_error(yaml_parser_t* p, std::string_view text) {
    ParseError err;
    err.message = p->problem ? p->problem : "invalid YAML";
    if (p->error == YAML_READER_ERROR) {
        err.mark = mark_at(text, p->problem_offset);
        if (p->problem_value != -1) {
            char buf[64];
            std::snprintf(
                buf, sizeof buf, " (byte 0x%02x%s)", static_cast<unsigned>(p->problem_value) & 0xff,
                std::strstr(err.message.c_str(), "UTF-8") ? ": the file must be UTF-8" : "");
            err.message += buf;
        }
        return err;
    }
    const yaml_mark_t& m = p->problem ? p->problem_mark : p->context_mark;
    err.mark = mark_of(m);
    if (p->context) {
        err.message += " ";
        err.message += p->context;
    }
    if (m.index < text.size() && text[m.index] == '\t') {
        err.message += " (a tab: YAML indentation must use spaces)";
    }
    if (err.mark.line == 0) err.mark = Mark{1, 1};
    return err;
}

bool has_explicit_tag(const yaml_char_t* tag) {
    return tag != nullptr && tag[0] != '\0';
}

}  // namespace

bool Node::is_null() const {
    if (kind != Kind::scalar || !plain) return false;
    return value.empty() || value == "~" || value == "null" || value == "Null" || value == "NULL";
}

std::string printable(std::string_view s, size_t max, bool escape_quotes) {
    std::string out;
    size_t n = s.size() < max ? s.size() : max;
    for (size_t i = 0; i < n; ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c >= 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else if (escape_quotes && (c == '"' || c == '\\')) {
            out += '\\';
            out += static_cast<char>(c);
        } else {
            out += static_cast<char>(c);
        }
    }
    if (s.size() > max) out += "...";
    return out;
}

std::string describe(const Node& n) {
    switch (n.kind) {
        case Node::Kind::mapping:
            return "a mapping";
        case Node::Kind::sequence:
            return "a list";
        case Node::Kind::scalar:
            break;
    }
    if (n.is_null()) return "an empty value";
    return "\"" + printable(n.value) + "\"";
}

ParseResult parse(std::string_view text, const Limits& limits) {
    ParseResult out;
    Parser parser(text);
    if (!parser.ok()) {
        out.error = ParseError{{1, 1}, "cannot initialise the YAML parser (out of memory)"};
        return out;
    }
    auto refuse = [&](const yaml_mark_t& m, std::string msg) {
        out.root.reset();
        out.error = ParseError{mark_of(m), std::move(msg)};
        return out;
    };

    // Open collections, innermost last. A pointer stays valid because a node's item vector only
    // grows while that node is the innermost open one, and its parent's vector is then unchanged.
    std::vector<Node*> open;
    std::optional<Node> root;
    size_t nodes = 0;
    int documents = 0;
    Event ev;

    // Adds a node where the document currently is and returns it.
    auto place = [&](Node n) -> Node* {
        if (open.empty()) {
            root = std::move(n);
            return &*root;
        }
        open.back()->items.push_back(std::move(n));
        return &open.back()->items.back();
    };

    for (;;) {
        if (!ev.next(parser.get())) {
            out.error = libyaml_error(parser.get(), text);
            return out;
        }
        switch (ev->type) {
            case YAML_STREAM_START_EVENT:
            case YAML_NO_EVENT:
                break;
            case YAML_STREAM_END_EVENT:
                out.root = std::move(root);
                return out;
            case YAML_DOCUMENT_START_EVENT:
                if (++documents > 1) {
                    return refuse(
                        ev->start_mark,
                        "a second YAML document (---): the configuration is one document");
                }
                break;
            case YAML_DOCUMENT_END_EVENT:
                break;
            case YAML_ALIAS_EVENT:
                return refuse(ev->start_mark,
                              "YAML aliases (*name) are not supported in the configuration");
            case YAML_SCALAR_EVENT: {
                if (has_explicit_tag(ev->data.scalar.tag) && !ev->data.scalar.plain_implicit &&
                    !ev->data.scalar.quoted_implicit) {
                    return refuse(ev->start_mark,
                                  "YAML tags (!tag) are not supported in the "
                                  "configuration");
                }
                if (++nodes > limits.max_nodes) {
                    return refuse(ev->start_mark, "more than " + std::to_string(limits.max_nodes) +
                                                      " YAML nodes: not a configuration file");
                }
                Node n;
                n.kind = Node::Kind::scalar;
                n.mark = mark_of(ev->start_mark);
                n.value.assign(reinterpret_cast<const char*>(ev->data.scalar.value),
                               ev->data.scalar.length);
                n.plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
                place(std::move(n));
                break;
            }
            case YAML_SEQUENCE_START_EVENT:
            case YAML_MAPPING_START_EVENT: {
                bool seq = ev->type == YAML_SEQUENCE_START_EVENT;
                const yaml_char_t* tag =
                    seq ? ev->data.sequence_start.tag : ev->data.mapping_start.tag;
                int implicit =
                    seq ? ev->data.sequence_start.implicit : ev->data.mapping_start.implicit;
                if (has_explicit_tag(tag) && !implicit) {
                    return refuse(ev->start_mark,
                                  "YAML tags (!tag) are not supported in the "
                                  "configuration");
                }
                if (open.size() >= limits.max_depth) {
                    return refuse(ev->start_mark, "nesting deeper than " +
                                                      std::to_string(limits.max_depth) +
                                                      " levels: not a configuration file");
                }
                if (++nodes > limits.max_nodes) {
                    return refuse(ev->start_mark, "more than " + std::to_string(limits.max_nodes) +
                                                      " YAML nodes: not a configuration file");
                }
                Node n;
                n.kind = seq ? Node::Kind::sequence : Node::Kind::mapping;
                n.mark = mark_of(ev->start_mark);
                n.plain = false;
                open.push_back(place(std::move(n)));
                break;
            }
            case YAML_SEQUENCE_END_EVENT:
            case YAML_MAPPING_END_EVENT:
                if (!open.empty()) open.pop_back();
                break;
        }
    }
}

}  // namespace myr::config::yaml
