#!/usr/bin/env bash
# The chart's pod, run for real by `podman kube play`: helm renders container mode, kube_pod.mjs
# turns the StatefulSet's first pod (with its ConfigMaps and claims) into what podman plays, and
# podman runs the init containers and the main container with the chart's securityContext.
#
# Images: the updater image (packaging/image/build.sh) and stand-ins for the supervisor and the
# collector images (tests/integration/packaging/images/), since the upstream ones cannot be pulled here.
# The updater talks to the project's OpAMP test server on 127.0.0.1 (the pod shares the host's
# network: see kube_pod.mjs for every change made to the rendered pod, and why).
#
# Asserted: the init containers put the updater and the seed on the shared volume as 10001; the
# main container runs the updater as PID 1 (uid 10001, read-only root, no new privileges) with the
# supervisor as its child and the collector from the binaries claim below it; /healthz and /readyz
# answer on the chart's port; the updater reports over OpAMP with the pod's name and the chart's
# enrollment token; stopping the pod ends in exit 0 well inside the grace period; a second pod
# finds both claims and keeps the installed version and both identities.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/podman_env.sh"
src=$MYRIARCH_SOURCE_DIR
work=$(mktemp -d /tmp/myr-pod-test.XXXXXX)
# The images carry the tags the chart renders by default: the chart's appVersion for the updater,
# the upstream release the real-peer tests run (tests/real/go.mod) for the supervisor and the
# collector, whose stand-in reports that version.
upstream=$(bash "$src/tests/real/upstream-release.sh") || exit 1
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$src/packaging/helm/myriarch-collector/Chart.yaml")
updater_repo=localhost/myriarch-updater
supervisor_repo=localhost/myriarch-stand-in-supervisor
collector_repo=localhost/myriarch-stand-in-collector
updater_image=$updater_repo:$app_version
supervisor_image=$supervisor_repo:$upstream
collector_image=$collector_repo:$upstream
release=pt
pod=$release-myriarch-collector-0
main=$pod-collector
secret=pod-test-enrollment
token=pod-test-token-$RANDOM$RANDOM
fail=0
t0=$(date +%s)
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }
step() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }
server_pid=""

remove_pod() {
    podman pod rm -f -t 0 "$pod" >/dev/null 2>&1
    # emptyDir volumes are podman's anonymous volumes: gone with the pod, as on a cluster.
}
cleanup() {
    remove_pod
    podman volume rm -f "binaries-$pod" "supervisor-storage-$pod" >/dev/null 2>&1
    podman volume rm -f "$release-myriarch-collector" "$release-myriarch-collector-trusted-root" >/dev/null 2>&1
    podman secret rm "$secret" >/dev/null 2>&1
    podman image prune -f >/dev/null 2>&1  # earlier builds of the same tags
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    [ "$fail" = 0 ] && rm -rf "$work" || echo "(kept $work)"
}
trap cleanup EXIT
cleanup_first() { fail=0; remove_pod; podman volume rm -f "binaries-$pod" "supervisor-storage-$pod" >/dev/null 2>&1;
    podman secret rm "$secret" >/dev/null 2>&1; }
cleanup_first

step "images"
bash "$src/packaging/image/build.sh" --binary "$MYRIARCH_BIN" "$updater_image" | tail -1 || { bad "updater image"; exit 1; }
mkdir -p "$work/sup" "$work/col"
cp "$MYRIARCH_FAKE_OPAMPSUPERVISOR" "$work/sup/opampsupervisor"
cp "$MYRIARCH_FAKE_OTELCOL" "$work/col/otelcol-contrib"
printf '\n#MYRIARCH-FAKE version=%s health=ok\n' "$upstream" >>"$work/col/otelcol-contrib"
podman build -q -f "$here/images/supervisor.Containerfile" -t "$supervisor_image" "$work/sup" >/dev/null &&
    podman build -q -f "$here/images/collector.Containerfile" -t "$collector_image" "$work/col" >/dev/null ||
    { bad "stand-in images"; exit 1; }
ok "images: $updater_image, $supervisor_image, $collector_image"

step "OpAMP test server on 127.0.0.1"
"$MYRIARCH_OPAMP_TEST_SERVER" --port-file "$work/opamp.port" --record "$work/opamp.jsonl" >"$work/opamp.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/opamp.port" ] && break; sleep 0.1; done
[ -s "$work/opamp.port" ] || { bad "the OpAMP test server did not start: $(cat "$work/opamp.log")"; exit 1; }
opamp_port=$(cat "$work/opamp.port")
read -r health_port sup_port col_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')

