#include "cli/args.hpp"

namespace myr::cli {

Result<Args> Args::parse(const std::vector<std::string>& argv, const ArgSpec& spec) {
    Args out;
    bool options_done = false;
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (options_done || a.size() < 2 || a[0] != '-') {
            out.positional_.push_back(a);
            continue;
        }
        if (a == "--") {
            options_done = true;
            continue;
        }
        if (a == "-h") {
            out.flags_.insert("help");
            continue;
        }
        if (a.rfind("--", 0) != 0) return fail("unknown option " + a);
        std::string name = a.substr(2);
        std::optional<std::string> value;
        if (size_t eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name.resize(eq);
        }
        if (name == "help" || spec.flags.count(name)) {
            if (value) return fail("option --" + name + " takes no value");
            out.flags_.insert(name);
            continue;
        }
        if (!spec.options.count(name)) return fail("unknown option --" + name);
        if (!value) {
            if (i + 1 >= argv.size()) return fail("option --" + name + " needs a value");
            value = argv[++i];
        }
        if (out.options_.count(name) && !spec.repeatable.count(name)) {
            return fail("option --" + name + " given more than once");
        }
        out.options_.emplace(name, *value);
    }
    return out;
}

std::optional<std::string> Args::get(const std::string& name) const {
    auto it = options_.find(name);
    if (it == options_.end()) return std::nullopt;
    return it->second;
}

std::vector<std::string> Args::all(const std::string& name) const {
    std::vector<std::string> out;
    auto [b, e] = options_.equal_range(name);
    for (auto it = b; it != e; ++it) out.push_back(it->second);
    return out;
}

}  // namespace myr::cli
