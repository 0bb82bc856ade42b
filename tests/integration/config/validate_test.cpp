// `validate` through the real binary: exit codes, the F:L:C: key: message lines on stderr, the
// effective configuration on stdout, and files that must not hang or be read (FIFO, 100 MB).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "harness.hpp"

using namespace myr::test;

namespace {

RunResult validate(const std::vector<std::string>& args, Millis timeout = 60s) {
    std::vector<std::string> argv{updater_bin(), "validate"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, timeout);
}

// The example with its trustedRootFile pointed at the public-good root of tests/data: validate
// reads the root (requireSignature is true there), and /etc/myriarch is not on a test machine.
std::string example() {
    static TempDir dir;
    const std::string path = dir / "updater.yaml";
    if (!exists(path)) {
        std::string text = read_file(source_dir() + "/packaging/examples/updater.yaml");
        const std::string from = "/etc/myriarch/trusted_root.json";
        const size_t at = text.find(from);
        REQUIRE(at != std::string::npos);
        write_file(path, text.replace(at, from.size(),
                                      data_dir() + "/sigstore-conformance/"
                                                   "public-good-trusted-root.json"));
    }
    return path;
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string l;
    while (std::getline(ss, l)) out.push_back(l);
    return out;
}

bool contains(const std::string& hay, const std::string& needle) {
    return hay.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("validate: the example is valid and prints the effective config and grace period") {
    for (const char* mode : {"any", "container"}) {
        CAPTURE(mode);
        RunResult r = validate({"--config", example(), "--mode", mode});
        INFO(r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.err.empty());
        CHECK(contains(r.out, "terminationGracePeriodSeconds: 360"));
        CHECK(contains(r.out, "  endpoint: \"wss://myriarchd.myriarch.svc:4320/v1/opamp\"\n"));
        CHECK(contains(r.out, "  seedPolicy: newest\n"));
    }
}

TEST_CASE("validate: the printed effective configuration validates again, unchanged") {
    TempDir dir;
    RunResult first = validate({"--config=" + example(), "--mode=container"});
    REQUIRE(first.exit_code == 0);
    write_file(dir / "effective.yaml", first.out);
    RunResult second = validate({"--config", dir / "effective.yaml", "--mode", "container"});
    INFO(second.err);
    CHECK(second.exit_code == 0);
    CHECK(second.out == first.out);
}

TEST_CASE("validate: the grace period follows stopTimeout and healthTimeout") {
    TempDir dir;
    write_file(dir / "u.yaml",
               "update:\n  requireSignature: false\n  healthTimeout: 3m\n"
               "container:\n  stopTimeout: 45s\n");
    RunResult r = validate({"--config", dir / "u.yaml"});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "terminationGracePeriodSeconds: 510"));  // 2*45 + 2*180 + 60
    write_file(dir / "v.yaml", "update:\n  requireSignature: false\n  healthTimeout: 1m\n");
    RunResult v = validate({"--config", dir / "v.yaml"});
    CHECK(v.exit_code == 0);
    CHECK(contains(v.out, "terminationGracePeriodSeconds: 240"));  // default stopTimeout 30s
}

TEST_CASE("validate: a bad file prints every problem as F:L:C: key: message and exits 1") {
    TempDir dir;
    std::string f = dir / "bad.yaml";
    write_file(f,
               "server:\n"
               "  endpoint: ws://myriarchd.example/v1/opamp\n"
               "update:\n"
               "  requireSignatre: false\n"
               "  healthSuccesses: 0\n"
               "container:\n"
               "  maxRestarts: five\n"
               "  stopTimeout: -1s\n"
               "log:\n"
               "  level: loud\n");
    RunResult r = validate({"--config", f, "--mode", "container"});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    std::vector<std::string> got = lines(r.err);
    INFO(r.err);
    CHECK(got.size() >= 7);
    std::regex form("^" + f + ":[0-9]+:[0-9]+: [A-Za-z.\\[\\]0-9]+: .+$");
    for (const std::string& l : got) {
        CAPTURE(l);
        CHECK(std::regex_match(l, form));
    }
    CHECK(contains(r.err, f + ":2:3: server.endpoint: ws:// to a host that is not loopback"));
    CHECK(contains(r.err, f + ":4:3: update.requireSignatre: unknown key, did you mean "
                              "\"requireSignature\"?"));
    CHECK(contains(r.err, f + ":5:3: update.healthSuccesses: must be at least 1, got 0"));
    CHECK(contains(r.err, f + ":7:3: container.maxRestarts: expected an integer, got \"five\""));
    CHECK(contains(r.err, f + ":8:3: container.stopTimeout: must be positive"));
    CHECK(contains(r.err, f + ":10:3: log.level: must be debug, info, warn or error"));
    CHECK(contains(r.err, "container.supervisorCommand: is required by the container command"));
}

TEST_CASE("validate: the container rules apply only with --mode container") {
    TempDir dir;
    write_file(dir / "u.yaml", "update:\n  requireSignature: false\n");
    CHECK(validate({"--config", dir / "u.yaml"}).exit_code == 0);
    CHECK(validate({"--config", dir / "u.yaml", "--mode", "any"}).exit_code == 0);
    RunResult c = validate({"--config", dir / "u.yaml", "--mode", "container"});
    CHECK(c.exit_code == 1);
    CHECK(contains(c.err, "container: section is required by the container command"));
    CHECK(contains(c.err, "server.endpoint: is required by the container command"));
    RunResult run_mode = validate({"--config", dir / "u.yaml", "--mode", "run"});
    CHECK(run_mode.exit_code == 1);
    CHECK(contains(run_mode.err, "server.endpoint: is required by the run command"));
}

