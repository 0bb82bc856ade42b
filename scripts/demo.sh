#!/usr/bin/env bash
# The main job, as a local end-to-end demo of container mode. It builds the static binary and the
# stand-ins, then plays what a pod does: the init containers put the updater and the image's
# collector on a shared volume, `validate` checks the configuration, and the updater runs as PID 1
# in a new PID namespace (as root) with the stand-in supervisor: seeding, probes, signals, shutdown.
# Then the fleet server offers releases over OpAMP, signed under a private Sigstore test root: a
# newer one is downloaded, verified, swapped, checked and committed; one whose archive was altered
# after signing is refused before it is downloaded (its signature does not cover the offered hash); one that fails its health check is rolled
# back. Last, what an operator looks at: `status` and the /metrics of the probe listener.
# Everything happens under one throw-away directory; nothing outside it is touched.
#
#   MYR_DEMO_UNSIGNED=1   run without the signer: unsigned releases, requireSignature: false
#   MYR_DEMO_BUILD=DIR    take the binaries from an existing build directory instead of building
#                         build/demo (the demo's own test, tests/integration/packaging/demo_test.sh)
#   MYR_DEMO_INTEROP=DIR  where the npm signer is installed and run from (default tests/interop)
#   MYR_DEMO_KEEP=1       keep the pod's directory
#
# `bash scripts/demo.sh host` is host mode's demo instead (scripts/demo-host.sh): the .deb on a
# booted systemd with the real supervisor and collector.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = host ]; then exec bash scripts/demo-host.sh; fi
. scripts/deps.sh
myr_need_pkgs "${MYR_BUILD_PKGS[@]}" "${MYR_TEST_PKGS[@]}" || exit 1
# The signer (@sigstore/sign, with @sigstore/mock standing in for Fulcio and Rekor) is installed
# like the Debian packages. Without it the demo stops rather than quietly showing unsigned
# installs: signature verification is what it is there to show.
interop=${MYR_DEMO_INTEROP:-tests/interop}
signing=$(myr_demo_signing "$interop" demo) || exit 1

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "build: static myriarch-updater and the stand-in supervisor and collector"
dir=$(myr_demo_build myriarch-updater tests/fakes/fake-otelcol tests/fakes/fake-opampsupervisor \
    tests/servers/opamp-test-server)
echo "binaries from $dir"
bin=$dir/myriarch-updater
file "$bin" | sed 's/, BuildID[^,]*//'
"$bin" version

pod=$(mktemp -d /tmp/myriarch-demo.XXXXXX)
echo "pod root: $pod"
mkdir -p "$pod"/{updater-image,collector-image,shared,binaries,supervisor-storage,etc}
cp "$bin" "$pod/updater-image/myriarch-updater"
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
collector_port=$(port)   # where every stand-in collector serves its health
# A collector "release": the stand-in collector with its version in an appended trailer.
release() {  # version -> path of a collector image binary of that version
    local f="$pod/releases/otelcol-contrib-$1"
    mkdir -p "$pod/releases"
    cp "$dir/tests/fakes/fake-otelcol" "$f"
    printf '\n#MYRIARCH-FAKE version=%s health=%s health_port=%s\n' "$1" "${2:-ok}" "$collector_port" >> "$f"
    echo "$f"
}
cp "$(release 0.116.0)" "$pod/collector-image/otelcol-contrib"

say "init container 1 (updater image): install-self onto the shared volume"
run "$pod/updater-image/myriarch-updater" install-self "$pod/shared"
say "init container 2 (collector image): copy the image's collector onto the shared volume"
run "$pod/shared/myriarch-updater" copy "$pod/collector-image/otelcol-contrib" "$pod/shared/"
ls -l "$pod/shared"
say "a planted symlink on the volume is refused, not followed"
ln -s /etc/passwd "$pod/shared/evil"
run "$pod/shared/myriarch-updater" copy "$pod/collector-image/otelcol-contrib" "$pod/shared/evil" || echo "(exit $?, as it should)"
rm "$pod/shared/evil"

say "validate the packaged example configuration (container mode)"
# validate reads the trusted root the example names: here the public-good one of tests/data.
sed "s|/etc/myriarch/trusted_root.json|$PWD/tests/data/sigstore-conformance/public-good-trusted-root.json|" \
    packaging/examples/updater.yaml >"$pod/example-updater.yaml"
