// The schema: defaults, every key's type, every validation rule, positions and "did you mean".
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "harness.hpp"
#include "helpers.hpp"

using namespace myr;
using namespace myr::config;
using namespace myr::config::test;
using namespace std::chrono_literals;

namespace {

std::string example_path() {
    return myr::test::source_dir() + "/packaging/examples/updater.yaml";
}

const std::string kContainer =
    "server:\n"
    "  endpoint: wss://myriarchd.example:4320/v1/opamp\n" +
    kIdentity +
    "container:\n"
    "  supervisorCommand: [/usr/local/bin/opampsupervisor]\n"
    "  seedBinary: /shared/otelcol-contrib\n";

}  // namespace

TEST_CASE("config: the packaged example loads cleanly in container mode with its values") {
    LoadResult r = load_file(example_path(), Mode::container);
    INFO(dump(r));
    REQUIRE(r.config.has_value());
    const Config& c = *r.config;
    CHECK(c.path == example_path());
    REQUIRE(c.server.endpoint.has_value());
    CHECK(c.server.endpoint->scheme == "wss");
    CHECK(c.server.endpoint->host == "myriarchd.myriarch.svc");
    CHECK(c.server.endpoint->port == 4320);
    CHECK(c.server.endpoint->path == "/v1/opamp");
    CHECK(c.server.ca_file == "/etc/myriarch/ca.pem");
    CHECK(c.server.enrollment_token_file == "/var/run/secrets/myriarch/enrollment-token");
    CHECK(c.update.signer_identity.subject_regexp.rfind("^https://github\\.com/", 0) == 0);
    REQUIRE(c.update.minimum_version.has_value());
    CHECK(c.update.minimum_version->text == "0.110.0");
    REQUIRE(c.container.has_value());
    CHECK(c.container->supervisor_command.size() == 2);
    CHECK(c.container->seed_binary == "/shared/otelcol-contrib");
    REQUIRE(c.container->health_listen.has_value());
    CHECK(c.container->health_listen->str() == "0.0.0.0:13135");
}

TEST_CASE("config: omitted keys take the documented defaults") {
    Config c = expect_ok(kIdentity);
    CHECK(c.path == "t.yaml");
    CHECK_FALSE(c.server.endpoint.has_value());
    CHECK(c.server.allow_insecure_transport == false);
    CHECK(c.server.ca_file.empty());
    CHECK(c.server.enrollment_token_file.empty());
    CHECK(c.server.enrollment_token_env.empty());
    CHECK(c.server.host_name.empty());
    CHECK(c.server.heartbeat_interval == 30s);
    CHECK(c.update.require_signature == true);
    CHECK(c.update.trusted_root_file == "/etc/myriarch/trusted_root.json");
    CHECK(c.update.signer_identity.issuer == "https://token.actions.githubusercontent.com");
    CHECK(c.update.signature.min_timestamps == 1);
    CHECK(c.update.allowed_download_prefixes.empty());
    CHECK_FALSE(c.update.minimum_version.has_value());
    CHECK(c.update.allow_downgrade == false);
    CHECK(c.update.max_minor_skew == 1);
    CHECK(c.update.max_artifact_size == (1ULL << 30));
    CHECK_FALSE(c.update.download_timeout.has_value());
    // 5 min + 1 GiB at 64 KiB/s.
    CHECK(effective_download_timeout(c.update) == 5min + 16384s);
    CHECK(c.update.health_timeout == 2min);
    CHECK(c.update.health_successes == 3);
    CHECK(c.update.health_interval == 2s);
    CHECK(c.update.validate_args == std::vector<std::string>{"validate", "--config={config}"});
    CHECK(c.collector.binary == "otelcol-contrib");
    CHECK(c.collector.install_dir == "/var/lib/myriarch/collector");
    CHECK(c.collector.state_dir == "/var/lib/myriarch/state");
    CHECK(c.collector.activation == Activation::symlink);
    CHECK(c.collector.keep_versions == 1);
    REQUIRE(c.collector.health_url.has_value());
    CHECK(c.collector.health_url->str() == "http://127.0.0.1:13133/");
    CHECK(c.collector.config_file == "/var/lib/otelcol/supervisor/effective.yaml");
    REQUIRE(c.supervisor.health_url.has_value());
    CHECK(c.supervisor.health_url->str() == "http://127.0.0.1:23233/health");
    CHECK(c.supervisor.storage_dir == "/var/lib/otelcol/supervisor");
    CHECK_FALSE(c.container.has_value());
    CHECK(c.log.level == log::Level::info);
    CHECK(c.log.format == log::Format::text);
}

TEST_CASE("config: a container section takes its defaults for omitted keys") {
    Config c = expect_ok(kContainer, Mode::container);
    REQUIRE(c.container.has_value());
    CHECK(c.container->seed_policy == SeedPolicy::newest);
    CHECK(c.container->stop_signal == StopSignal::term);  // the spec's default
    CHECK(c.container->stop_timeout == 30s);
    CHECK(c.container->restart_delay == 2s);
    CHECK(c.container->max_restarts == 5);
    CHECK(c.container->restart_window == 10min);
    REQUIRE(c.container->health_listen.has_value());
    CHECK(c.container->health_listen->host == "0.0.0.0");
    CHECK(c.container->health_listen->port == 13135);
}

TEST_CASE("config: an empty section means all its defaults") {
    Config c = expect_ok(kIdentity + "log:\nsupervisor:\n");
    CHECK(c.log.level == log::Level::info);
    CHECK(c.supervisor.storage_dir == "/var/lib/otelcol/supervisor");
}

TEST_CASE("config: collector.configFile follows supervisor.storageDir unless given") {
    // The supervisor writes effective.yaml into its storage: a moved storage moves the default.
    Config moved = expect_ok(kIdentity + "supervisor:\n  storageDir: /data/sup\n");
    CHECK(moved.collector.config_file == "/data/sup/effective.yaml");
    Config given = expect_ok(kIdentity +
                             "supervisor:\n  storageDir: /data/sup\n"
                             "collector:\n  configFile: /etc/otelcol/config.yaml\n");
    CHECK(given.collector.config_file == "/etc/otelcol/config.yaml");
}