step "render the chart (standard profile, verification on, enrollment token from a Secret)"
cat >"$work/pod-values.yaml" <<YAML
# The pod test's values over tests/integration/packaging/values/container-standard.yaml: the test server on
# 127.0.0.1, free ports (the pod shares the host's network), no CA ConfigMap (plain ws:// to
# loopback), no site proxy (there is none here; integration-net-proxy runs the updater through a
# real one), and the shortest stop timeout the chart allows with its stopSignal INT (the stand-in
# stops at once on INT, so no stop waits for it).
proxy:
  url: ""
  noProxy: []
  existingSecret: ""
server:
  endpoint: ws://127.0.0.1:$opamp_port/v1/opamp
  caConfigMap: ""
  enrollmentToken:
    secretName: $secret
containerMode:
  healthPort: $health_port
  supervisorHealthPort: $sup_port
  stopTimeout: 11s
  heartbeatInterval: 5s
collectorHealthPort: $col_port
YAML
# A usable trusted root (the public-good one): with requireSignature the updater refuses to start
# without one.
"$MYR_HELM" template "$release" "$src/packaging/helm/myriarch-collector" \
    -f "$here/values/container-standard.yaml" -f "$work/pod-values.yaml" \
    --set-file containerMode.trustedRoot.json="$src/tests/data/sigstore-conformance/public-good-trusted-root.json" \
    >"$work/rendered.yaml" ||
    { bad "helm template"; exit 1; }
settings() {  # createClaims
    printf '{"repositories":{"updater":"%s","supervisor":"%s","collector":"%s"},"createClaims":%s}\n' \
        "$updater_repo" "$supervisor_repo" "$collector_repo" "$1"
}
settings true >"$work/settings1.json"
settings false >"$work/settings2.json"
meta=$(node "$here/kube_pod.mjs" "$work/rendered.yaml" "$work/play1.yaml" "$work/settings1.json") &&
    node "$here/kube_pod.mjs" "$work/rendered.yaml" "$work/play2.yaml" "$work/settings2.json" >/dev/null ||
    { bad "kube_pod.mjs"; exit 1; }
grace=$(node -e 'console.log(JSON.parse(process.argv[1]).terminationGracePeriodSeconds)' "$meta")
ok "pod $pod, terminationGracePeriodSeconds $grace"
# podman reads a secretKeyRef from a podman secret holding the Secret's data as JSON (values base64).
printf '{"token":"%s"}' "$(printf %s "$token" | base64 -w0)" | podman secret create "$secret" - >/dev/null ||
    { bad "podman secret create"; exit 1; }

