#include "volume_support.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "hash/sha256.hpp"

namespace myr::test {

Json::Json(const std::string& text) {
    root_ = json_tokener_parse(text.c_str());
}
Json::~Json() {
    if (root_) json_object_put(root_);
}

json_object* Json::at(const std::string& path) const {
    json_object* cur = root_;
    size_t start = 0;
    while (cur && start <= path.size()) {
        size_t dot = path.find('.', start);
        std::string key =
            path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        json_object* next = nullptr;
        if (!json_object_is_type(cur, json_type_object) ||
            !json_object_object_get_ex(cur, key.c_str(), &next)) {
            return nullptr;
        }
        cur = next;
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return cur;
}

std::string Json::str(const std::string& path) const {
    json_object* o = root_ ? at(path) : nullptr;
    if (root_ && !o) {
        // Distinguish a JSON null from a missing member.
        json_object* parent = root_;
        size_t dot = path.rfind('.');
        if (dot != std::string::npos) parent = at(path.substr(0, dot));
        std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
        if (parent && json_object_is_type(parent, json_type_object) &&
            json_object_object_get_ex(parent, key.c_str(), nullptr)) {
            return "<null>";
        }
    }
    if (!o || !json_object_is_type(o, json_type_string)) return "";
    return json_object_get_string(o);
}

bool Json::boolean(const std::string& path) const {
    json_object* o = root_ ? at(path) : nullptr;
    return o && json_object_is_type(o, json_type_boolean) && json_object_get_boolean(o);
}

size_t Json::array_size(const std::string& path) const {
    json_object* o = root_ ? at(path) : nullptr;
    return o && json_object_is_type(o, json_type_array) ? json_object_array_length(o) : 0;
}

std::map<std::string, bool> Json::bool_map(const std::string& path) const {
    std::map<std::string, bool> out;
    json_object* o = root_ ? at(path) : nullptr;
    if (!o || !json_object_is_type(o, json_type_object)) return out;
    json_object_object_foreach(o, key, val) {
        out[key] = json_object_get_boolean(val);
    }
    return out;
}

std::string driver_bin() {
    return env_path("MYRIARCH_VOLUME_DRIVER");
}
std::string fake_otelcol() {
    return env_path("MYRIARCH_FAKE_OTELCOL");
}

std::string sha256_hex_of(const std::string& path) {
    auto d = hash::sha256_file(path);
    if (!d) throw std::runtime_error("hash " + path + ": " + d.error().message());
    return hash::to_hex(*d);
}

Volume::Volume() {
    install = tmp / "volume/collector";
    state_dir = tmp / "volume/state";
    supervisor = tmp / "supervisor";
    releases = tmp / "releases";
    for (const std::string& d : {tmp / "volume", supervisor, releases}) ::mkdir(d.c_str(), 0755);
    write_file(supervisor + "/persistent_state.yaml",
               "instance_id: 0192f0c4-6a1e-7b3c-9d2e-4f5a6b7c8d9e\n");
}

std::string Volume::release(const std::string& version, const std::string& extra) const {
    std::string path =
        releases + "/otelcol-" + version +
        (extra.empty() ? "" : "-" + std::to_string(std::hash<std::string>{}(extra) % 100000));
    std::string bytes = read_file(fake_otelcol());
    if (bytes.empty()) throw std::runtime_error("cannot read fake-otelcol");
    bytes += "\n#MYRIARCH-FAKE version=" + version + (extra.empty() ? "" : " " + extra) + "\n";
    write_file(path, bytes, 0755);
    return path;
}

RunResult Volume::driver(const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env) const {
    std::vector<std::string> argv = {driver_bin(), "--install-dir", install, "--state-dir",
                                     state_dir};
    argv.insert(argv.end(), args.begin(), args.end());
    SpawnOptions opts;
    opts.env = env;
    return run(argv, 60s, opts);
}

void Volume::clone_from(const Volume& other) {
    namespace fs = std::filesystem;
    const auto opts = fs::copy_options::recursive | fs::copy_options::copy_symlinks;
    for (const auto& [from, to] : {std::pair{other.tmp / "volume", tmp / "volume"},
                                   std::pair{other.supervisor, supervisor}}) {
        fs::remove_all(to);
        fs::copy(from, to, opts);
    }
}

std::string Volume::state() const {
    return driver({"state"}).out;
}

namespace {

void digest_dir(const std::string& root, const std::string& rel, hash::Sha256& h) {
    std::string path = rel.empty() ? root : root + "/" + rel;
    DIR* d = ::opendir(path.c_str());
    if (!d) return;
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
        std::string r = rel.empty() ? n : rel + "/" + n;
        struct stat st {};
        if (::lstat((root + "/" + r).c_str(), &st) != 0) continue;
        h.update(r + "\n" + std::to_string(st.st_mode) + "\n");
        if (S_ISDIR(st.st_mode)) {
            digest_dir(root, r, h);
        } else if (S_ISLNK(st.st_mode)) {
            char buf[4096];
            ssize_t n2 = ::readlink((root + "/" + r).c_str(), buf, sizeof buf);
            if (n2 > 0) h.update(buf, static_cast<size_t>(n2));
        } else {
            h.update(read_file(root + "/" + r));
        }
    }
}

}  // namespace

std::string tree_digest(const std::string& dir) {
    hash::Sha256 h;
    digest_dir(dir, "", h);
    return hash::to_hex(h.finish());
}

std::vector<std::string> invariant_violations(const Json& state, const std::string& reported,
                                              bool allow_none) {
    std::vector<std::string> v;
    if (!state.ok()) return {"state is not JSON"};
    std::string active = state.str("active.state");
    std::string current = state.str("currentVersion");
    if (active == "none") {
        if (!allow_none) v.push_back("1: current is absent");
    } else if (active != "intact") {
        v.push_back("1: current is " + active + ": " + state.str("active.reason"));
    }
    if (active == "intact" && !state.bool_map("versions")[current]) {
        v.push_back("1: versions/" + current + " not intact in the listing");
    }
    if (state.array_size("staging") != 0) v.push_back("2: staging entries remain");
    if (state.array_size("temps") != 0) v.push_back("2: temp files remain");
    if (state.str("journal") != "absent")
        v.push_back("2: journal remains: " + state.str("journal"));
    if (reported != current) {
        v.push_back("4: reported active " + reported + " but current names " + current);
    }
    return v;
}

}  // namespace myr::test
