// Shared by the volume integration tests: a volume fixture in a TempDir, releases of fake-otelcol,
// the driver, and the invariants of volume.md.
#pragma once

#include <json-c/json.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"

namespace myr::test {

// A parsed JSON document (json-c), freed on destruction.
class Json {
  public:
    explicit Json(const std::string& text);
    ~Json();
    Json(const Json&) = delete;
    Json& operator=(const Json&) = delete;
    bool ok() const { return root_ != nullptr; }
    // "a.b.c": a string member ("" when missing or not a string; "<null>" for JSON null).
    std::string str(const std::string& path) const;
    bool boolean(const std::string& path) const;
    size_t array_size(const std::string& path) const;
    // The members of an object as name -> boolean (the "versions" map of `state`).
    std::map<std::string, bool> bool_map(const std::string& path) const;

  private:
    json_object* at(const std::string& path) const;
    json_object* root_ = nullptr;
};

struct Volume {
    TempDir tmp;
    std::string install, state_dir, supervisor, releases;
    Volume();
    // A copy of fake-otelcol with a trailer: `version=<v> <extra>`; returns its path.
    std::string release(const std::string& version, const std::string& extra = "") const;
    // Runs the driver with --install-dir/--state-dir and `args`.
    RunResult driver(const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& env = {}) const;
    // Replaces this volume and supervisor directory by copies of `other`'s (symlinks copied as
    // links), so that a crash case starts from a prepared state without re-running its setup.
    void clone_from(const Volume& other);
    // `state` as JSON text.
    std::string state() const;
};

std::string driver_bin();
std::string fake_otelcol();
std::string sha256_hex_of(const std::string& path);

// SHA-256 over every entry (relative name, type, mode, content or link target) below `dir`.
std::string tree_digest(const std::string& dir);

// Checks invariants 1, 2 and 4 of volume.md on a `state` document after recovery (and seeding):
// `current` points to an intact version (or is absent when `allow_none`), no staging, temp files or
// journal remain, and `reported` (what the operation reported as active) is what `current` names.
std::vector<std::string> invariant_violations(const Json& state, const std::string& reported,
                                              bool allow_none = false);

}  // namespace myr::test