TEST_CASE("config: every key is parsed into its type") {
    Config c = expect_ok(
        "server:\n"
        "  endpoint: WSS://Example.COM/v1/opamp\n"
        "  allowInsecureTransport: true\n"
        "  caFile: /etc/ca.pem\n"
        "  enrollmentTokenEnv: TOKEN\n"
        "  hostName: pod-0\n"
        "  heartbeatInterval: 0\n"
        "update:\n"
        "  requireSignature: false\n"
        "  trustedRootFile: \"\"\n"
        "  signerIdentity: {subject: \"\", issuer: \"\"}\n"
        "  signature: {minTimestamps: 2}\n"
        "  allowedDownloadPrefixes: [https://dl.example/c/, \"http://[::1]:8080\"]\n"
        "  minimumVersion: v0.110.0-rc.1+b.5\n"
        "  allowDowngrade: TRUE\n"
        "  maxMinorSkew: -1\n"
        "  maxArtifactSize: 512MiB\n"
        "  healthTimeout: 1m30s\n"
        "  healthSuccesses: 7\n"
        "  healthInterval: 1.5s\n"
        "  validateArgs: [check, \"{config}\"]\n"
        "collector:\n"
        "  binary: otelcol\n"
        "  installDir: /v/c\n"
        "  stateDir: /v/s\n"
        "  activation: copy\n"
        "  keepVersions: 0\n"
        "  healthUrl: \"\"\n"
        "  configFile: /etc/c.yaml\n"
        "supervisor:\n"
        "  healthUrl: ~\n"
        "  storageDir: /var/s\n"
        "container:\n"
        "  supervisorCommand: [/bin/sup, --x]\n"
        "  seedBinary: /shared/c\n"
        "  seedPolicy: image\n"
        "  stopSignal: INT\n"
        "  stopTimeout: 500ms\n"
        "  restartDelay: 1s\n"
        "  maxRestarts: 1\n"
        "  restartWindow: 1h\n"
        "  healthListen: \"[::]:9\"\n"
        "log:\n"
        "  level: warn\n"
        "  format: json\n");
    CHECK(c.server.endpoint->scheme == "wss");
    CHECK(c.server.endpoint->host == "example.com");
    CHECK(c.server.endpoint->port == 443);
    CHECK(c.server.allow_insecure_transport);
    CHECK(c.server.ca_file == "/etc/ca.pem");
    CHECK(c.server.enrollment_token_env == "TOKEN");
    CHECK(c.server.host_name == "pod-0");
    CHECK(c.server.heartbeat_interval == 0ms);
    CHECK_FALSE(c.update.require_signature);
    CHECK(c.update.trusted_root_file.empty());
    CHECK(c.update.signer_identity.issuer.empty());
    CHECK(c.update.signature.min_timestamps == 2);
    REQUIRE(c.update.allowed_download_prefixes.size() == 2);
    CHECK(c.update.allowed_download_prefixes[0].str() == "https://dl.example/c/");
    CHECK(c.update.allowed_download_prefixes[1].host == "::1");
    CHECK(c.update.allowed_download_prefixes[1].port == 8080);
    CHECK(c.update.minimum_version->text == "v0.110.0-rc.1+b.5");
    CHECK(c.update.allow_downgrade);
    CHECK(c.update.max_minor_skew == -1);
    CHECK(c.update.max_artifact_size == 512ULL * 1024 * 1024);
    CHECK(c.update.health_timeout == 90s);
    CHECK(c.update.health_successes == 7);
    CHECK(c.update.health_interval == 1500ms);
    CHECK(c.update.validate_args == std::vector<std::string>{"check", "{config}"});
    CHECK(c.collector.binary == "otelcol");
    CHECK(c.collector.install_dir == "/v/c");
    CHECK(c.collector.state_dir == "/v/s");
    CHECK(c.collector.activation == Activation::copy);
    CHECK(c.collector.keep_versions == 0);
    CHECK_FALSE(c.collector.health_url.has_value());
    CHECK(c.collector.config_file == "/etc/c.yaml");
    CHECK_FALSE(c.supervisor.health_url.has_value());
    CHECK(c.supervisor.storage_dir == "/var/s");
    REQUIRE(c.container.has_value());
    CHECK(c.container->supervisor_command == std::vector<std::string>{"/bin/sup", "--x"});
    CHECK(c.container->seed_binary == "/shared/c");
    CHECK(c.container->seed_policy == SeedPolicy::image);
    CHECK(c.container->stop_signal == StopSignal::interrupt);
    CHECK(c.container->stop_timeout == 500ms);
    CHECK(c.container->restart_delay == 1s);
    CHECK(c.container->max_restarts == 1);
    CHECK(c.container->restart_window == 1h);
    CHECK(c.container->health_listen->host == "::");
    CHECK(c.container->health_listen->port == 9);
    CHECK(c.log.level == log::Level::warn);
    CHECK(c.log.format == log::Format::json);
}

TEST_CASE("config: downloadTimeout is a duration, or derived from maxArtifactSize when unset") {
    const std::string head = "update:\n  requireSignature: false\n  trustedRootFile: \"\"\n";
    Config set = expect_ok(head + "  downloadTimeout: 90s\n");
    REQUIRE(set.update.download_timeout.has_value());
    CHECK(*set.update.download_timeout == 90s);
    CHECK(effective_download_timeout(set.update) == 90s);
    Config derived = expect_ok(head + "  maxArtifactSize: 64MiB\n  downloadTimeout: \"\"\n");
    CHECK_FALSE(derived.update.download_timeout.has_value());
    CHECK(effective_download_timeout(derived.update) == 5min + 1024s);
}

TEST_CASE("config: startJitter is 30 s by default, 0 turns it off, an hour at most") {
    const std::string head = "update:\n  requireSignature: false\n  trustedRootFile: \"\"\n";
    CHECK(expect_ok(head).update.start_jitter == 30s);
    CHECK(expect_ok(head + "  startJitter: 0\n").update.start_jitter == 0s);
    CHECK(expect_ok(head + "  startJitter: 0s\n").update.start_jitter == 0s);
    CHECK(expect_ok(head + "  startJitter: 1h\n").update.start_jitter == 1h);
    expect_problem("update:\n  startJitter: 61m\n", "update.startJitter",
                   "must be at most 1h, got \"61m\"");
    expect_problem("update:\n  startJitter: -1s\n", "update.startJitter", "");
}

TEST_CASE("config: the trial's keys: 10m, 3 and 3 by default; 0s turns the trial off") {
    const std::string head = "update:\n  requireSignature: false\n  trustedRootFile: \"\"\n";
    Config d = expect_ok(head);
    CHECK(d.update.trial_period == 10min);
    CHECK(d.update.trial_max_restarts == 3);
    CHECK(d.update.trial_max_boots == 3);
    Config set = expect_ok(head + "  trialPeriod: 0s\n  trialMaxRestarts: 1\n  trialMaxBoots: 5\n");
    CHECK(set.update.trial_period == 0s);
    CHECK(set.update.trial_max_restarts == 1);
    CHECK(set.update.trial_max_boots == 5);
    expect_problem("update:\n  trialMaxRestarts: 0\n", "update.trialMaxRestarts", "");
    expect_problem("update:\n  trialMaxBoots: 0\n", "update.trialMaxBoots", "");
    expect_problem("update:\n  trialPeriod: soon\n", "update.trialPeriod", "invalid duration");
}

TEST_CASE("config: retryFor and quarantineFor default to 6h and 24h; 0s is allowed") {
    const std::string head = "update:\n  requireSignature: false\n  trustedRootFile: \"\"\n";
    Config defaults = expect_ok(head);
    CHECK(defaults.update.retry_for == 6h);
    CHECK(defaults.update.quarantine_for == 24h);
    Config zero = expect_ok(head + "  retryFor: 0s\n  quarantineFor: 0s\n");
    CHECK(zero.update.retry_for == 0s);
    CHECK(zero.update.quarantine_for == 0s);
}

