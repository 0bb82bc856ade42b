#include "cli/commands.hpp"

#include <cstdio>

#include "core/text.hpp"
#include "stage/child.hpp"

namespace myr::cli {

const std::vector<Command>& commands() {
    static const std::vector<Command> table = {
        {"container", "run as PID 1 of a container: seed, supervise, report, install offers",
         "Usage: myriarch-updater container --config FILE\n"
         "\n"
         "Runs as the main process (PID 1) of a container: recovers and seeds the collector on\n"
         "the volume, starts container.supervisorCommand as a child, serves /healthz and /readyz\n"
         "on container.healthListen, reports to the OpAMP server, and installs the collector\n"
         "versions it offers: download, verification, preflight, swap, health check, rollback\n"
         "(docs/update.md).\n"
         "Linux only.\n"
         "\n"
         "Options:\n"
         "  --config FILE   updater.yaml (must contain a container section)\n",
         cmd_container},
        {"run", "host mode: a systemd service beside the supervisor's unit",
         "Usage: myriarch-updater run --config FILE\n"
         "\n"
         "Host mode (docs/host-mode.md): recovery, seeding, the OpAMP agent and the installer of\n"
         "container mode, stopping and starting the supervisor's systemd unit (host.serviceName)\n"
         "around a swap instead of a child process. Meant to run as a Type=notify unit\n"
         "(packaging/host/). On TERM it waits for an install's critical section and leaves the\n"
         "supervisor's unit running.\n"
         "\n"
         "Options:\n"
         "  --config FILE   updater.yaml (must contain a host section)\n",
         cmd_run},
        {"install-self", "copy this binary to DIR/myriarch-updater (init containers)",
         "Usage: myriarch-updater install-self DIR\n"
         "\n"
         "Copies the running binary to DIR/myriarch-updater with mode 0755, atomically. DIR must\n"
         "be an absolute path to an existing directory that is not a symlink. Makes no network\n"
         "access.\n",
         cmd_install_self},
        {"copy", "copy one regular file atomically, keeping the execute bit (init containers)",
         "Usage: myriarch-updater copy SRC DST\n"
         "\n"
         "Copies the regular file SRC to DST atomically (temporary file, fsync, rename). The\n"
         "result is 0755 when SRC has any execute bit, else 0644. DST may be an existing\n"
         "directory, then the file is DST/<name of SRC>. Both paths must be absolute; symlinks\n"
         "as destination are refused. Makes no network access.\n",
         cmd_copy},
        {"validate", "check an updater.yaml and print the effective configuration",
         "Usage: myriarch-updater validate --config FILE [--mode any|container|host]\n"
         "\n"
         "Loads FILE and prints every problem as FILE:LINE:COLUMN: KEY: PROBLEM (exit 1), or the\n"
         "effective configuration with all defaults and the recommended pod\n"
         "terminationGracePeriodSeconds (exit 0). --mode container also applies the rules of the\n"
         "container section, --mode host (or run) those of the host section.\n",
         cmd_validate},
        {"verify", "verify an artifact against a Sigstore bundle, offline",
         "Usage: myriarch-updater verify (--artifact FILE | --digest sha256:HEX) --bundle FILE\n"
         "         --trusted-root FILE ((--subject S | --subject-regexp R) --issuer I | --key "
         "PEM)\n"
         "         [--source-repository-ref T] [--build-config-uri T] [--source-repository-uri T]\n"
         "         [--certificate-github-workflow-{name,ref,repository,trigger,sha} T]\n"
         "         [--version V] [--min-timestamps N]\n"
         "\n"
         "Checks that FILE (or the artifact with that SHA-256, e.g. a release's published\n"
         "checksum) was signed by the given identity (or by the managed key in the PEM file),\n"
         "using only the trusted root (no network). cosign's names are accepted:\n"
         "--certificate-identity (= --subject), --certificate-identity-regexp,\n"
         "--certificate-oidc-issuer (= --issuer). The certificate field flags must equal the\n"
         "certificate's Fulcio extensions; in them {version} stands for --version.\n"
         "--min-timestamps: how many verified time sources (Rekor v1 SETs and RFC 3161\n"
         "timestamps) are required, default 1. Prints `verified: <subject> <issuer> <sha256>`\n"
         "(`verified: key sha256:<key hash> <sha256>` for a key) and one line per check, and\n"
         "exits 0, or `not verified: <step>: <reason>` and exits 1.\n",
         cmd_verify},
        {"forget", "lift the quarantine of a package that failed (works while PID 1 runs)",
         "Usage: myriarch-updater forget --config FILE [--package-hash HEX]\n"
         "\n"
         "A package whose install failed deterministically (hash or signature mismatch, archive\n"
         "refused, preflight or health failed) is quarantined: the same offer again is refused\n"
         "with the recorded failure until update.quarantineFor passes or the offer changes\n"
         "(docs/update.md). forget lifts it, of any package or only of the package hash HEX\n"
         "(packageHash in stateDir/last-attempt.json), and prints what it lifted. Safe while the\n"
         "updater runs: the next offer is checked against the rewritten file. The server must\n"
         "offer the package again (or the container restart) for it to be installed.\n"
         "\n"
         "Exit codes: 0 lifted, or nothing to lift (said on stdout); 1 error; 2 usage error.\n",
         cmd_forget},
        {"status", "show the volume's versions, a trial, the last attempt (works while PID 1 runs)",
         "Usage: myriarch-updater status --config FILE [--json]\n"
         "\n"
         "Reads collector.installDir and collector.stateDir and shows each version on the\n"
         "volume (size, marker), which one `current` names and the previous one, a trial and its\n"
         "deadline, a quarantined package and until when, the last attempt and how it ended, an\n"
         "install in flight (journal, downloads) and the age of update.trustedRootFile\n"
         "(docs/status.md). Reads only: no network, no lock, nothing written; safe while the\n"
         "updater runs. --json prints one JSON object (docs/status.schema.json).\n"
         "\n"
         "Exit codes: 0 shown; 1 something could not be read or is damaged (said on stderr and in\n"
         "the output, which shows every part that could be read); 2 usage error.\n",
         cmd_status},
        {"version", "print version, git commit, build type and linkage",
         "Usage: myriarch-updater version\n", cmd_version},
        // Hidden (no summary): the staging's extractor, started by the updater itself.
        {stage::kExtractCommand, nullptr,
         "Internal: started by the updater to extract a release archive under kernel limits.\n",
         cmd_internal_extract},
    };
    return table;
}

const Command* find_command(const std::string& name) {
    for (const Command& c : commands()) {
        if (name == c.name) return &c;
    }
    return nullptr;
}

std::string overview() {
    std::string out =
        "myriarch-updater: runs an OpenTelemetry collector's supervisor as PID 1 of a container,\n"
        "with the collector binary on a volume (seeded, journaled, recovered), an OpAMP agent, "
        "and\n"
        "an installer for the versions the server offers.\n"
        "\n"
        "Usage: myriarch-updater <command> [options]\n"
        "\n"
        "Commands:\n";
    for (const Command& c : commands()) {
        if (c.summary == nullptr) continue;
        char line[160];
        std::snprintf(line, sizeof line, "  %-13s %s\n", c.name, c.summary);
        out += line;
    }
    out +=
        "\n"
        "Run `myriarch-updater <command> --help` for a command's options.\n"
        "Exit codes: 0 success, 1 error, 2 usage error.\n";
    return out;
}

int usage_error(const std::string& command, const std::string& message) {
    std::fprintf(stderr, "myriarch-updater %s: %s (see 'myriarch-updater %s --help')\n",
                 command.c_str(), message.c_str(), command.c_str());
    return 2;
}

int runtime_error(const Error& e) {
    std::fprintf(stderr, "myriarch-updater: %s\n", e.message().c_str());
    return 1;
}

int state_error(const Error& e) {
    std::fprintf(stderr, "myriarch-updater: %s\n", text::escape_controls(e.message()).c_str());
    return 1;
}

int print_help(const std::string& command) {
    const Command* c = find_command(command);
    std::fputs(c ? c->help : overview().c_str(), stdout);
    return 0;
}

}  // namespace myr::cli