run "$pod/shared/myriarch-updater" validate --config "$pod/example-updater.yaml" --mode container | tail -5

# ---------------------------------------------------------------------------------------------
# The main container: myriarch-updater as PID 1, the stand-in supervisor as its child, an OpAMP
# server (the project's scripted test server) standing in for myriarchd on 127.0.0.1.
touch "$pod/opamp.commands"
"$dir/tests/servers/opamp-test-server" --port-file "$pod/opamp.port" --record "$pod/opamp.jsonl" \
    --commands "$pod/opamp.commands" >"$pod/opamp-server.log" 2>&1 &
server_pid=$!
# The release server: a plain file server over the pod's releases/ (http on loopback).
mkdir -p "$pod/artifacts"
python3 tests/servers/artifact_server.py --dir "$pod/artifacts" --port-file "$pod/artifacts.port" \
    >"$pod/artifact-server.log" 2>&1 &
artifact_pid=$!
upd_pid=""
wait_pid=""
cleanup() {
    # A demo that stops half-way (set -e) may leave PID 1 running: TERM it by its host pid, or its
    # unshare when the pid was not known yet, so that the `wait` below cannot hang.
    if [ -n "$upd_pid" ]; then kill -TERM "$upd_pid" 2>/dev/null || true
    elif [ -n "$wait_pid" ]; then kill -TERM "$wait_pid" 2>/dev/null || true; fi
    kill "$server_pid" "$artifact_pid" 2>/dev/null || true
    wait 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 50); do [ -s "$pod/opamp.port" ] && [ -s "$pod/artifacts.port" ] && break; sleep 0.1; done
artifacts_url=http://127.0.0.1:$(cat "$pod/artifacts.port")/artifacts
# The identity the test signer's certificates carry (tests/interop/sigstore-make.mjs).
sig_subject="https://github.com/example/release/.github/workflows/release.yml@refs/tags/v1.0.0"
sig_issuer="https://token.actions.githubusercontent.com"
touch "$pod/etc/effective.yaml"   # the collector configuration `validate` checks
health_port=$(port)

write_config() {  # seedPolicy
    cat > "$pod/etc/updater.yaml" <<YAML
server:
  endpoint: ws://127.0.0.1:$(cat "$pod/opamp.port")/v1/opamp
  heartbeatInterval: 5s
update:
$(if $signing; then printf '  requireSignature: true\n  trustedRootFile: %s\n  signerIdentity:\n    subject: "%s"\n    issuer: "%s"\n' \
    "$pod/sigstore/trusted_root.json" "$sig_subject" "$sig_issuer"
  else printf '  requireSignature: false       # MYR_DEMO_UNSIGNED: the releases are not signed\n'; fi)
  allowedDownloadPrefixes: ["$artifacts_url/"]
  startJitter: 0s               # one pod: no fleet to spread over the window
  healthTimeout: 6s
  healthSuccesses: 2
  healthInterval: 500ms
collector:
  installDir: $pod/binaries/collector
  stateDir: $pod/binaries/state
  healthUrl: http://127.0.0.1:$collector_port/
  configFile: $pod/etc/effective.yaml
supervisor:
  storageDir: $pod/supervisor-storage
  healthUrl: ""                  # the stand-in supervisor serves none here
container:
  supervisorCommand: ["$dir/tests/fakes/fake-opampsupervisor",
    "--agent", "$pod/binaries/collector/current/otelcol-contrib",
    "--storage-dir", "$pod/supervisor-storage", "--signals-file", "$pod/supervisor-signals"]
  seedBinary: $pod/shared/otelcol-contrib
  seedPolicy: $1
  stopTimeout: 5s
  restartDelay: 1s
  healthListen: "127.0.0.1:$health_port"
YAML
}

probe() {  # path: prints the status code and the one-line body
    local answer
    answer=$(curl -s -m 2 -w '\n%{http_code}' "http://127.0.0.1:$health_port$1") || answer=$'no answer\n-'
    printf '  GET %-8s -> %s %s\n' "$1" "${answer##*$'\n'}" "$(printf '%s' "${answer%$'\n'*}" | tr -d '\n')"
}

