#!/usr/bin/env bash
# Host mode end to end (`bash scripts/demo.sh host`): a Debian bookworm machine booted under
# systemd (the host-mode tests' rootfs, tests/host/rootfs.sh) gets the .deb of packaging/host, the
# real OpAMP Supervisor under the example unit and the real collector (tests/real/build-tools.sh);
# the opamp-go server on this machine's loopback offers a newer collector, signed under a private
# Sigstore test root; the updater's unit downloads, verifies, swaps and health-checks it while
# the supervisor's unit is stopped and started around the swap. Then `myriarch-updater status`
# inside, and the machine halts. Needs root (systemd-nspawn). Nothing outside a throw-away
# directory and the machine's tmpfs is written.
#
#   MYR_DEMO_UNSIGNED=1   run without the signer: an unsigned release, requireSignature: false
#   MYR_DEMO_BUILD=DIR    take myriarch-updater from an existing build directory instead of
#                         building build/demo (a build that is not static brings its libraries)
#   MYR_DEMO_INTEROP=DIR  where the npm signer is installed and run from (default tests/interop)
#   MYR_DEMO_KEEP=1       keep the demo's directory
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
[ "$(id -u)" -eq 0 ] || { echo "demo host: needs root (systemd-nspawn boots the machine)" >&2; exit 1; }
myr_need_pkgs "${MYR_BUILD_PKGS[@]}" "${MYR_TEST_PKGS[@]}" "${MYR_HOST_PKGS[@]}" || exit 1
interop=${MYR_DEMO_INTEROP:-tests/interop}
signing=$(myr_demo_signing "$interop" "demo host") || exit 1

t0=$(date +%s%N)
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
elapsed() { local d=$(( ($(date +%s%N) - t0) / 100000000 )); echo "$((d / 10)).$((d % 10)) s"; }

say "build: the static myriarch-updater"
dir=$(myr_demo_build myriarch-updater)
echo "binary from $dir"
bin=$dir/myriarch-updater
say "the machine's root filesystem and the real peers (cached after their first build)"
rootfs=${MYR_HOST_ROOTFS:-$(bash tests/host/rootfs.sh | sed -n 's/^MYR_HOST_ROOTFS=//p')}
tools=${MYR_REAL_TOOLS:-$(bash tests/real/build-tools.sh | sed -n 's/^MYR_REAL_TOOLS=//p')}
first=$(sed -n 1p "$tools/collector-versions")
second=$(sed -n 2p "$tools/collector-versions")
echo "rootfs $rootfs"
echo "real OpAMP Supervisor and collectors $first, $second from $tools"

demo=$(mktemp -d /tmp/myriarch-demo-host.XXXXXX)
seed=$demo/seed
mkdir -p "$seed/opt/demo" "$seed/usr/bin" "$seed/usr/lib/myriarch" "$seed/etc/opampsupervisor" \
    "$demo/artifacts" "$demo/machine"