TEST_CASE("config: healthListen \"\" disables the endpoints") {
    Config c = expect_ok(kContainer + "  healthListen: \"\"\n", Mode::container);
    CHECK_FALSE(c.container->health_listen.has_value());
}

// ---- types: every key refuses a value of the wrong kind and says what it expected ----

struct KeyCase {
    const char* section;  // "update" or "update.signerIdentity"
    const char* key;
    const char* expected;  // part of the message for a mapping given instead
};

const KeyCase kKeys[] = {
    {"server", "endpoint", "expected a URL"},
    {"server", "allowInsecureTransport", "expected true or false"},
    {"server", "caFile", "expected a string"},
    {"server", "enrollmentTokenFile", "expected a string"},
    {"server", "enrollmentTokenEnv", "expected a string"},
    {"server", "hostName", "expected a string"},
    {"server", "heartbeatInterval", "expected a duration"},
    {"network", "proxy", "expected a mapping"},
    {"network.proxy", "url", "expected a string"},
    {"network.proxy", "noProxy", "expected a list of strings"},
    {"network.proxy", "credentialsFile", "expected a string"},
    {"network.proxy", "credentialsEnv", "expected a string"},
    {"update", "requireSignature", "expected true or false"},
    {"update", "trustedRootFile", "expected an absolute path"},
    {"update", "signerIdentity", "expected a mapping"},
    {"update.signerIdentity", "subject", "expected a string"},
    {"update.signerIdentity", "subjectRegexp", "expected a string"},
    {"update.signerIdentity", "issuer", "expected a string"},
    {"update.signerIdentity", "sourceRepositoryRef", "expected a string"},
    {"update.signerIdentity", "buildConfigUri", "expected a string"},
    {"update.signerIdentity", "sourceRepositoryUri", "expected a string"},
    {"update.signerIdentity", "githubWorkflowName", "expected a string"},
    {"update.signerIdentity", "githubWorkflowRef", "expected a string"},
    {"update.signerIdentity", "githubWorkflowRepository", "expected a string"},
    {"update", "signature", "expected a mapping"},
    {"update.signature", "minTimestamps", "expected an integer"},
    {"update", "allowedDownloadPrefixes", "expected a list of URLs"},
    {"update", "minimumVersion", "expected a version"},
    {"update", "allowDowngrade", "expected true or false"},
    {"update", "maxMinorSkew", "expected an integer"},
    {"update", "maxArtifactSize", "expected a size"},
    {"update", "downloadTimeout", "expected a duration"},
    {"update", "startJitter", "expected a duration"},
    {"update", "retryFor", "expected a duration"},
    {"update", "quarantineFor", "expected a duration"},
    {"update", "healthTimeout", "expected a duration"},
    {"update", "healthSuccesses", "expected an integer"},
    {"update", "healthInterval", "expected a duration"},
    {"update", "validateArgs", "expected a list of strings"},
    {"collector", "binary", "expected a file name"},
    {"collector", "installDir", "expected an absolute path"},
    {"collector", "stateDir", "expected an absolute path"},
    {"collector", "activation", "expected symlink or copy"},
    {"collector", "keepVersions", "expected an integer"},
    {"collector", "healthUrl", "expected a URL"},
    {"collector", "configFile", "expected an absolute path"},
    {"supervisor", "healthUrl", "expected a URL"},
    {"supervisor", "storageDir", "expected an absolute path"},
    {"container", "supervisorCommand", "expected a list of strings"},
    {"container", "seedBinary", "expected an absolute path"},
    {"container", "seedPolicy", "expected newest or image"},
    {"container", "stopSignal", "expected TERM or INT"},
    {"container", "stopTimeout", "expected a duration"},
    {"container", "restartDelay", "expected a duration"},
    {"container", "maxRestarts", "expected an integer"},
    {"container", "restartWindow", "expected a duration"},
    {"container", "healthListen", "expected host:port"},
    {"log", "level", "expected debug, info, warn or error"},
    {"log", "format", "expected text or json"},
};

// `section.key: value` as YAML, nesting dotted sections.
std::string nested(const std::string& section, const std::string& key, const std::string& value) {
    std::string out, indent;
    std::stringstream ss(section);
    std::string part;
    while (std::getline(ss, part, '.')) {
        out += indent + part + ":\n";
        indent += "  ";
    }
    return out + indent + key + ": " + value + "\n";
}

TEST_CASE("config: every key refuses a value of the wrong kind and says what it expected") {
    for (const KeyCase& k : kKeys) {
        std::string path = std::string(k.section) + "." + k.key;
        CAPTURE(path);
        bool is_section = std::string(k.key) == "signerIdentity" || std::string(k.key) == "proxy" ||
                          std::string(k.key) == "signature";
        LoadResult r = load(nested(k.section, k.key, is_section ? "[1]" : "{a: 1}"));
        INFO(dump(r));
        const Problem* p = find(r, path, k.expected);
        REQUIRE(p != nullptr);
        CHECK(p->message.find(is_section ? ", got a list" : ", got a mapping") !=
              std::string::npos);
    }
}

TEST_CASE("config: every section refuses a scalar or a list") {
    for (const char* s : {"server", "update", "collector", "supervisor", "container", "log"}) {
        CAPTURE(s);
        expect_problem(std::string(s) + ": five\n", s, "expected a mapping, got \"five\"");
        expect_problem(std::string(s) + ": [1]\n", s, "expected a mapping, got a list");
    }
}

TEST_CASE("config: scalar type errors quote the value") {
    expect_problem("container:\n  maxRestarts: five\n", "container.maxRestarts",
                   "expected an integer, got \"five\"");
    expect_problem("update:\n  healthSuccesses: 2.5\n", "update.healthSuccesses",
                   "expected an integer, got \"2.5\"");
    expect_problem("update:\n  healthSuccesses: \"3\"\n", "update.healthSuccesses",
                   "expected an integer, got \"3\"");
    expect_problem("update:\n  allowDowngrade: maybe\n", "update.allowDowngrade",
                   "expected true or false, got \"maybe\"");
    expect_problem("update:\n  allowDowngrade: yes\n", "update.allowDowngrade",
                   "YAML 1.1 spellings are not booleans");
    expect_problem("update:\n  allowDowngrade: \"true\"\n", "update.allowDowngrade",
                   "expected true or false");
    expect_problem("update:\n  allowDowngrade:\n", "update.allowDowngrade",
                   "expected true or false, got an empty value");
    expect_problem("update:\n  healthTimeout: soon\n", "update.healthTimeout",
                   "invalid duration \"soon\"");
    expect_problem("update:\n  healthTimeout: 30\n", "update.healthTimeout", "needs a unit");
    expect_problem("update:\n  healthTimeout: 1.5us\n", "update.healthTimeout", "unknown unit");
    expect_problem("update:\n  downloadTimeout: 0\n", "update.downloadTimeout",
                   "must be positive, got \"0\"");
    expect_problem("update:\n  downloadTimeout: -5s\n", "update.downloadTimeout", "");
    expect_problem("update:\n  maxArtifactSize: big\n", "update.maxArtifactSize", "invalid size");
    expect_problem("update:\n  maxArtifactSize: 1PB\n", "update.maxArtifactSize", "unknown unit");
    expect_problem("update:\n  validateArgs: [a, [b]]\n", "update.validateArgs[1]",
                   "expected a string, got a list");
    expect_problem("update:\n  validateArgs: validate\n", "update.validateArgs",
                   "expected a list of strings, got \"validate\"");
    expect_problem("collector:\n  activation: hardlink\n", "collector.activation",
                   "must be symlink or copy, got \"hardlink\"");
    expect_problem("container:\n  seedPolicy: oldest\n", "container.seedPolicy",
                   "must be newest or image, got \"oldest\"");
    expect_problem("log:\n  level: verbose\n", "log.level",
                   "must be debug, info, warn or error, got \"verbose\"");
    expect_problem("log:\n  level: INFO\n", "log.level", "got \"INFO\"");
    expect_problem("log:\n  format: xml\n", "log.format", "must be text or json, got \"xml\"");
}

