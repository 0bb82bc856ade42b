// `{version}` templates (update.signerIdentity's certificate fields).
#include "version/template.hpp"

#include <doctest/doctest.h>

using namespace myr::version;

TEST_CASE("template: every {version} is replaced, the rest kept as written") {
    CHECK(expand_template("refs/tags/v{version}", "0.158.0").value() == "refs/tags/v0.158.0");
    CHECK(expand_template("a{version}b{version}", "1.0.0-rc.1").value() ==
          "a1.0.0-rc.1b1.0.0-rc.1");
    CHECK(expand_template("Release Contrib", "0.158.0").value() == "Release Contrib");
    CHECK(expand_template("", "0.158.0").value() == "");
}

TEST_CASE("template: any other placeholder or a stray brace is refused, naming it") {
    auto msg = [](const char* t) {
        auto st = check_template(t);
        return st.ok() ? std::string() : st.error().message();
    };
    CHECK(msg("refs/tags/v{version}") == "");
    CHECK(msg("refs/tags/v{Version}") ==
          "unknown placeholder {Version}: only {version} is replaced");
    CHECK(msg("v{tag}-{version}") == "unknown placeholder {tag}: only {version} is replaced");
    CHECK(msg("v{version") ==
          "unknown placeholder {version (unclosed): only {version} is replaced");
    CHECK(msg("v{}") == "unknown placeholder {}: only {version} is replaced");
    CHECK(msg("v}") == "a '}' at offset 1 closes no placeholder");
    CHECK_FALSE(expand_template("{ver}", "1.0.0").ok());
}
