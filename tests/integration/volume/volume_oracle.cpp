#include "volume_oracle.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "harness.hpp"

namespace myr::test::oracle {
namespace {

// clang-format off
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};
// clang-format on

constexpr uint32_t rotr(uint32_t x, int n) {
    return (x >> n) | (x << (32 - n));
}

std::string type_name(mode_t m) {
    if (S_ISREG(m)) return "file";
    if (S_ISDIR(m)) return "dir";
    if (S_ISLNK(m)) return "symlink";
    return "special";
}

std::string read_all(const std::string& path) {
    std::string out;
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
}

void walk(const std::string& root, const std::string& rel, Tree& out) {
    for (const std::string& n : entries(rel.empty() ? root : root + "/" + rel)) {
        std::string r = rel.empty() ? n : rel + "/" + n;
        std::string fp = fingerprint(root + "/" + r);
        out[r] = fp;
        if (fp.rfind("dir ", 0) == 0) walk(root, r, out);
    }
}

bool is_lower_hex(const std::string& s, size_t len) {
    return s.size() == len && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

// The marker's fields, each with the type volume.md gives it.
struct Marker {
    std::string version, binary, sha256, source, previous, installed_at;
    int64_t size = -1;
};

std::vector<std::string> parse_marker(const std::string& text, Marker* m) {
    std::vector<std::string> bad;
    json_object* root = json_tokener_parse(text.c_str());
    if (root == nullptr || !json_object_is_type(root, json_type_object)) {
        if (root) json_object_put(root);
        return {"is not a JSON object"};
    }
    auto str = [&](const char* key, std::string* into) {
        json_object* v = nullptr;
        if (!json_object_object_get_ex(root, key, &v) ||
            !json_object_is_type(v, json_type_string)) {
            bad.push_back(std::string(key) + " missing or not a string");
            return;
        }
        *into = json_object_get_string(v);
    };
    str("version", &m->version);
    str("binary", &m->binary);
    str("sha256", &m->sha256);
    str("source", &m->source);
    str("previousVersion", &m->previous);
    str("installedAt", &m->installed_at);
    json_object* size = nullptr;
    if (!json_object_object_get_ex(root, "size", &size) ||
        !json_object_is_type(size, json_type_int)) {
        bad.push_back("size missing or not an integer");
    } else {
        m->size = json_object_get_int64(size);
    }
    json_object_put(root);
    if (!m->sha256.empty() && !is_lower_hex(m->sha256, 64)) bad.push_back("sha256 is not 64 hex");
    if (m->source != "image" && m->source != "update") bad.push_back("source '" + m->source + "'");
    return bad;
}

// A version directory: real, exactly marker + binary, the marker parses and names it, the binary
// has the marker's size. With `hash`, the binary's SHA-256 must equal the marker's (and `want`
// when given). Returns what is wrong, each line prefixed with `versions/<v>`.
std::vector<std::string> version_problems(const Layout& l, const std::string& v, bool hash,
                                          const std::string& want = "") {
    const std::string where = "versions/" + v;
    const std::string dir = l.install + "/" + where;
    std::vector<std::string> bad;
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) return {where + ": missing"};
    if (!S_ISDIR(st.st_mode)) return {where + ": a " + type_name(st.st_mode) + ", not a directory"};
    for (const std::string& n : entries(dir)) {
        if (n != "install.json" && n != l.binary) bad.push_back(where + ": unexpected entry " + n);
    }
    const std::string marker_path = dir + "/install.json";
    if (::lstat(marker_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        bad.push_back(where + "/install.json: missing or not a regular file");
        return bad;
    }
    Marker m;
    for (const std::string& b : parse_marker(read_all(marker_path), &m)) {
        bad.push_back(where + "/install.json: " + b);
    }
    if (m.version != v) bad.push_back(where + "/install.json: names version '" + m.version + "'");
    if (m.binary != l.binary)
        bad.push_back(where + "/install.json: names binary '" + m.binary + "'");
    const std::string bin = dir + "/" + l.binary;
    if (::lstat(bin.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        bad.push_back(where + "/" + l.binary + ": missing or not a regular file");
        return bad;
    }
    if ((st.st_mode & S_IXUSR) == 0) bad.push_back(where + "/" + l.binary + ": not executable");
    if (st.st_size != m.size) {
        bad.push_back(where + "/" + l.binary + ": " + std::to_string(st.st_size) +
                      " bytes, marker says " + std::to_string(m.size));
    }
    if (!hash) return bad;
    std::string actual = sha256_file_hex(bin);
    if (actual != m.sha256) bad.push_back(where + "/" + l.binary + ": SHA-256 differs from marker");
    if (!want.empty() && actual != want) {
        bad.push_back(where + "/" + l.binary + ": not the expected bytes (" + actual.substr(0, 12) +
                      "…, want " + want.substr(0, 12) + "…)");
    }
    return bad;
}

}  // namespace

Sha256::Sha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::block(const uint8_t* p) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
        w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) |
               (uint32_t(p[4 * i + 2]) << 8) | uint32_t(p[4 * i + 3]);
    }
    for (int i = 16; i < 64; ++i) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
        uint32_t t1 =
            h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
}