TEST_CASE("config: negative and overflowing numbers are refused") {
    expect_problem("update:\n  maxMinorSkew: -2\n", "update.maxMinorSkew",
                   "must be at least -1, got -2");
    expect_problem("update:\n  maxMinorSkew: 1001\n", "update.maxMinorSkew",
                   "\"1001\" is too large (at most 1000)");
    expect_problem("update:\n  maxMinorSkew: -99999999999\n", "update.maxMinorSkew",
                   "must be at least -1, got -99999999999");
    expect_problem("update:\n  signature: {minTimestamps: 0}\n", "update.signature.minTimestamps",
                   "must be at least 1, got 0");
    expect_problem("update:\n  signature: {minTimestamps: 33}\n", "update.signature.minTimestamps",
                   "\"33\" is too large (at most 32)");
    expect_problem("update:\n  healthSuccesses: -1\n", "update.healthSuccesses",
                   "must be at least 1, got -1");
    expect_problem("collector:\n  keepVersions: -1\n", "collector.keepVersions",
                   "must be at least 0, got -1");
    expect_problem("collector:\n  keepVersions: 4294967296\n", "collector.keepVersions",
                   "too large");
    expect_problem("collector:\n  keepVersions: 99999999999999999999999999\n",
                   "collector.keepVersions", "too large");
    expect_problem("update:\n  maxArtifactSize: 99999999999999999999\n", "update.maxArtifactSize",
                   "too large");
    expect_problem("update:\n  maxArtifactSize: 17179869184GiB\n", "update.maxArtifactSize",
                   "too large");
    expect_problem("update:\n  maxArtifactSize: -1\n", "update.maxArtifactSize", "invalid size");
    expect_problem("update:\n  maxArtifactSize: 0\n", "update.maxArtifactSize", "at least 1B");
    expect_problem("update:\n  healthTimeout: 9999999999999999h\n", "update.healthTimeout",
                   "too large");
    expect_problem("update:\n  healthTimeout: -2m\n", "update.healthTimeout", "must be positive");
    expect_problem("server:\n  heartbeatInterval: -1s\n", "server.heartbeatInterval",
                   "must not be negative");
    CHECK(expect_ok(kIdentity + "collector:\n  keepVersions: 100\n").collector.keep_versions ==
          100u);
    expect_problem("collector:\n  keepVersions: 4294967295\n", "collector.keepVersions",
                   "too large (at most 100)");
}

// ---- validation rules ----

TEST_CASE("config: container rules apply in container mode") {
    expect_problem(kIdentity, "container", "section is required by the container command",
                   Mode::container);
    expect_problem(kIdentity + "container:\n  seedBinary: /s\n", "container.supervisorCommand",
                   "is required", Mode::container);
    expect_problem(kIdentity + "container:\n  supervisorCommand: []\n  seedBinary: /s\n",
                   "container.supervisorCommand", "is required", Mode::container);
    expect_problem(kIdentity + "container:\n  supervisorCommand: [\"\"]\n  seedBinary: /s\n",
                   "container.supervisorCommand", "must not be empty", Mode::container);
    expect_problem(kIdentity + "container:\n  supervisorCommand: [/a]\n", "container.seedBinary",
                   "is required", Mode::container);
    expect_problem(kContainer + "collector:\n  activation: copy\n", "collector.activation",
                   "must be symlink for the container command", Mode::container);
    expect_problem(kIdentity + "container:\n  supervisorCommand: [/a]\n  seedBinary: /s\n",
                   "server.endpoint", "is required by the container command", Mode::container);
    expect_problem(kIdentity, "server.endpoint", "is required by the run command", Mode::run);
}

TEST_CASE("config: in mode any a container section is type-checked but nothing is required") {
    Config c = expect_ok(kIdentity +
                         "container:\n  maxRestarts: 2\ncollector:\n  activation: "
                         "copy\n");
    REQUIRE(c.container.has_value());
    CHECK(c.container->supervisor_command.empty());
    CHECK(c.container->max_restarts == 2);
    expect_problem(kIdentity + "container:\n  maxRestart: 2\n", "container.maxRestart",
                   "did you mean \"maxRestarts\"?");
    expect_problem(kIdentity + "container:\n  maxRestarts: x\n", "container.maxRestarts",
                   "expected an integer");
}

TEST_CASE("config: container values are checked") {
    expect_problem(kContainer + "  maxRestarts: 0\n", "container.maxRestarts",
                   "must be at least 1, got 0", Mode::container);
    for (const char* k : {"stopTimeout", "restartDelay", "restartWindow"}) {
        CAPTURE(k);
        expect_problem(kContainer + "  " + k + ": 0s\n", std::string("container.") + k,
                       "must be positive", Mode::container);
        expect_problem(kContainer + "  " + k + ": -1s\n", std::string("container.") + k,
                       "must be positive", Mode::container);
    }
    expect_problem("container:\n  seedBinary: shared/otelcol\n", "container.seedBinary",
                   "must be an absolute path, got \"shared/otelcol\"");
    expect_problem(kContainer + "  healthListen: \"13135\"\n", "container.healthListen",
                   "expected host:port");
    expect_problem(kContainer + "  healthListen: \"::13135\"\n", "container.healthListen",
                   "needs brackets");
    expect_problem(kContainer + "  healthListen: \"0.0.0.0:0\"\n", "container.healthListen",
                   "out of range 1..65535");
    expect_problem(kContainer + "  healthListen: \"0.0.0.0:65536\"\n", "container.healthListen",
                   "out of range 1..65535");
    expect_problem(kContainer + "  healthListen: \"1.2.3:80\"\n", "container.healthListen",
                   "not an IP address or a host name");
    expect_problem(kContainer + "  healthListen: \"pod_0/x:80\"\n", "container.healthListen",
                   "not an IP address or a host name");
    // The spec's healthListen is host:port: a name is accepted and resolved when listening.
    CHECK(expect_ok(kContainer + "  healthListen: \"localhost:13135\"\n", Mode::container)
              .container->health_listen->host == "localhost");
    expect_problem(kContainer + "  healthListen: \"[::1:80\"\n", "container.healthListen",
                   "unclosed");
    CHECK(expect_ok(kContainer + "  healthListen: \"127.0.0.1:65535\"\n", Mode::container)
              .container->health_listen->port == 65535);
}