TEST_CASE("validate: --mode host requires the supervisor's unit and prints the host section") {
    TempDir dir;
    const std::string base =
        "server:\n  endpoint: ws://127.0.0.1:4320/v1/opamp\nupdate:\n  requireSignature: false\n";
    write_file(dir / "u.yaml", base);
    RunResult none = validate({"--config", dir / "u.yaml", "--mode", "host"});
    CHECK(none.exit_code == 1);
    CHECK(contains(none.err, "host: section is required by host mode (run)"));
    write_file(dir / "u.yaml", base + "host:\n  serviceName: opampsupervisor\n");
    RunResult bad = validate({"--config", dir / "u.yaml", "--mode", "host"});
    CHECK(bad.exit_code == 1);
    CHECK(contains(bad.err,
                   "u.yaml:6:3: host.serviceName: must be a systemd service unit name "
                   "ending in .service, got \"opampsupervisor\""));
    write_file(dir / "u.yaml", base + "host:\n  serviceName: opampsupervisor.service\n");
    RunResult ok = validate({"--config", dir / "u.yaml", "--mode", "host"});
    CHECK_MESSAGE(ok.exit_code == 0, ok.err);
    CHECK(contains(ok.out,
                   "host:\n  serviceName: \"opampsupervisor.service\"\n  pollInterval: 1s\n"));
}

TEST_CASE("validate: usage errors exit 2") {
    CHECK(validate({}).exit_code == 2);
    CHECK(validate({"--config"}).exit_code == 2);
    CHECK(validate({"--config="}).exit_code == 2);
    RunResult m = validate({"--config", example(), "--mode", "pod"});
    CHECK(m.exit_code == 2);
    CHECK(contains(m.err, "--mode must be any, container, host or run"));
    CHECK(validate({"--config", example(), "--colour"}).exit_code == 2);
    CHECK(validate({"--config", example(), "extra"}).exit_code == 2);
    RunResult h = validate({"--help"});
    CHECK(h.exit_code == 0);
    CHECK(contains(h.out, "Usage: myriarch-updater validate"));
}

TEST_CASE("validate: a missing file is a runtime error naming it") {
    TempDir dir;
    RunResult r = validate({"--config", dir / "nope.yaml"});
    CHECK(r.exit_code == 1);
    CHECK(r.err == "myriarch-updater: " + dir / "nope.yaml" + ": No such file or directory\n");
}

TEST_CASE("validate: a directory as --config is refused") {
    TempDir dir;
    RunResult r = validate({"--config", dir.path()});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, dir.path() + ": is a directory"));
}

TEST_CASE("validate: a FIFO as --config does not hang") {
    TempDir dir;
    std::string fifo = dir / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    RunResult r = validate({"--config", fifo}, 20s);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, fifo + ": is a FIFO, not a file"));
}

TEST_CASE("validate: a 100 MB file is refused by its size, without being read") {
    TempDir dir;
    std::string f = dir / "big.yaml";
    {
        // Real bytes, not a sparse hole: the refusal must not depend on how the file was made.
        int fd = ::open(f.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
        REQUIRE(fd >= 0);
        std::string chunk(1 << 20, '#');
        for (int i = 0; i < 100; ++i) {
            REQUIRE(::write(fd, chunk.data(), chunk.size()) == static_cast<ssize_t>(chunk.size()));
        }
        ::close(fd);
    }
    // The point is that the file is not read, which is measured in bytes rather than seconds (a
    // duration would measure the machine's load too): a shell runs the updater and, once it has
    // reaped it, reports from /proc/<itself>/io the bytes it and its reaped children read.
    RunResult r = run(
        {"sh", "-c", "\"$0\" validate --config \"$1\"; rc=$?; cat /proc/$$/io > \"$2\"; exit $rc",
         updater_bin(), f, dir / "io"},
        30s);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "104857600 bytes"));
    CHECK(contains(r.err, "limit"));
    std::string io = read_file(dir / "io");
    auto at = io.find("rchar: ");
    REQUIRE_MESSAGE(at != std::string::npos, "no rchar in /proc/<pid>/io: " << io);
    long long read_bytes = std::stoll(io.substr(at + 7));
    MESSAGE("bytes read by the shell and the updater: " << read_bytes);
    // Below the 1 MiB a config may have: not even the bounded read of a file that grew after its
    // stat happened.
    CHECK(read_bytes < 1024 * 1024);
}

TEST_CASE("validate: an empty file and a binary file are clean errors") {
    TempDir dir;
    write_file(dir / "empty.yaml", "");
    RunResult e = validate({"--config", dir / "empty.yaml"});
    CHECK(e.exit_code == 1);
    CHECK(e.err == dir / "empty.yaml" + ":1:1: empty configuration file\n");
    std::string junk;
    for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 7919 + 13) & 0xff);
    write_file(dir / "junk.yaml", junk);
    RunResult b = validate({"--config", dir / "junk.yaml"});
    CHECK(b.exit_code == 1);
    CHECK(b.term_signal == 0);
    CHECK_FALSE(b.err.empty());
}
