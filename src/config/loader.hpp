// Internal: the schema walk from a YAML tree to a Config (decode.cpp), and the rules between keys
// that run after it (rules.cpp). Both report through one Context that remembers where each key was.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/yaml_tree.hpp"

namespace myr::config {

class Context {
  public:
    Context(std::string file, Mode mode, std::vector<Problem>& problems)
        : file_(std::move(file)), mode_(mode), problems_(problems) {}

    Mode mode() const { return mode_; }

    // A problem at a node's position; `key` is the full key path.
    void at(const yaml::Mark& m, const std::string& key, std::string message);
    // A problem at the position of `key`, or of its nearest present parent when it is absent.
    void at_key(const std::string& key, std::string message);

    void remember(const std::string& key, const yaml::Mark& m) { where_[key] = m; }
    bool present(const std::string& key) const { return where_.count(key) != 0; }
    // True when `key` (or a key under it) already had a problem: rules about it are skipped
    // so one mistake is reported once.
    bool bad(const std::string& key) const;
    // True when `key` itself had a problem (not a key under it).
    bool bad_itself(const std::string& key) const { return bad_.count(key) != 0; }

  private:
    std::string file_;
    Mode mode_;
    std::vector<Problem>& problems_;
    std::map<std::string, yaml::Mark> where_;
    std::set<std::string> bad_;
};

// Decodes `root` (a mapping) into `cfg`, reporting type and value problems.
void decode(const yaml::Node& root, Config& cfg, Context& ctx);
// The rules between keys and the mode's required keys, on a decoded config.
void check_rules(const Config& cfg, Context& ctx);

// The nearest of `candidates` to `word` when it is close enough to be a likely typo, else "".
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace myr::config