TEST_CASE("config: paths in collector, supervisor, trustedRootFile and seedBinary are absolute") {
    for (const char* k : {"collector.installDir", "collector.stateDir", "collector.configFile",
                          "supervisor.storageDir", "update.trustedRootFile"}) {
        std::string s(k);
        std::string section = s.substr(0, s.find('.')), key = s.substr(s.find('.') + 1);
        CAPTURE(k);
        expect_problem(nested(section, key, "relative/path"), k,
                       "must be an absolute path, got \"relative/path\"");
    }
    expect_problem("collector:\n  installDir: \"\"\n", "collector.installDir",
                   "must be an absolute path");
    expect_problem("collector:\n  binary: bin/otelcol\n", "collector.binary",
                   "must be a plain file name");
    expect_problem("collector:\n  binary: ..\n", "collector.binary", "must be a plain file name");
}

TEST_CASE("config: server.endpoint must be a ws:// or wss:// URL") {
    expect_problem("server:\n  endpoint: https://h/v1/opamp\n", "server.endpoint",
                   "must be a ws:// or wss:// URL");
    expect_problem("server:\n  endpoint: myriarchd:4320\n", "server.endpoint", "not a URL");
    expect_problem("server:\n  endpoint: ws://user@127.0.0.1/\n", "server.endpoint",
                   "user information");
    expect_problem("server:\n  endpoint: ws://127.0.0.1:0/\n", "server.endpoint", "out of range");
    expect_problem("server:\n  endpoint: ws://127.0.0.1:70000/\n", "server.endpoint",
                   "out of range");
    expect_problem("server:\n  endpoint: \"ws:///path\"\n", "server.endpoint", "no host");
    expect_problem("server:\n  endpoint: \"ws://h/a b\"\n", "server.endpoint", "space");
}

TEST_CASE("config: ws:// to a host that is not loopback needs allowInsecureTransport") {
    expect_problem(kIdentity + "server:\n  endpoint: ws://myriarchd:4320/v1/opamp\n",
                   "server.endpoint", "allowInsecureTransport");
    expect_problem(kIdentity + "server:\n  endpoint: ws://128.0.0.1/\n", "server.endpoint",
                   "allowInsecureTransport");
    for (const char* host : {"127.0.0.1", "127.255.0.9", "[::1]", "localhost", "LOCALHOST"}) {
        CAPTURE(host);
        expect_ok(kIdentity + "server:\n  endpoint: ws://" + host + ":4320/v1/opamp\n");
    }
    expect_ok(kIdentity +
              "server:\n  endpoint: ws://myriarchd:4320/\n  allowInsecureTransport: true\n");
    expect_ok(kIdentity + "server:\n  endpoint: wss://myriarchd:4320/\n");
}

TEST_CASE("config: at most one of enrollmentTokenFile and enrollmentTokenEnv") {
    expect_problem(kIdentity + "server:\n  enrollmentTokenFile: /t\n  enrollmentTokenEnv: T\n",
                   "server.enrollmentTokenEnv", "at most one");
    expect_ok(kIdentity + "server:\n  enrollmentTokenFile: /t\n");
    expect_ok(kIdentity + "server:\n  enrollmentTokenEnv: T\n");
}

TEST_CASE("config: requireSignature needs a trusted root and exactly one identity with issuer") {
    expect_problem("update:\n  requireSignature: true\n", "update.signerIdentity",
                   "needs subject or subjectRegexp");
    expect_problem(kIdentity + "  trustedRootFile: \"\"\n", "update.trustedRootFile",
                   "is required when requireSignature is true");
    expect_problem(kIdentity + "    subjectRegexp: \"^a$\"\n",
                   "update.signerIdentity.subjectRegexp", "exactly one of subject");
    expect_problem(kIdentity + "    issuer: \"\"\n", "update.signerIdentity.issuer",
                   "must not be empty");
    Config c = expect_ok("update:\n  requireSignature: false\n  trustedRootFile: \"\"\n");
    CHECK_FALSE(c.update.require_signature);
}

TEST_CASE("config: subjectRegexp must compile and be anchored") {
    auto with = [](const std::string& re) {
        return "update:\n  signerIdentity:\n    subjectRegexp: '" + re + "'\n";
    };
    const std::string key = "update.signerIdentity.subjectRegexp";
    expect_problem(with("^abc("), key, "not a valid ECMAScript regular expression");
    expect_problem(with("abc$"), key, "must be anchored");
    expect_problem(with("^abc"), key, "must be anchored");
    expect_problem(with("^abc\\$"), key, "must be anchored");
    expect_problem(with("^" + std::string(2000, 'a') + "$"), key, "longer than");
    expect_problem(with("^a{1000}{1000}$"), key, "repetition counts expand");
    expect_problem(with("^[a-z]{99999}$"), key, "repetition counts expand");
    expect_problem(with("^(x(a{200})){200}$"), key, "repetition counts expand");
    expect_problem(with("^a{20001,}$"), key, "repetition counts expand");
    expect_ok(with("^[a-z]{1,64}\\.(b{2}){3}[{]x$"));
    Config c = expect_ok(with("^https://x\\.y/.*@refs/tags/v.*\\\\$"));
    CHECK(c.update.signer_identity.subject_regexp == "^https://x\\.y/.*@refs/tags/v.*\\\\$");
    // Checked even when signatures are off: the value would be used as soon as they are on.
    expect_problem(
        "update:\n  requireSignature: false\n  signerIdentity:\n    subjectRegexp: "
        "'a'\n",
        key, "must be anchored");
}

TEST_CASE("config: signerIdentity's certificate fields are templates with {version} only") {
    Config c =
        expect_ok(kIdentity +
                  "    sourceRepositoryRef: refs/tags/v{version}\n"
                  "    buildConfigUri: https://g/r/.github/workflows/c.yaml@refs/tags/v{version}\n"
                  "    sourceRepositoryUri: https://g/r\n"
                  "    githubWorkflowName: Release Contrib\n"
                  "    githubWorkflowRef: refs/tags/v{version}\n"
                  "    githubWorkflowRepository: o/r\n");
    const SignerIdentity& si = c.update.signer_identity;
    CHECK(si.source_repository_ref == "refs/tags/v{version}");
    CHECK(si.build_config_uri == "https://g/r/.github/workflows/c.yaml@refs/tags/v{version}");
    CHECK(si.source_repository_uri == "https://g/r");
    CHECK(si.github_workflow_name == "Release Contrib");
    CHECK(si.github_workflow_ref == "refs/tags/v{version}");
    CHECK(si.github_workflow_repository == "o/r");
    expect_problem(kIdentity + "    sourceRepositoryRef: refs/tags/v{Version}\n",
                   "update.signerIdentity.sourceRepositoryRef",
                   "unknown placeholder {Version}: only {version} is replaced");
    expect_problem(kIdentity + "    buildConfigUri: 'x@{tag}'\n",
                   "update.signerIdentity.buildConfigUri", "unknown placeholder {tag}");
    expect_problem(kIdentity + "    githubWorkflowRef: 'refs/tags/v{version'\n",
                   "update.signerIdentity.githubWorkflowRef", "(unclosed)");
}