start_pod() {  # title, seedPolicy
    say "$1"
    write_config "$2"
    if [ "$(id -u)" -eq 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
        echo "\$ unshare --pid --fork --mount-proc $pod/shared/myriarch-updater container --config $pod/etc/updater.yaml"
        unshare --pid --fork --mount-proc "$pod/shared/myriarch-updater" container \
            --config "$pod/etc/updater.yaml" >"$pod/updater.log" 2>&1 &
        wait_pid=$!
        # pgrep fails until unshare has forked: not an error (set -e, pipefail).
        for _ in $(seq 50); do upd_pid=$(pgrep -P "$wait_pid" | head -1) || true; [ -n "$upd_pid" ] && break; sleep 0.1; done
        [ -n "$upd_pid" ] || { echo "DEMO FAILED: unshare started no updater"; exit 1; }
        echo "(PID 1 in a new PID namespace; host pid $upd_pid)"
    else
        echo "(not root: running as a child subreaper instead of PID 1)"
        "$pod/shared/myriarch-updater" container --config "$pod/etc/updater.yaml" >"$pod/updater.log" 2>&1 &
        upd_pid=$!
        wait_pid=$upd_pid
    fi
    for _ in $(seq 100); do
        [ "$(curl -s -m 1 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$health_port/readyz")" = 200 ] && break
        sleep 0.1
    done
    probe /healthz
    probe /readyz
    echo "  updater log:"
    grep -E 'recovery|seed|child started|opamp connected' "$pod/updater.log" | sed 's/^/    /'
    echo "  volume:"
    (cd "$pod/binaries" && find collector -path '*/.staging' -prune -o -print | sort | sed 's/^/    /')
    echo "    current -> $(readlink "$pod/binaries/collector/current")"
    echo "    marker: $(cat "$pod/binaries/collector/current/install.json")"
}

stop_pod() {
    echo "  \$ kill -TERM $upd_pid"
    kill -TERM "$upd_pid"
    local rc=0
    wait "$wait_pid" || rc=$?   # unshare passes on the exit status of its child, our PID 1
    upd_pid=""
    wait_pid=""
    grep -E 'shutdown|child exited|opamp agent stopped' "$pod/updater.log" | sed 's/^/    /'
    echo "  myriarch-updater exited with code $rc"
}

# The releases the fleet server offers later, built and signed before the first start: with
# update.requireSignature the updater refuses to start without a usable trusted root, and the
# private test root below is made by the same run that signs them.
build_release() {  # version health: the release archive on the release server
    local rel="$pod/releases/tree-$1"
    mkdir -p "$rel"
    cp "$(release "$1" "$2")" "$rel/otelcol-contrib"
    tar czf "$pod/artifacts/otelcol-contrib_$1_linux.tar.gz" -C "$rel" otelcol-contrib
}
build_release 0.118.0 ok
build_release 0.118.1 fail
build_release 0.118.2 ok
build_release 0.119.0 ok
if $signing; then
    # A private test root stands in for Sigstore's public one: the releases are signed under it
    # by a real signer (@sigstore/sign) whose Fulcio and Rekor are answered in-process.
    if ! node "$interop/sigstore-make.mjs" "$pod/sigstore" "$pod"/artifacts/*.tar.gz >"$pod/sign.log" 2>&1; then
        echo "DEMO FAILED: $interop/sigstore-make.mjs could not sign the releases (node $(node --version)):"
        tail -5 "$pod/sign.log"
        exit 1
    fi
    echo "signed under a private test root: $(ls "$pod/sigstore/signed" | tr '\n' ' ')"
    # 0.118.2 is altered after it was signed, as on a compromised release server: one byte of its
    # collector changes and the archive is rebuilt. Its offer carries the altered archive's
    # SHA-256, so only the signature can catch it.
    rel="$pod/releases/tree-0.118.2/otelcol-contrib"
    printf '\x5a' | dd of="$rel" bs=1 seek=4096 conv=notrunc status=none
    tar czf "$pod/artifacts/otelcol-contrib_0.118.2_linux.tar.gz" -C "$(dirname "$rel")" otelcol-contrib
    echo "altered after signing: otelcol-contrib_0.118.2_linux.tar.gz (byte 4096 of its collector)"
else
    echo "NOTE: MYR_DEMO_UNSIGNED is set: the releases are NOT signed and the config says"
    echo "      requireSignature: false."
fi

start_pod "first start: nothing on the volume yet, so the image's collector 0.116.0 is activated" newest
say "signals: HUP is forwarded to the supervisor"
kill -HUP "$upd_pid"
for _ in $(seq 100); do
    grep -q "signal forwarded" "$pod/updater.log" && grep -qs HUP "$pod/supervisor-signals" && break
    sleep 0.1
done
grep 'signal forwarded' "$pod/updater.log" | sed 's/^/    /'
echo "  the supervisor recorded: $(tr '\n' ' ' < "$pod/supervisor-signals")"
say "OpAMP: what the updater reported to the fleet server"
python3 - "$pod/opamp.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("event") == "message" and "non_identifying" in m:
        print("  identifying:    ", m["identifying"])
        print("  non-identifying:", m["non_identifying"])
        print("  health:         ", m.get("health"))
        break
PY
say "TERM: the supervisor's group gets TERM, the updater exits 0"
stop_pod

cp "$(release 0.117.0)" "$pod/shared/otelcol-contrib"
start_pod "a newer image (0.117.0): the higher version wins, 0.116.0 stays as previousVersion" newest
stop_pod

cp "$(release 0.115.0)" "$pod/shared/otelcol-contrib"
start_pod "an older image (0.115.0) under seedPolicy newest: the volume's 0.117.0 is kept" newest
stop_pod

start_pod "seedPolicy image, the emergency switch: the image's 0.115.0 is activated whatever the volume has" image
stop_pod

# ---------------------------------------------------------------------------------------------
# The main job: the fleet server offers a release over OpAMP.
offer() {  # version: has the server offer that release
    local name="otelcol-contrib_$1_linux.tar.gz"
    {
        echo "name=otelcol-contrib"
        echo "version=$1"
        echo "url=$artifacts_url/$name"
        echo "sha256=$(sha256sum "$pod/artifacts/$name" | cut -c1-64)"
        if $signing; then echo "signature_file=$pod/sigstore/signed/$name.json"; fi
    } > "$pod/offer-$1.txt"
    echo "  release $name ($(stat -c %s "$pod/artifacts/$name") bytes), offered as:"
    sed 's/^/    /' "$pod/offer-$1.txt"
    echo "release=$pod/offer-$1.txt" >> "$pod/opamp.commands"
}
await_status() {  # version expected: waits for Installed or InstallFailed, prints the statuses
    # seen, and fails the demo when the final one is not `expected`
    python3 - "$pod/opamp.jsonl" "$1" "$2" <<'PY'
import json, sys, time
path, version, expected = sys.argv[1], sys.argv[2], sys.argv[3]
seen, deadline = [], time.time() + 90
while time.time() < deadline:
    final = None
    seen = []
    for line in open(path):
        if not line.endswith("\n"):
            break
        for p in (json.loads(line).get("package_statuses") or {}).get("packages", []):
            if p["server_offered_version"] != version:
                continue
            s = (p["status"], p["agent_has_version"], p["error_message"])
            if not seen or seen[-1] != s:
                seen.append(s)
            if p["status"] in ("Installed", "InstallFailed"):
                final = s
    if final:
        break
    time.sleep(0.2)
for status, has, err in seen:
    print(f"  PackageStatus {status:<13} agent_has_version={has}" + (f"\n      error_message: {err}" if err else ""))
if not final or final[0] != expected:
    print(f"DEMO FAILED: {version} ended {final[0] if final else 'with no final status'}, expected {expected}")
    sys.exit(1)
PY
}
expect_current() {  # version: fails the demo unless `current` names that version
    local now
    now=$(readlink "$pod/binaries/collector/current")
    [ "$now" = "versions/$1" ] || { echo "DEMO FAILED: current is $now, expected versions/$1"; exit 1; }
}
states() {  # version last: the installer's states for that offer, from its log, once it is in
    # state `last` (the final package status comes a moment before the installer settles)
    local seen=""
    for _ in $(seq 300); do
        seen=$(grep 'msg="update: state"' "$pod/updater.log" | grep -F "version=$1" |
            grep -o ' state=[a-z-]*' | sed 's/ state=/ /' | tr -d '\n') || true  # none yet
        [ "${seen##* }" = "$2" ] && break
        sleep 0.1
    done
    echo "  installer states:$seen"
    [ "${seen##* }" = "$2" ] || { echo "DEMO FAILED: the installer did not reach $2 for $1"; exit 1; }
}
show_volume() {
    echo "  volume:"
    (cd "$pod/binaries" && find collector -path '*/.staging' -prune -o -print | sort | sed 's/^/    /')
    echo "    current -> $(readlink "$pod/binaries/collector/current")"
    echo "    marker: $(cat "$pod/binaries/collector/current/install.json")"
    echo "  last-attempt.json: $(cat "$pod/binaries/state/last-attempt.json" 2>/dev/null)"
    probe /readyz
}
# The image's collector is the supervisor's version too: update.maxMinorSkew (1) keeps offers
# within one minor version of it.
cp "$(release 0.117.0)" "$pod/shared/otelcol-contrib"
start_pod "OpAMP installs: an image of 0.117.0 (so offers from 0.116 to 0.118 are in reach); the updater waits for the fleet server's offers" newest
for _ in $(seq 100); do grep -q 'opamp connected' "$pod/updater.log" && break; sleep 0.1; done
say "the server offers 0.118.0: download, $($signing && echo 'SHA-256 + Sigstore' || echo 'SHA-256 (unsigned)'), extract, preflight, swap, health check, commit"
offer 0.118.0
await_status 0.118.0 Installed
states 0.118.0 trial
echo "  the updater's log of the verification:"
grep -F 'version=0.118.0' "$pod/updater.log" | grep -E 'signature verified|unsigned' | sed 's/^/    /'
if $signing; then
    grep -q 'msg="update: signature verified" version=0.118.0' "$pod/updater.log" ||
        { echo "DEMO FAILED: no signature verified for 0.118.0"; exit 1; }
