// A small argument parser for `myriarch-updater <command> [options]`: long options as `--key value`
// or `--key=value`, boolean flags, positional arguments, `--` ends options. Every command declares
// what it accepts, so an unknown option is a usage error (exit 2) naming it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace myr::cli {

struct ArgSpec {
    std::set<std::string> options;     // take a value: "config" for --config
    std::set<std::string> flags;       // take none: "help" is always accepted
    std::set<std::string> repeatable;  // options that may appear more than once
};

class Args {
  public:
    static Result<Args> parse(const std::vector<std::string>& argv, const ArgSpec& spec);

    bool flag(const std::string& name) const { return flags_.count(name) != 0; }
    std::optional<std::string> get(const std::string& name) const;
    std::vector<std::string> all(const std::string& name) const;
    const std::vector<std::string>& positional() const { return positional_; }

  private:
    std::multimap<std::string, std::string> options_;
    std::set<std::string> flags_;
    std::vector<std::string> positional_;
};

}  // namespace myr::cli