TEST_CASE("config: health rounds need at least one success and an interval below the timeout") {
    expect_problem(kIdentity + "  healthSuccesses: 0\n", "update.healthSuccesses",
                   "must be at least 1");
    expect_problem(kIdentity + "  healthInterval: 2m\n", "update.healthInterval",
                   "must be shorter than healthTimeout");
    expect_problem(kIdentity + "  healthTimeout: 1s\n", "update.healthTimeout",
                   "must be shorter than healthTimeout");
    expect_problem(kIdentity + "  healthInterval: 0s\n", "update.healthInterval",
                   "must be positive");
    expect_ok(kIdentity + "  healthInterval: 119999ms\n");
}

TEST_CASE("config: minimumVersion must be a semantic version") {
    for (const char* v : {"1.0", "0.116", "01.2.3", "1.2.3 ", "latest", "1.2.3-", "v"}) {
        CAPTURE(v);
        expect_problem(kIdentity + "  minimumVersion: \"" + v + "\"\n", "update.minimumVersion",
                       "is not a semantic version");
    }
    for (const char* v : {"0.116.0", "v0.116.0", "1.0.0-rc.1", "1.0.0-rc.1+build.5", "1.0.0+b"}) {
        CAPTURE(v);
        CHECK(expect_ok(kIdentity + "  minimumVersion: " + v + "\n").update.minimum_version->text ==
              v);
    }
    CHECK_FALSE(expect_ok(kIdentity + "  minimumVersion: \"\"\n").update.minimum_version);
}

TEST_CASE("config: allowedDownloadPrefixes are http(s) URLs") {
    expect_problem(kIdentity + "  allowedDownloadPrefixes: [wss://h/]\n",
                   "update.allowedDownloadPrefixes[0]", "must be a http:// or https:// URL");
    expect_problem(kIdentity + "  allowedDownloadPrefixes: [https://h/, \"\"]\n",
                   "update.allowedDownloadPrefixes[1]", "must be a http:// or https:// URL");
    expect_problem(kIdentity + "  allowedDownloadPrefixes: [/artifacts/]\n",
                   "update.allowedDownloadPrefixes[0]", "not a URL");
}

TEST_CASE("config: an http:// download prefix needs a loopback endpoint or insecure transport") {
    const std::string remote = "server:\n  endpoint: wss://myriarchd.example:4320/v1/opamp\n";
    const std::string prefixes =
        "  allowedDownloadPrefixes: [https://dl.example/c/, http://mirror.example/otelcol/]\n";
    expect_problem(remote + kIdentity + prefixes, "update.allowedDownloadPrefixes[1]",
                   "http:// downloads are refused while server.endpoint is not on a loopback host");
    expect_ok(
        "server:\n  endpoint: wss://myriarchd.example:4320/v1/opamp\n"
        "  allowInsecureTransport: true\n" +
        kIdentity + prefixes);
    expect_ok("server:\n  endpoint: ws://127.0.0.1:4320/v1/opamp\n" + kIdentity + prefixes);
    // https:// prefixes alone are always fine.
    expect_ok(remote + kIdentity + "  allowedDownloadPrefixes: [https://dl.example/c/]\n");
}

TEST_CASE("config: health URLs are http(s) and \"\" means not checked") {
    expect_problem("supervisor:\n  healthUrl: ws://127.0.0.1/\n", "supervisor.healthUrl",
                   "must be a http:// or https:// URL");
    expect_problem("collector:\n  healthUrl: 127.0.0.1:13133\n", "collector.healthUrl",
                   "not a URL");
    Config c = expect_ok(kIdentity + "supervisor:\n  healthUrl: \"\"\n");
    CHECK_FALSE(c.supervisor.health_url.has_value());
    Config d = expect_ok(kIdentity + "supervisor:\n  healthUrl: http://10.0.0.1:8080/h?x=1\n");
    CHECK(d.supervisor.health_url->port == 8080);
    CHECK(d.supervisor.health_url->path == "/h?x=1");
}

TEST_CASE("config: validateArgs must not be empty") {
    expect_problem(kIdentity + "  validateArgs: []\n", "update.validateArgs",
                   "must not be an empty list");
}

// ---- unknown keys, positions, all at once ----

TEST_CASE("config: an unknown key is an error suggesting the nearest known key") {
    LoadResult r = load("update:\n  requireSignatre: false\n");
    const Problem* p = find(r, "update.requireSignatre", "did you mean \"requireSignature\"?");
    REQUIRE(p != nullptr);
    CHECK(p->str() ==
          "t.yaml:2:3: update.requireSignatre: unknown key, did you mean \"requireSignature\"?");
    expect_problem("contaner:\n  maxRestarts: 1\n", "contaner", "did you mean \"container\"?");
    expect_problem("update:\n  signerIdentity:\n    Subject: x\n", "update.signerIdentity.Subject",
                   "did you mean \"subject\"?");
    expect_problem("update:\n  healthtimeout: 1m\n", "update.healthtimeout",
                   "did you mean \"healthTimeout\"?");
    expect_problem("log:\n  colour: true\n", "log.colour",
                   "unknown key (known keys: level, format)");
}

TEST_CASE("config: a typo in requireSignature never turns verification off") {
    LoadResult r = load(kIdentity + "  requireSignatur: false\n");
    CHECK_FALSE(r.config.has_value());
}

TEST_CASE("config: keys that are not plain names are refused") {
    expect_problem("? [a, b]\n: 1\n", "", "keys must be plain names, got a list");
    expect_problem("log:\n  ? {a: 1}\n  : 1\n", "log", "keys must be plain names");
}

TEST_CASE("config: a duplicate key names both positions") {
    LoadResult r = load("container:\n  maxRestarts: 3\n  stopTimeout: 1s\n  maxRestarts: 4\n");
    const Problem* p = find(r, "container.maxRestarts", "duplicate key");
    REQUIRE(p != nullptr);
    CHECK(p->line == 4);
    CHECK(p->column == 3);
    CHECK(p->message == "duplicate key (first at line 2, column 3)");
    expect_problem("log: {}\nlog: {}\n", "log", "duplicate key (first at line 1, column 1)");
}

