// Entry points: read the file safely (type and size checked before parsing, never blocking on a
// FIFO), parse it into a tree, decode, apply the rules, and report every problem in file order.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "config/config.hpp"
#include "config/loader.hpp"
#include "core/file.hpp"

namespace myr::config {

std::string Problem::str() const {
    std::string out = file;
    if (line != 0) out += ":" + std::to_string(line) + ":" + std::to_string(column);
    out += ": ";
    if (!key.empty()) out += key + ": ";
    return out + message;
}

void Context::at(const yaml::Mark& m, const std::string& key, std::string message) {
    problems_.push_back(Problem{file_, m.line, m.column, key, std::move(message)});
    bad_.insert(key);
}

void Context::at_key(const std::string& key, std::string message) {
    std::string k = key;
    for (;;) {
        auto it = where_.find(k);
        if (it != where_.end()) {
            at(it->second, key, std::move(message));
            return;
        }
        size_t dot = k.rfind('.');
        if (dot == std::string::npos) break;
        k.resize(dot);
    }
    at(yaml::Mark{1, 1}, key, std::move(message));
}

bool Context::bad(const std::string& key) const {
    for (auto it = bad_.lower_bound(key); it != bad_.end(); ++it) {
        const std::string& b = *it;
        if (b.compare(0, key.size(), key) != 0) break;
        if (b.size() == key.size() || b[key.size()] == '.' || b[key.size()] == '[') return true;
    }
    return false;
}

namespace {

std::string size_text(uint64_t n) {
    return std::to_string(n) + " bytes, more than the " + std::to_string(kMaxFileSize / 1024) +
           " KiB limit for a configuration file";
}

Problem file_problem(const std::string& path, std::string message) {
    return Problem{path, 0, 0, "", std::move(message)};
}

}  // namespace

LoadResult load_string(std::string_view text, const std::string& name, Mode mode) {
    LoadResult out;
    if (text.size() > kMaxFileSize) {
        out.problems.push_back(file_problem(name, "configuration is " + size_text(text.size())));
        return out;
    }
    yaml::ParseResult parsed = yaml::parse(text);
    if (parsed.error) {
        out.problems.push_back(Problem{name, parsed.error->mark.line, parsed.error->mark.column, "",
                                       parsed.error->message});
        return out;
    }
    if (!parsed.root || parsed.root->is_null()) {
        out.problems.push_back(Problem{name, 1, 1, "", "empty configuration file"});
        return out;
    }
    const yaml::Node& root = *parsed.root;
    if (root.kind != yaml::Node::Kind::mapping) {
        out.problems.push_back(Problem{name, root.mark.line, root.mark.column, "",
                                       "expected a mapping of sections (server, update, "
                                       "collector, supervisor, container, log), got " +
                                           yaml::describe(root)});
        return out;
    }
    Config cfg;
    cfg.path = name;
    Context ctx(name, mode, out.problems);
    decode(root, cfg, ctx);
    if (cfg.collector.config_file.empty()) {
        // A default that follows storageDir: a pod that moves the supervisor's storage must not
        // have its preflight validate a file that is not there.
        cfg.collector.config_file = cfg.supervisor.storage_dir + "/effective.yaml";
    }
    check_rules(cfg, ctx);
    if (out.problems.empty()) {
        out.config = std::move(cfg);
    } else {
        std::stable_sort(out.problems.begin(), out.problems.end(),
                         [](const Problem& a, const Problem& b) {
                             return a.line != b.line ? a.line < b.line : a.column < b.column;
                         });
    }
    return out;
}

LoadResult load_file(const std::string& path, Mode mode) {
    LoadResult out;
    // The type is checked before opening: opening a FIFO without a writer would block.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        out.problems.push_back(file_problem(path, std::strerror(errno)));
        return out;
    }
    if (!S_ISREG(st.st_mode)) {
        out.problems.push_back(
            file_problem(path, std::string("is a ") + file_type_name(st.st_mode) + ", not a file"));
        return out;
    }
    if (static_cast<uint64_t>(st.st_size) > kMaxFileSize) {
        out.problems.push_back(file_problem(path, "is " + size_text(st.st_size)));
        return out;
    }
    auto fd = open_regular(path);
    if (!fd) {
        // Replaced by something else after the stat, or not readable.
        const Error& e = fd.error();
        out.problems.push_back(file_problem(path, e.sys_errno() != 0 && e.sys_errno() != EINVAL
                                                      ? std::strerror(e.sys_errno())
                                                      : "is not a regular file"));
        return out;
    }
    auto text = read_bounded(fd->get(), kMaxFileSize);
    if (!text) {
        out.problems.push_back(file_problem(path, text.error().sys_errno() == EFBIG
                                                      ? "is more than the " +
                                                            std::to_string(kMaxFileSize / 1024) +
                                                            " KiB limit for a configuration file"
                                                      : text.error().message()));
        return out;
    }
    return load_string(*text, path, mode);
}

Result<Config> load_or_error(const std::string& path, Mode mode) {
    LoadResult r = load_file(path, mode);
    if (r.config) return std::move(*r.config);
    std::string msg;
    for (size_t i = 0; i < r.problems.size(); ++i) {
        if (i) msg += "\n";
        msg += r.problems[i].str();
    }
    if (msg.empty()) msg = path + ": cannot load the configuration";
    return fail(Errc::invalid, msg);
}

}  // namespace myr::config
