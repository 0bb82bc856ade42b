// `verify`: checks an artifact against a Sigstore bundle with the trusted root only (no network),
// through the same verify_bundle() the installer uses. Exit 0 verified, 1 not verified or an
// unreadable input, 2 usage error.
#include <cstdio>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "hash/sha256.hpp"
#include "verify/sigstore.hpp"
#include "verify/trusted_root.hpp"

namespace myr::cli {

int cmd_verify(const std::vector<std::string>& argv) {
    static const char* kCmd = "verify";
    auto args = Args::parse(argv, {{"artifact", "bundle", "trusted-root", "subject",
                                    "subject-regexp", "issuer", "min-timestamps"},
                                   {},
                                   {}});
    if (!args) return usage_error(kCmd, args.error().message());
    if (args->flag("help")) return print_help(kCmd);
    if (!args->positional().empty()) return usage_error(kCmd, "takes no positional arguments");
    for (const char* required : {"artifact", "bundle", "trusted-root", "issuer"}) {
        if (!args->get(required) || args->get(required)->empty()) {
            return usage_error(kCmd, std::string("--") + required + " is required");
        }
    }
    verify::Identity identity;
    identity.subject = args->get("subject").value_or("");
    identity.subject_regexp = args->get("subject-regexp").value_or("");
    identity.issuer = *args->get("issuer");
    if (identity.subject.empty() == identity.subject_regexp.empty()) {
        return usage_error(kCmd, "give exactly one of --subject and --subject-regexp");
    }

    // Like update.signature.minTimestamps: verified time sources required (SETs and RFC 3161).
    verify::Options options;
    if (auto n = args->get("min-timestamps")) {
        auto count = verify::parse_decimal_count(*n);
        if (!count || *count < 1 || *count > 32) {
            return usage_error(kCmd, "--min-timestamps must be an integer from 1 to 32");
        }
        options.min_timestamps = *count;
    }

    const std::string artifact = *args->get("artifact");
    const std::string bundle_path = *args->get("bundle");
    const std::string root_path = *args->get("trusted-root");

    auto root_text = verify::read_small_file(root_path, verify::kMaxTrustedRootBytes);
    if (!root_text) return runtime_error(root_text.error().context("verify: trusted root"));
    auto bundle_text = verify::read_small_file(bundle_path, verify::kMaxBundleBytes);
    if (!bundle_text) return runtime_error(bundle_text.error().context("verify: bundle"));
    auto digest = hash::sha256_file(artifact);
    if (!digest) return runtime_error(digest.error().context("verify: artifact"));

    auto root = verify::parse_trusted_root(*root_text);
    Result<verify::Verified> result =
        root ? verify::verify_bundle(*root, *bundle_text, *digest, identity, options)
             : Result<verify::Verified>(root.fail());
    if (!result) {
        std::printf("not verified: %s\n", result.error().message().c_str());
        return 1;
    }
    std::printf("verified: %s %s %s\n", result->subject.c_str(), result->issuer.c_str(),
                hash::to_hex(*digest).c_str());
    // What the verified time rests on, one source per entry: "SET <log> <time>" and
    // "RFC 3161 <authority> <time>".
    std::string times;
    for (const verify::TimeSource& t : result->time_sources) {
        times += (times.empty() ? "" : ", ") + t.kind_name() + " " + t.authority + " " +
                 std::to_string(t.time);
    }
    std::printf("time sources: %s\n", times.c_str());
    return 0;
}

}  // namespace myr::cli