TEST_CASE("config: problems carry the line and column of their key") {
    LoadResult r = load(
        "# comment\n"
        "update:\n"
        "    healthSuccesses: 0\n"
        "container: {maxRestarts: 0, seedPolicy: x}\n");
    INFO(dump(r));
    const Problem* a = find(r, "update.healthSuccesses", "at least 1");
    REQUIRE(a != nullptr);
    CHECK(a->line == 3);
    CHECK(a->column == 5);
    const Problem* b = find(r, "container.maxRestarts", "at least 1");
    REQUIRE(b != nullptr);
    CHECK(b->line == 4);
    CHECK(b->column == 13);
    const Problem* c = find(r, "container.seedPolicy", "must be newest or image");
    REQUIRE(c != nullptr);
    CHECK(c->line == 4);
    CHECK(c->column == 29);
    CHECK(b->str() == "t.yaml:4:13: container.maxRestarts: must be at least 1, got 0");
    // A list item points at the item.
    LoadResult l = load("update:\n  validateArgs:\n    - ok\n    - [x]\n");
    const Problem* d = find(l, "update.validateArgs[1]", "expected a string");
    REQUIRE(d != nullptr);
    CHECK(d->line == 4);
    CHECK(d->column == 7);
}

TEST_CASE("config: a missing required key points at its section, or the top of the file") {
    LoadResult r = load("server:\n  hostName: x\n" + kIdentity + "container:\n  seedBinary: /s\n",
                        Mode::container);
    const Problem* p = find(r, "container.supervisorCommand", "is required");
    REQUIRE(p != nullptr);
    CHECK(p->line == 6);
    CHECK(p->column == 1);
    const Problem* e = find(r, "server.endpoint", "is required");
    REQUIRE(e != nullptr);
    CHECK(e->line == 1);
    LoadResult no_section = load(kIdentity, Mode::container);  // find() points into it
    const Problem* c = find(no_section, "container", "is required");
    REQUIRE(c != nullptr);
    CHECK(c->line == 1);
    CHECK(c->column == 1);
}

TEST_CASE("config: every problem is reported at once, in file order") {
    LoadResult r = load(
        "log:\n"
        "  level: loud\n"
        "server:\n"
        "  endpoint: ftp://x/\n"
        "update:\n"
        "  requireSignatre: false\n"
        "  healthSuccesses: 0\n"
        "container:\n"
        "  maxRestarts: five\n"
        "  stopTimeout: 0s\n");
    INFO(dump(r));
    CHECK_FALSE(r.config.has_value());
    REQUIRE(r.problems.size() == 7);
    CHECK(r.problems[0].key == "log.level");
    CHECK(r.problems[1].key == "server.endpoint");
    CHECK(r.problems[2].key == "update.signerIdentity");  // a rule, at the update section
    CHECK(r.problems[2].line == 5);
    CHECK(r.problems[3].key == "update.requireSignatre");
    CHECK(r.problems[4].key == "update.healthSuccesses");
    CHECK(r.problems[5].key == "container.maxRestarts");
    CHECK(r.problems[6].key == "container.stopTimeout");
    for (size_t i = 1; i < r.problems.size(); ++i) {
        CHECK(r.problems[i - 1].line <= r.problems[i].line);
    }
}

TEST_CASE("config: a key with a bad value is reported once, not again by the rules") {
    LoadResult r = load(kIdentity + "  healthInterval: soon\n");
    INFO(dump(r));
    CHECK(r.problems.size() == 1);
    LoadResult s = load(kIdentity + "  requireSignature: perhaps\n  trustedRootFile: \"\"\n");
    INFO(dump(s));
    CHECK(s.problems.size() == 1);
    LoadResult t = load("update:\n  signerIdentity: [x]\n");
    INFO(dump(t));
    CHECK(t.problems.size() == 1);
}

TEST_CASE("config: Problem::str has the F:L:C: key: message form") {
    CHECK(Problem{"F", 12, 3, "container.maxRestarts", "must be at least 1"}.str() ==
          "F:12:3: container.maxRestarts: must be at least 1");
    CHECK(Problem{"F", 2, 1, "", "found a tab"}.str() == "F:2:1: found a tab");
    CHECK(Problem{"F", 0, 0, "", "No such file or directory"}.str() ==
          "F: No such file or directory");
}

TEST_CASE("config: load_or_error lists every problem in one error") {
    myr::test::TempDir dir;
    std::string f = dir / "u.yaml";
    myr::test::write_file(f, "log:\n  level: x\n  format: y\nupdate: {requireSignature: false}\n");
    auto r = load_or_error(f, Mode::any);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message() == f +
                                     ":2:3: log.level: must be debug, info, warn or error, got "
                                     "\"x\"\n" +
                                     f + ":3:3: log.format: must be text or json, got \"y\"");
    myr::test::write_file(f, kIdentity);
    auto ok = load_or_error(f, Mode::any);
    REQUIRE(ok.ok());
    CHECK(ok->path == f);
}

TEST_CASE("config: network.proxy, its checks, and its password never rendered") {
    Config c = expect_ok(kIdentity +
                         "network:\n  proxy:\n    url: http://u:s3cret@proxy:3128\n"
                         "    noProxy: [.svc, 10.0.0.0/8]\n    credentialsEnv: PROXY_CREDS\n");
    CHECK(c.network.proxy.url == "http://u:s3cret@proxy:3128");
    CHECK(c.network.proxy.no_proxy == std::vector<std::string>{".svc", "10.0.0.0/8"});
    CHECK(c.network.proxy.credentials_env == "PROXY_CREDS");
    const std::string text = render_effective(c);
    CHECK(text.find("url: \"http://***@proxy:3128\"") != std::string::npos);
    CHECK(text.find("s3cret") == std::string::npos);
    expect_problem(kIdentity + "network:\n  proxy:\n    url: https://proxy:443\n",
                   "network.proxy.url", "https:// proxies are not supported");
    expect_problem(kIdentity + "network:\n  proxy:\n    url: socks5://proxy:1080\n",
                   "network.proxy.url", "must be an http:// URL");
    expect_problem(kIdentity +
                       "network:\n  proxy:\n    credentialsFile: /c\n"
                       "    credentialsEnv: C\n",
                   "network.proxy.credentialsEnv", "at most one");
    expect_ok(kIdentity + "network:\n  proxy:\n    url: proxy.corp:3128\n");
}