void Sha256::update(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += n;
    if (used_ > 0) {
        size_t take = std::min(n, sizeof buf_ - used_);
        std::memcpy(buf_ + used_, p, take);
        used_ += take;
        p += take;
        n -= take;
        if (used_ < sizeof buf_) return;
        block(buf_);
        used_ = 0;
    }
    for (; n >= 64; p += 64, n -= 64) block(p);
    std::memcpy(buf_, p, n);
    used_ = n;
}

std::string Sha256::hex() {
    const uint64_t bits = total_ * 8;
    const uint8_t one = 0x80, zero = 0;
    update(&one, 1);
    while (used_ != 56) update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    update(len, 8);
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (uint32_t word : h_) {
        for (int shift = 28; shift >= 0; shift -= 4) out += digits[(word >> shift) & 15];
    }
    return out;
}

std::string sha256_hex(std::string_view data) {
    Sha256 h;
    h.update(data.data(), data.size());
    return h.hex();
}

std::string sha256_file_hex(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return "";
    Sha256 h;
    static thread_local char buf[1 << 17];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) h.update(buf, static_cast<size_t>(n));
    ::close(fd);
    return n < 0 ? "" : h.hex();
}

std::string fingerprint(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return "";
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    std::string fp = type_name(st.st_mode) + " " + mode;
    if (S_ISREG(st.st_mode)) fp += " " + read_all(path);
    if (S_ISLNK(st.st_mode)) fp += " -> " + link_target(path);
    return fp;
}

Tree snapshot(const std::string& dir) {
    Tree out;
    out["."] = fingerprint(dir);
    walk(dir, "", out);
    return out;
}

std::vector<std::string> differences(const Tree& before, const Tree& after,
                                     const std::string& where) {
    std::vector<std::string> out;
    for (const auto& [name, fp] : before) {
        auto it = after.find(name);
        if (it == after.end()) {
            out.push_back(where + "/" + name + ": removed");
        } else if (it->second != fp) {
            out.push_back(where + "/" + name + ": changed");
        }
    }
    for (const auto& [name, fp] : after) {
        if (!before.count(name)) out.push_back(where + "/" + name + ": added");
    }
    return out;
}

std::vector<std::string> entries(const std::string& dir) {
    return myr::test::list_dir(dir);
}

std::string link_target(const std::string& path) {
    char buf[4096];
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

std::vector<std::string> violations(const Layout& l, const Expected& e) {
    std::vector<std::string> bad;
    auto add = [&bad](const std::string& invariant, const std::vector<std::string>& lines) {
        for (const std::string& s : lines) bad.push_back(invariant + ": " + s);
    };

    // 1. current and the active version.
    const std::string current = l.install + "/current";
    struct stat st {};
    bool has_current = ::lstat(current.c_str(), &st) == 0;
    if (e.version.empty()) {
        if (has_current) bad.push_back("1: current exists, want none");
    } else if (!has_current) {
        bad.push_back("1: current is absent, want versions/" + e.version);
    } else if (!S_ISLNK(st.st_mode)) {
        bad.push_back("1: current is a " + type_name(st.st_mode) + ", not a symlink");
    } else if (link_target(current) != "versions/" + e.version) {
        bad.push_back("1: current -> '" + link_target(current) + "', want versions/" + e.version);
    }
    if (!e.version.empty()) add("1", version_problems(l, e.version, true, e.sha256));
    for (const std::string& k : e.keep) {
        if (k != e.version) add("1 (kept)", version_problems(l, k, true));
    }
    // Every other version directory is complete too: one appears by a rename of a complete
    // directory and leaves by a rename into .staging, never half-written or half-deleted.
    for (const std::string& v : entries(l.install + "/versions")) {
        if (v == e.version || e.keep.count(v) || e.broken_ok.count(v)) continue;
        add("2", version_problems(l, v, false));
    }

    // 2. Nothing in flight is left behind.
    for (const std::string& n : entries(l.install)) {
        if (n != "current" && n != "versions" && n != ".staging") {
            bad.push_back("2: unexpected entry in the install directory: " + n);
        }
    }
    for (const std::string& n : entries(l.install + "/.staging")) {
        bad.push_back("2: .staging/" + n + " remains");
    }
    bool aside_seen = false;
    for (const std::string& n : entries(l.state)) {
        if (n == ".lock") {
            continue;  // the writer lock, kept by every start (statedir/writer_lock.hpp)
        } else if (n == "journal.json") {
            bad.push_back("2: journal.json remains");
        } else if (n == "spool") {
            for (const std::string& s : entries(l.state + "/spool")) {
                bad.push_back("2: spool/" + s + " remains");
            }
        } else if (n.rfind("journal.json.corrupt-", 0) == 0 && !e.aside.empty() && !aside_seen) {
            aside_seen = true;
            if (fingerprint(l.state + "/" + n) != e.aside) {
                bad.push_back("2: " + n + " is not the journal that was moved aside");
            }
        } else {
            bad.push_back("2: unexpected entry in the state directory: " + n);
        }
    }
    if (!e.aside.empty() && !aside_seen) bad.push_back("2: the corrupt journal was not kept aside");

    // 4. What the restart reported.
    if (e.reported != e.version) {
        bad.push_back("4: reported active '" + e.reported + "', want '" + e.version + "'");
    }
    return bad;
}

}  // namespace myr::test::oracle