say "the .deb (packaging/host/build-deb.sh)"
deb=$(MYR_DEB_ALLOW_DYNAMIC=1 bash packaging/host/build-deb.sh "$demo/deb" "$bin")
dpkg-deb --info "$deb" | sed -n 's/^ \(Package\|Version\|Architecture\|Installed-Size\):/  \1:/p'
cp "$deb" "$seed/opt/demo/"
# A test build that is not static runs inside too: the libraries the machine lacks go with it.
for lib in $(ldd "$bin" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p'); do
    case $lib in /lib/*) lib=/usr$lib ;; esac
    [ -e "$rootfs$lib" ] || install -D -m 0644 "$lib" "$seed$lib"
done
cp "$tools/opampsupervisor" "$seed/usr/bin/"
# The minbase rootfs has no /etc/hosts; the supervisor's bootstrap listens on "localhost".
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost\n' >"$seed/etc/hosts"
cp "$tools/otelcol-1" "$seed/usr/lib/myriarch/otelcol-contrib"   # the seedBinary

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
collector_health=$(port) supervisor_health=$(port) otlp=$(port) updater_health=$(port)
# The release: the second real collector in a tar.gz, signed under a private test root.
mkdir -p "$demo/release"
cp "$tools/otelcol-2" "$demo/release/otelcol-contrib"
release=otelcol-contrib_${second}_linux.tar.gz
tar czf "$demo/artifacts/$release" -C "$demo/release" otelcol-contrib
if $signing; then
    node "$interop/sigstore-make.mjs" "$demo/sigstore" "$demo/artifacts/$release" >"$demo/sign.log" 2>&1 ||
        { echo "DEMO FAILED: the signer failed:"; tail -5 "$demo/sign.log"; exit 1; }
    echo "signed under a private test root: $release"
fi

# The fleet server (opamp-go) and the release server on this machine's loopback: the booted
# machine shares its network namespace.
: >"$demo/opamp.commands"
"$tools/opampserver" --port-file "$demo/opamp.port" --record "$demo/opamp.jsonl" \
    --commands "$demo/opamp.commands" >"$demo/opamp-server.log" 2>&1 &
server_pid=$!
python3 tests/servers/artifact_server.py --dir "$demo/artifacts" --port-file "$demo/artifacts.port" \
    >"$demo/artifact-server.log" 2>&1 &
artifact_pid=$!
machine_pid=""
cleanup() {
    if [ -n "$machine_pid" ]; then kill -TERM "$machine_pid" 2>/dev/null || true; fi
    kill "$server_pid" "$artifact_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    if [ -n "${MYR_DEMO_KEEP:-}" ]; then echo "kept: $demo"; else rm -rf "$demo"; fi
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s "$demo/opamp.port" ] && [ -s "$demo/artifacts.port" ] && break; sleep 0.1; done
endpoint=ws://127.0.0.1:$(cat "$demo/opamp.port")/v1/opamp
artifacts_url=http://127.0.0.1:$(cat "$demo/artifacts.port")/artifacts

# The supervisor's configuration: the packaged example with this demo's server and ports.
sed -e "s|wss://myriarchd.example.com:4320/v1/opamp|$endpoint|" \
    -e "s|127.0.0.1:23233|127.0.0.1:$supervisor_health|" \
    -e "s|^  executable: .*|&\n  config_files: [/etc/opampsupervisor/collector.yaml]|" \
    packaging/host/opampsupervisor.yaml >"$seed/etc/opampsupervisor/config.yaml"
cat >"$seed/etc/opampsupervisor/collector.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$otlp
exporters:
  debug: {}
extensions:
  health_check:
    endpoint: 127.0.0.1:$collector_health
service:
  extensions: [health_check]
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
YAML

say "boot: systemd as PID 1 of a new PID namespace (systemd-nspawn), on a tmpfs overlay"
# The rig of tests/support/systemd_rig.cpp: the mounts live in a mount namespace of their own.
unshare --mount --propagation private sh -c '
    set -e
    t=$1
    mount -t tmpfs -o mode=0755 myr-demo-upper "$t"
    mkdir "$t/upper" "$t/work" "$t/root"
    mount -t overlay myr-demo-root -o "lowerdir=$2,upperdir=$t/upper,workdir=$t/work" "$t/root"
    for f in "$3"/*; do cp -a "$f" "$t/root/"; done
    exec systemd-nspawn --register=no --keep-unit --quiet --boot --directory="$t/root"
' demo-boot "$demo/machine" "$rootfs" "$seed" >"$demo/console.log" 2>&1 &
machine_pid=$!
init=""
for _ in $(seq 300); do
    for c in $(cat "/proc/$machine_pid/task/$machine_pid/children" 2>/dev/null); do
        [ "$(cat "/proc/$c/comm" 2>/dev/null)" = systemd ] && init=$c
    done
    [ -n "$init" ] && break
    sleep 0.05
done
[ -n "$init" ] || { echo "DEMO FAILED: no systemd booted:"; tail "$demo/console.log"; exit 1; }
inside() { nsenter -t "$init" -a "$@"; }
show() { printf '# %s\n' "$*"; inside "$@"; }
for _ in $(seq 200); do
    state=$(inside systemctl is-system-running --wait 2>/dev/null) && break
    case $state in running | degraded) break ;; esac
    sleep 0.05
done
echo "machine up: $state (PID 1 is host pid $init), $(elapsed) since the start"

say "install the package: dpkg -i (postinst: directories, unit enabled, not started until updater.yaml is valid)"
show dpkg -i "/opt/demo/$(basename "$deb")" 2>&1 | grep -v '^(Reading database' || true
show systemctl is-enabled myriarch-updater.service

say "the operator's part: the supervisor's user and unit (the packaged example), updater.yaml"
show useradd --system --home-dir /var/lib/otelcol --shell /usr/sbin/nologin otelcol
show cp /usr/share/doc/myriarch-updater/examples/opampsupervisor.service /etc/systemd/system/
inside systemctl daemon-reload
show systemctl enable opampsupervisor.service 2>&1
root=/proc/$init/root
if $signing; then
    cp "$demo/sigstore/trusted_root.json" "$root/etc/myriarch/trusted_root.json"
    signature="  requireSignature: true
  trustedRootFile: /etc/myriarch/trusted_root.json
  signerIdentity:
    subject: https://github.com/example/release/.github/workflows/release.yml@refs/tags/v1.0.0
    issuer: https://token.actions.githubusercontent.com"
else
    signature="  requireSignature: false     # MYR_DEMO_UNSIGNED: the release is not signed"
fi
cat >"$root/etc/myriarch/updater.yaml" <<YAML
server:
  endpoint: $endpoint
  heartbeatInterval: 5s
update:
$signature
  allowedDownloadPrefixes: ["$artifacts_url/"]
  startJitter: 0s
  healthTimeout: 30s
  healthSuccesses: 2
  healthInterval: 1s
collector:
  healthUrl: http://127.0.0.1:$collector_health/
supervisor:
  healthUrl: http://127.0.0.1:$supervisor_health/health
host:
  serviceName: opampsupervisor.service
  seedBinary: /usr/lib/myriarch/otelcol-contrib
  healthListen: 127.0.0.1:$updater_health
YAML
echo "# myriarch-updater validate --config /etc/myriarch/updater.yaml --mode host"
inside myriarch-updater validate --config /etc/myriarch/updater.yaml --mode host >"$demo/validate.log"
echo "  valid ($(grep -c . "$demo/validate.log") lines of effective configuration printed)"

say "start the updater's unit (Type=notify: systemctl returns at READY=1)"
show systemctl start myriarch-updater.service
inside systemctl --no-pager --lines=0 status myriarch-updater.service opampsupervisor.service 2>/dev/null | grep -E '^[●○]|Active:|Status:' || true
for _ in $(seq 600); do
    curl -sf -m 1 -o /dev/null "http://127.0.0.1:$collector_health/" && break
    sleep 0.1
done
echo "current -> $(readlink "$root/var/lib/myriarch/collector/current"); the collector answers on 127.0.0.1:$collector_health"

say "the fleet server offers $second over OpAMP: download, $($signing && echo 'SHA-256 + Sigstore' || echo 'SHA-256'), preflight as otelcol, swap, health"
sha=$(sha256sum "$demo/artifacts/$release" | cut -c1-64)
signature_file=""
$signing && signature_file=$demo/sigstore/signed/$release.json
printf '{"to":"myriarch-updater","name":"otelcol-contrib","version":"%s","url":"%s","hash":"%s","signature_file":"%s"}\n' \
    "$second" "$artifacts_url/$release" "$sha" "$signature_file" >>"$demo/opamp.commands"
# The updater's reports as opamp-go decoded them: its package status for the offered version.
installed=true
python3 - "$demo/opamp.jsonl" "$second" <<'PY' || installed=false
import json, sys, time
path, version = sys.argv[1], sys.argv[2]
deadline, seen = time.time() + 120, []
while time.time() < deadline:
    for line in open(path):
        if not line.endswith("\n"):
            break
        msg = json.loads(line).get("msg") or {}
        p = ((msg.get("packageStatuses") or {}).get("packages") or {}).get("otelcol-contrib")
        if not p or p.get("serverOfferedVersion") != version:
            continue
        # protojson names the enum's values PackageStatusEnum_<status>
        status = p.get("status", "").removeprefix("PackageStatusEnum_")
        s = (status, p.get("agentHasVersion", ""), p.get("errorMessage", ""))
        if s not in seen:
            seen.append(s)
            print(f"  PackageStatus {s[0]:<13} agent_has_version={s[1]} {s[2]}")
        if s[0] == "Installed":
            sys.exit(0)
        if s[0] == "InstallFailed":
            sys.exit(1)
    time.sleep(0.2)
sys.exit(1)
PY
echo "  the updater's log (journalctl -t myriarch-updater):"
inside journalctl -t myriarch-updater -o cat --no-pager | grep -E 'update: (state|signature verified)' |
    sed -e 's/^ts=[^ ]* //' -e 's/ hash=[^ ]*//' -e 's/ reason="" class=""//' -e 's/^/    /' || true
$installed || { echo "DEMO FAILED: $second was not reported Installed"; exit 1; }
echo "current -> $(readlink "$root/var/lib/myriarch/collector/current")"

say "status, inside the machine"
show myriarch-updater status --config /etc/myriarch/updater.yaml

say "stop the updater: the supervisor's unit keeps running"
show systemctl stop myriarch-updater.service
inside systemctl --no-pager --lines=0 status myriarch-updater.service opampsupervisor.service 2>/dev/null | grep -E '^[●○]|Active:' || true

say "halt"
kill -TERM "$machine_pid"
wait "$machine_pid" || true
machine_pid=""
echo "done in $(elapsed)"