TEST_CASE("config: host mode needs the supervisor's unit, and its poll is bounded") {
    const std::string endpoint = "server:\n  endpoint: wss://myriarchd.example:4320/v1/opamp\n";
    expect_problem(endpoint + kIdentity, "host", "section is required by host mode (run)",
                   Mode::run);
    expect_problem(endpoint + kIdentity + "host:\n  pollInterval: 2s\n", "host.serviceName",
                   "is required by host mode (run)", Mode::run);
    expect_problem(kIdentity + "host:\n  serviceName: opampsupervisor\n", "host.serviceName",
                   "must be a systemd service unit name ending in .service, got "
                   "\"opampsupervisor\"");
    expect_problem(kIdentity + "host:\n  serviceName: a.service\n  pollInterval: 1m\n",
                   "host.pollInterval", "must be between 200ms and 10s, got 1m");
    expect_problem(
        endpoint + kIdentity + "host:\n  serviceName: a.service\ncollector:\n  activation: copy\n",
        "collector.activation", "must be symlink for host mode", Mode::run);
    LoadResult ok = load_string(
        endpoint + kIdentity + "host:\n  serviceName: opampsupervisor.service\n", "t", Mode::run);
    REQUIRE(ok.config.has_value());
    CHECK(ok.config->host->service_name == "opampsupervisor.service");
    CHECK(ok.config->host->poll_interval == 1s);
    // No seed binary and no probe server unless asked for.
    CHECK(ok.config->host->seed_binary.empty());
    CHECK_FALSE(ok.config->host->health_listen.has_value());
    CHECK(ok.config->host->metrics);
    Config full = expect_ok(endpoint + kIdentity +
                                "host:\n  serviceName: s.service\n"
                                "  seedBinary: /usr/lib/myriarch/otelcol-contrib\n"
                                "  healthListen: 127.0.0.1:13135\n  metrics: false\n",
                            Mode::run);
    CHECK(full.host->seed_binary == "/usr/lib/myriarch/otelcol-contrib");
    REQUIRE(full.host->health_listen.has_value());
    CHECK(full.host->health_listen->str() == "127.0.0.1:13135");
    CHECK_FALSE(full.host->metrics);
    expect_problem(kIdentity + "host:\n  serviceName: s.service\n  seedBinary: otelcol\n",
                   "host.seedBinary", "must be an absolute path");
    expect_problem(kIdentity + "host:\n  serviceName: s.service\n  healthListen: 13135\n",
                   "host.healthListen", "expected host:port");
}

// ---- issue 43: maxima, unit names, templates ----

TEST_CASE("config: every duration and count has a maximum, named with its position") {
    struct Case {
        const char* section;
        const char* key;
        const char* at_max;
        const char* over;
        const char* message;
    };
    // clang-format off
    const Case cases[] = {
        {"server",    "heartbeatInterval", "24h",   "24h1ms",   "must be at most 24h"},
        {"update",    "startJitter",       "1h",    "61m",      "must be at most 1h"},
        {"update",    "downloadTimeout",   "168h",  "169h",     "must be at most 168h"},
        {"update",    "retryFor",          "720h",  "721h",     "must be at most 720h"},
        {"update",    "quarantineFor",     "8760h", "2562047h", "must be at most 8760h"},
        {"update",    "healthTimeout",     "1h",    "2h",       "must be at most 1h"},
        {"update",    "healthInterval",    "10m",   "11m",      "must be at most 10m"},
        {"update",    "trialPeriod",       "720h",  "2562047h", "must be at most 720h"},
        {"update",    "healthSuccesses",   "1000",  "1001",     "is too large (at most 1000)"},
        {"update",    "trialMaxRestarts",  "1000",  "1001",     "is too large (at most 1000)"},
        {"update",    "trialMaxBoots",     "1000",  "4294967295", "is too large (at most 1000)"},
        {"update",    "maxArtifactSize",   "16GiB", "17GiB",    "must be at most 16GiB"},
        {"collector", "keepVersions",      "100",   "101",      "is too large (at most 100)"},
        {"container", "stopTimeout",       "1h",    "61m",      "must be at most 1h"},
        {"container", "restartDelay",      "1h",    "61m",      "must be at most 1h"},
        {"container", "maxRestarts",       "1000",  "1001",     "is too large (at most 1000)"},
        {"container", "restartWindow",     "24h",   "25h",      "must be at most 24h"},
    };
    // clang-format on
    for (const Case& c : cases) {
        CAPTURE(c.key);
        const std::string key = std::string(c.section) + "." + c.key;
        // healthTimeout above healthInterval, so the rule between them stays quiet.
        const std::string head = kIdentity + "  healthTimeout: 1h\n";
        auto file = [&](const char* value) {
            if (std::string(c.key) == "healthTimeout")
                return kIdentity + "  healthTimeout: " + value + "\n";
            return std::string(c.section) == "update"
                       ? head + "  " + c.key + ": " + value + "\n"
                       : head + c.section + ":\n  " + c.key + ": " + value + "\n";
        };
        expect_ok(file(c.at_max));
        LoadResult r = load(file(c.over));
        INFO(dump(r));
        const Problem* p = find(r, key, c.message);
        REQUIRE(p != nullptr);
        CHECK(p->line > 0);
        CHECK(p->column > 0);
    }
}

TEST_CASE("config: host.serviceName must be a systemd service unit name, never an option") {
    const std::string head = kIdentity + "host:\n  serviceName: ";
    for (const char* hostile :
         {"\"--host=attacker@evil.example.service\"", "\"-x.service\"", "\"--help.service\"",
          "\"a b.service\"", "\"a;b.service\"", "\"a/b.service\"", "\"a$(id).service\"",
          "\".service\"", "\"a@.service\"", "\"@x.service\"", "\"a.socket\"",
          "\"\\u00e9t\\u00e9.service\"", "\"a\\nb.service\""}) {
        CAPTURE(hostile);
        expect_problem(head + hostile + "\n", "host.serviceName", "");
    }
    expect_problem(head + "\"--host=attacker@evil.example.service\"\n", "host.serviceName",
                   "must not start with '-'");
    expect_problem(head + "\"" + std::string(248, 'a') + ".service\"\n", "host.serviceName",
                   "is longer than 255 bytes");
    expect_problem(head + "\"otel@.service\"\n", "host.serviceName", "is a template");
    expect_problem(head + "\"a=b.service\"\n", "host.serviceName", "not \"=\"");
    for (const char* ok : {"opampsupervisor.service", "otel@edge-1.service", "a_b:c.d-e.service",
                           "\"sys\\\\x2dfoo.service\""}) {
        CAPTURE(ok);
        expect_ok(head + ok + "\n");
    }
    expect_ok(head + "\"" + std::string(247, 'a') + ".service\"\n");
}

TEST_CASE("config: {version} works in subject; in issuer and subjectRegexp it is refused") {
    const std::string head = "update:\n  signerIdentity:\n";
    Config c = expect_ok(
        head + "    subject: https://g/o/r/.github/workflows/r.yml@refs/tags/v{version}\n");
    CHECK(c.update.signer_identity.subject ==
          "https://g/o/r/.github/workflows/r.yml@refs/tags/v{version}");
    expect_problem(
        head + "    subject: https://g/o/r/.github/workflows/r.yml@refs/tags/v{Version}\n",
        "update.signerIdentity.subject", "unknown placeholder {Version}");
    expect_problem(head + "    subject: x\n    issuer: https://issuer/{version}\n",
                   "update.signerIdentity.issuer", "is not replaced here");
    expect_problem(head + "    subjectRegexp: '^https://g/o/r/.*@refs/tags/v{version}$'\n",
                   "update.signerIdentity.subjectRegexp", "{version} is not replaced here");
}