fi
show_volume
expect_current 0.118.0
if $signing; then
    say "the server offers 0.118.2, altered after it was signed: refused before the download"
    offer 0.118.2
    await_status 0.118.2 InstallFailed
    states 0.118.2 idle
    [ ! -e "$pod/binaries/collector/versions/0.118.2" ] ||
        { echo "DEMO FAILED: versions/0.118.2 exists on the volume"; exit 1; }
    echo "  versions/0.118.2: none on the volume; current -> $(readlink "$pod/binaries/collector/current")"
    expect_current 0.118.0
fi
say "the server offers 0.118.1, whose health check fails: rolled back to 0.118.0"
offer 0.118.1
await_status 0.118.1 InstallFailed
states 0.118.1 idle
show_volume
expect_current 0.118.0
say "the server offers 0.119.0, two minor versions from the image's 0.117.0: refused before any download"
offer 0.119.0
await_status 0.119.0 InstallFailed
states 0.119.0 idle
expect_current 0.118.0

say "status: what the volume and the state directory hold (read-only, beside the running PID 1)"
run "$pod/shared/myriarch-updater" status --config "$pod/etc/updater.yaml"
say "metrics: GET /metrics on the probe listener (what Prometheus scrapes), the myriarch_ lines"
echo "\$ curl -s http://127.0.0.1:$health_port/metrics | grep '^myriarch_'"
curl -sf -m 2 "http://127.0.0.1:$health_port/metrics" > "$pod/metrics.txt" ||
    { echo "DEMO FAILED: GET /metrics on 127.0.0.1:$health_port"; exit 1; }
echo "  (left out: the histogram's buckets, and the rollback reasons and installer states at 0)"
grep '^myriarch_' "$pod/metrics.txt" | grep -v '_bucket{' |
    grep -Ev '^myriarch_(rollbacks_total|update_state)\{.*\} 0$' | sed 's/^/  /'
stop_pod

say "done: everything lived under $pod (removed now; set MYR_DEMO_KEEP=1 to keep it)"
[ -n "${MYR_DEMO_KEEP:-}" ] || rm -rf "$pod"
