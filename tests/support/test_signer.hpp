// The offline Sigstore signer of the installer's tests (tests/interop/sigstore-make.mjs): a real
// signer (@sigstore/sign) against in-process Fulcio and Rekor, under a private trust root.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "harness.hpp"

namespace myr::test {

// The identity the signer's certificates carry.
inline const char* const kSignerSubject =
    "https://github.com/example/release/.github/workflows/release.yml@refs/tags/v1.0.0";
inline const char* const kSignerIssuer = "https://token.actions.githubusercontent.com";

// Why the signer cannot run here, or "".
inline std::string signer_unavailable() {
    if (run({"node", "--version"}, std::chrono::seconds(30)).exit_code != 0) {
        return "node is not installed";
    }
    if (!exists(source_dir() + "/tests/interop/node_modules/@sigstore/sign")) {
        return "tests/interop/node_modules is missing (npm install --no-audit --no-fund there)";
    }
    return "";
}

// Signs `files` into `out`: out/trusted_root.json, out/signed/<file name>.json for each, and the
// cases of the first one under out/cases/.
inline void sign_artifacts(const std::string& out, const std::vector<std::string>& files) {
    std::vector<std::string> argv{"node", source_dir() + "/tests/interop/sigstore-make.mjs", out};
    argv.insert(argv.end(), files.begin(), files.end());
    RunResult made = run(argv, std::chrono::seconds(300));
    REQUIRE_MESSAGE(made.exit_code == 0, "sigstore-make.mjs: " << made.err);
}

}  // namespace myr::test
