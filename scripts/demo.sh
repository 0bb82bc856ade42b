#!/usr/bin/env bash
# The main job, as a local end-to-end demo of container mode. It builds the static binary and the
# stand-ins, then plays what a pod does: the init containers put the updater and the image's
# collector on a shared volume, `validate` checks the configuration, and the updater runs as PID 1
# in a new PID namespace (as root) with the stand-in supervisor: seeding, probes, signals, shutdown.
# Everything happens under one throw-away directory; nothing outside it is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
myr_need_pkgs "${MYR_BUILD_PKGS[@]}" "${MYR_TEST_PKGS[@]}" file || exit 1

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "build: static myriarch-updater and the stand-in supervisor and collector"
dir=build/demo
[ -d $dir ] || meson setup $dir -Dstatic=true -Dfault_injection=false -Dbuildtype=release >/dev/null
ninja -C $dir myriarch-updater tests/fakes/fake-otelcol tests/fakes/fake-opampsupervisor \
    tests/servers/opamp-test-server >/dev/null
bin=$PWD/$dir/myriarch-updater
file "$bin" | sed 's/, BuildID[^,]*//'
"$bin" version

pod=$(mktemp -d /tmp/myriarch-demo.XXXXXX)
echo "pod root: $pod"
mkdir -p "$pod"/{updater-image,collector-image,shared,binaries,supervisor-storage,etc}
cp "$bin" "$pod/updater-image/myriarch-updater"
# A collector "release": the stand-in collector with its version in an appended trailer.
release() {  # version -> path of a collector image binary of that version
    local f="$pod/releases/otelcol-contrib-$1"
    mkdir -p "$pod/releases"
    cp "$dir/tests/fakes/fake-otelcol" "$f"
    printf '\n#MYRIARCH-FAKE version=%s health=ok\n' "$1" >> "$f"
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
run "$pod/shared/myriarch-updater" validate --config packaging/examples/updater.yaml --mode container | tail -5

# ---------------------------------------------------------------------------------------------
# The main container: myriarch-updater as PID 1, the stand-in supervisor as its child, an OpAMP
# server (the project's scripted test server) standing in for myriarchd on 127.0.0.1.
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
"$dir/tests/servers/opamp-test-server" --port-file "$pod/opamp.port" --record "$pod/opamp.jsonl" \
    >"$pod/opamp-server.log" 2>&1 &
server_pid=$!
upd_pid=""
wait_pid=""
cleanup() {
    [ -n "$upd_pid" ] && kill -TERM "$upd_pid" 2>/dev/null
    kill "$server_pid" 2>/dev/null
    wait 2>/dev/null
}
trap cleanup EXIT
for _ in $(seq 50); do [ -s "$pod/opamp.port" ] && break; sleep 0.1; done
health_port=$(port)

write_config() {  # seedPolicy
    cat > "$pod/etc/updater.yaml" <<YAML
server:
  endpoint: ws://127.0.0.1:$(cat "$pod/opamp.port")/v1/opamp
  heartbeatInterval: 5s
update:
  requireSignature: false        # this demo installs nothing over OpAMP
collector:
  installDir: $pod/binaries/collector
  stateDir: $pod/binaries/state
supervisor:
  storageDir: $pod/supervisor-storage
container:
  supervisorCommand: ["$PWD/$dir/tests/fakes/fake-opampsupervisor",
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
        for _ in $(seq 50); do upd_pid=$(pgrep -P "$wait_pid" | head -1); [ -n "$upd_pid" ] && break; sleep 0.1; done
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
    grep -E 'shutdown|child exited|opamp agent stopped' "$pod/updater.log" | sed 's/^/    /'
    echo "  myriarch-updater exited with code $rc"
}

start_pod "first start: nothing on the volume yet, so the image's collector 0.116.0 is activated" newest
say "signals: HUP is forwarded to the supervisor"
kill -HUP "$upd_pid"; sleep 1
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

say "done: everything lived under $pod (removed now; set MYR_DEMO_KEEP=1 to keep it)"
[ -n "${MYR_DEMO_KEEP:-}" ] || rm -rf "$pod"