vol() { podman volume inspect --format '{{.Mountpoint}}' "$1"; }
probe() {  # path -> "code body"
    curl -s -m 2 -w ' %{http_code}' "http://127.0.0.1:$health_port$1" | tr '\n' ' '
}
wait_ready() {
    for _ in $(seq 300); do
        [ "$(curl -s -m 1 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$health_port/readyz")" = 200 ] && return 0
        sleep 0.2
    done
    return 1
}
play() {  # yaml
    # --build=false and a cwd of our own: kube play otherwise builds an image from any directory
    # in the cwd named like the image (meson runs tests in the build directory, which has a file
    # myriarch-updater, and podman then fails on myriarch-updater/Containerfile).
    if ! (cd "$work" && podman kube play --build=false "$1") >"$work/play.log" 2>&1; then
        bad "podman kube play $1:"; sed 's/^/    /' "$work/play.log"; return 1
    fi
    if ! wait_ready; then
        bad "/readyz did not answer 200 within 60 s"; podman logs "$main" 2>&1 | tail -20 | sed 's/^/    /'; return 1
    fi
}
# The process tree of the main container, from the host.
main_pid() { podman inspect --format '{{.State.Pid}}' "$main"; }
proc_field() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status"; }
stop_pod() {  # label
    local start end rc
    start=$(date +%s%N)
    podman pod stop -t "$grace" "$pod" >/dev/null
    end=$(date +%s%N)
    rc=$(podman inspect --format '{{.State.ExitCode}}' "$main")
    local ms=$(( (end - start) / 1000000 ))
    [ "$rc" = 0 ] && ok "$1: the updater exited 0" || bad "$1: the updater exited $rc"
    [ "$ms" -lt $((grace * 1000)) ] && ok "$1: stopped in $ms ms (grace period $grace s)" ||
        bad "$1: stopping took $ms ms, over the grace period of $grace s"
    # The chart's containerMode.stopSignal: the supervisor's group gets INT first. The container
    # has exited, but its log may not all be readable yet: wait for the line, not for time.
    wait_log 'msg="stopping child".* signal=INT' 10 &&
        ok "$1: the supervisor got the chart's stopSignal INT" ||
        bad "$1: no 'stopping child ... signal=INT' in the updater's log within 10 s"
    grep -E 'stopping child|child exited|shutdown' "$work/main.log" | sed 's/^/    /'
}
# Waits until the main container's log holds a line matching the ERE, at most `seconds`; the log
# is left in $work/main.log. It goes to a file first and is grepped there: `podman logs | grep -q`
# ends podman logs early when grep has its match, and pipefail counts that as a miss.
wait_log() {  # ERE, seconds
    local deadline=$(( $(date +%s) + $2 ))
    while :; do
        podman logs "$main" >"$work/main.log" 2>&1
        grep -qE "$1" "$work/main.log" && return 0
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

step "first start"
play "$work/play1.yaml" || exit 1
shared=$(podman inspect --format '{{range .Mounts}}{{if eq .Destination "/shared"}}{{.Source}}{{end}}{{end}}' "$main")
# Init containers: the updater and the seed on the shared volume, written as the pod's user.
for f in myriarch-updater otelcol-contrib; do
    got=$(stat -c '%u:%g %a' "$shared/$f" 2>&1)
    [ "$got" = "10001:10001 755" ] && ok "shared volume: $f $got" || bad "shared volume: $f is '$got', expected 10001:10001 755"
done
image_root=$(podman image mount "$updater_image")
cmp -s "$shared/myriarch-updater" "$image_root/usr/local/bin/myriarch-updater" &&
    ok "the updater on the shared volume is the updater image's binary" || bad "the shared updater differs from the image's"
podman image unmount "$updater_image" >/dev/null
cmp -s "$shared/otelcol-contrib" "$work/col/otelcol-contrib" && ok "the seed is the collector image's binary" ||
    bad "the seed differs from the collector image's binary"
# PID 1, its user, its child and grandchild.
pid=$(main_pid)
nspid=$(proc_field "$pid" NSpid)
[ "${nspid##*[[:space:]]}" = 1 ] && ok "the updater is PID 1 in the container (host pid $pid)" || bad "NSpid is '$nspid'"
cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline")
[ "$cmdline" = "/shared/myriarch-updater container --config /etc/myriarch/config/updater.yaml " ] &&
    ok "PID 1: $cmdline" || bad "PID 1 runs '$cmdline'"
uids=$(proc_field "$pid" Uid | awk '{print $1":"$2}')
[ "$uids" = 10001:10001 ] && ok "PID 1 runs as uid 10001" || bad "PID 1 uids $uids"
child=$(pgrep -P "$pid" | head -1)
child_cmd=$(tr '\0' ' ' <"/proc/$child/cmdline" 2>/dev/null)
[[ "$child_cmd" == "/usr/local/bin/opampsupervisor --config=/etc/myriarch/config/supervisor.yaml "* ]] &&
    ok "child of PID 1: $child_cmd" || bad "child of PID 1 runs '$child_cmd'"
# /readyz says the supervisor runs; it starts the collector a moment later.
grandchild=""
for _ in $(seq 50); do grandchild=$(pgrep -P "$child" | head -1); [ -n "$grandchild" ] && break; sleep 0.1; done
agent_exe=$(readlink "/proc/$grandchild/exe" 2>/dev/null)
[ "$agent_exe" = "/var/lib/myriarch/collector/versions/$upstream/otelcol-contrib" ] &&
    ok "the supervisor runs the collector from the claim: $agent_exe" || bad "the supervisor's child runs '$agent_exe'"
# What podman applied of the chart's securityContext.
sec=$(podman inspect --format '{{.Config.User}} ro={{.HostConfig.ReadonlyRootfs}} {{.HostConfig.SecurityOpt}}' "$main")
[[ "$sec" == "10001:10001 ro=true "*no-new-privileges* ]] && ok "securityContext applied: $sec" || bad "securityContext: $sec"
mounts=$(podman inspect --format '{{range .Mounts}}{{.Destination}}={{.RW}} {{end}}' "$main")
for m in /shared=false /var/lib/myriarch=true /var/lib/otelcol/supervisor=true /etc/myriarch/trust=false; do
    [[ " $mounts" == *" $m "* ]] && ok "mount $m" || bad "mount $m not in: $mounts"
done
# Probes, as the kubelet would send them.
for p in /healthz /readyz; do
    answer=$(probe "$p")
    [[ "$answer" == *" 200" ]] && ok "GET $p on :$health_port -> $answer" || bad "GET $p -> $answer"
done
# Memory as the kernel counts it (docs/container-mode.md quotes these figures; the supervisor and
# the collector are stand-ins, only the updater's figure is the product's).
updater_hwm=$(proc_field "$pid" VmHWM | awk '{print $1}')
for p in "$pid" "$child" "$grandchild"; do
    echo "    memory: $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-60): VmRSS $(proc_field "$p" VmRSS), peak VmHWM $(proc_field "$p" VmHWM)"
done
[ "${updater_hwm:-999999}" -lt 32768 ] && ok "the updater's peak RSS is ${updater_hwm} kB" ||
    bad "the updater's peak RSS is ${updater_hwm} kB, over 32 MiB"
# The volume after the first start.
binaries=$(vol "binaries-$pod")
storage=$(vol "supervisor-storage-$pod")
current=$(readlink "$binaries/collector/current")
[ "$current" = "versions/$upstream" ] && ok "binaries claim: current -> $current" || bad "current -> '$current'"
cp "$binaries/collector/current/install.json" "$work/marker1.json"
cp "$storage/persistent_state.yaml" "$work/identity1.yaml" 2>/dev/null || bad "no persistent_state.yaml on the storage claim"
cp "$binaries/state/instance_uid" "$work/updater-uid1" 2>/dev/null || bad "no updater instance uid on the binaries claim"
grep -q '"source":"image"' "$work/marker1.json" && ok "marker: $(cat "$work/marker1.json")" || bad "marker: $(cat "$work/marker1.json")"
# OpAMP: the updater reached the server with the token of the chart's Secret and the pod's name.
# The first report may precede the supervisor's persistent_state.yaml; the updater samples the
# file and reports the collector's uid when it appears, so wait for that report (heartbeat 5 s).
collector_uid=$(sed -n 's/^instance_id:[[:space:]]*//p' "$work/identity1.yaml")
for _ in $(seq 100); do
    grep -q "\"dev.myriarch.collector.instance_uid\":\"$collector_uid\"" "$work/opamp.jsonl" 2>/dev/null && break
    sleep 0.2
done
node - "$work/opamp.jsonl" "$token" "$pod" "$work/identity1.yaml" "$upstream" <<'JS' || fail=1
const fs = require("fs");
const [file, token, pod, identity, upstream] = process.argv.slice(2);
const lines = fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
const open = lines.find((m) => m.event === "open");
const msg = lines.find((m) => m.event === "message" && m.non_identifying);
const collectorUid = (fs.readFileSync(identity, "utf8").match(/instance_id:\s*(\S+)/) || [])[1];
const reportsUid = lines.some((m) => m.non_identifying && m.non_identifying["dev.myriarch.collector.instance_uid"] === collectorUid);
const checks = [
  [open && open.authorization === `Bearer ${token}`, `OpAMP connection carries the Secret's token (${open && open.authorization})`],
  [msg && msg.non_identifying["host.name"] === pod, `host.name is the pod name (${msg && msg.non_identifying["host.name"]})`],
  [msg && msg.non_identifying["dev.myriarch.updater.install_method"] === "container", "install_method container"],
  [msg && msg.non_identifying["dev.myriarch.updater.image_collector_version"] === upstream, `image_collector_version ${upstream}`],
  [collectorUid && reportsUid, `collector instance uid from the storage claim (${collectorUid})`],
  [msg && msg.health && msg.health.healthy === true, `health: ${msg && JSON.stringify(msg.health && msg.health.status)}`],
];
let bad = 0;
for (const [ok, what] of checks) { console.log(`${ok ? "ok" : "FAIL"}: OpAMP: ${what}`); if (!ok) bad++; }
process.exit(bad ? 1 : 0);
JS
podman logs "$main" 2>&1 | grep -E 'seed:|child started|opamp connected' | sed 's/^/    /'
stop_pod "first stop"
podman logs "$main" >"$work/updater1.log" 2>&1

step "second start: the same claims, a new shared volume"
remove_pod
play "$work/play2.yaml" || exit 1
# (Logs go to a file first: grep -q on a pipe would end podman logs early, and pipefail would count it.)
podman logs "$main" >"$work/updater2.log" 2>&1
grep -E 'seed:|opamp agent starting' "$work/updater2.log" | sed 's/^/    /'
if grep -q 'msg="seed: active version kept"' "$work/updater2.log"; then
    ok "seeding kept the active version"
else
    bad "seeding did not keep the active version"
fi
cmp -s "$binaries/collector/current/install.json" "$work/marker1.json" && ok "install marker unchanged (no re-activation)" ||
    bad "install marker changed: $(cat "$binaries/collector/current/install.json")"
[ "$(readlink "$binaries/collector/current")" = "versions/$upstream" ] && ok "current -> versions/$upstream" || bad "current moved"
cmp -s "$storage/persistent_state.yaml" "$work/identity1.yaml" && ok "collector identity kept: $(cat "$work/identity1.yaml")" ||
    bad "the collector's identity changed"
cmp -s "$binaries/state/instance_uid" "$work/updater-uid1" && ok "updater instance uid kept" || bad "the updater's uid changed"
grep -q 'created instance uid' "$work/updater2.log" && bad "the updater created a new instance uid"
stop_pod "second stop"
echo "pod test: $(( $(date +%s) - t0 )) s"
exit $fail
