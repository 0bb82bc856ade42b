#!/bin/bash
# The start jitter for a fleet, through the real binary (issue 23): FLEET updaters, each PID 1 of
# its own PID namespace with its own volume, state and supervisor storage, all connected to one
# OpAMP test server and offered the same release in the same instant (`all:release=FILE` on the
# server's command file); one artifact server serves it over http on loopback and records when
# each request arrives. Prints the first and last request after the offer, a histogram by 2 s
# buckets, how many installs ended Installed, and the updaters' peak RSS and CPU time.
#
# Usage: tests/bench/fleet.sh [BUILD_DIR]          (default: build)
# Environment: FLEET (default 100), JITTER (update.startJitter in seconds, default 20), BENCH_DIR
# (default: a new dir under /var/tmp; removed at the end unless KEEP=1; JITTER=off writes no
# startJitter, for an updater built before it, and checks against a 20 s window), CHECK=1 (exit 1
# unless the requests spread: see below). Needs root (unshare --pid), python3.
#
# It runs 3 × FLEET processes (updater, stand-in supervisor, stand-in collector) for about JITTER
# plus 15 s (100 updaters: 35 s on 2 cores). Exit 1 when an updater does not connect or an install
# does not end Installed. With CHECK=1 (meson test `integration-update-fleet`) also when fewer
# requests than updaters arrived, or they span less than half the window, or one 2 s bucket holds
# more than 3 times its share: bounds that uniform draws miss with a probability near 1e-8 for
# 100 updaters over 20 s, and that a fleet starting together fails at once.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/tests/bench/updater_yaml.sh"
build=${1:-$here/build}
updater=$build/myriarch-updater
fake_otelcol=$build/tests/fakes/fake-otelcol
fake_supervisor=$build/tests/fakes/fake-opampsupervisor
server=$build/tests/servers/opamp-test-server
fleet=${FLEET:-100} jitter=${JITTER:-20}
window=$jitter jitter_line="update: startJitter: ${jitter}s"
if [ "$jitter" = off ]; then window=20 jitter_line=""; fi
for f in "$updater" "$fake_otelcol" "$fake_supervisor" "$server"; do
    [ -x "$f" ] || { echo "fleet.sh: $f: not built (ninja -C $build)" >&2; exit 2; }
done
for c in python3 unshare sha256sum tar; do
    command -v $c >/dev/null || { echo "fleet.sh: $c is not installed" >&2; exit 2; }
done

if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
    echo "MYR-SKIP: fleet.sh: cannot make a PID namespace here (unshare --pid needs root)"
    exit 77
fi

base=${BENCH_DIR:-}
if [ -z "$base" ]; then base=$(mktemp -d /var/tmp/myr-fleet-bench-XXXXXX); fi
pids=()
pid1s=()
cleanup() {
    for p in "${pid1s[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ "${KEEP:-0}" = 1 ] || rm -rf "$base"
}
trap cleanup EXIT INT TERM
mkdir -p "$base/art" "$base/rel"

wait_for() { # seconds why command...: polls the command every 100 ms
    local limit=$(($1 * 10)) why=$2 i=0
    shift 2
    until "$@"; do
        i=$((i + 1)); [ $i -lt $limit ] || { echo "fleet.sh: $why" >&2; exit 1; }
        sleep 0.1
    done
}

# The seed (0.116.0) and the release (0.117.0), stand-in collectors that pass their health.
cp "$fake_otelcol" "$base/seed"
printf '\n#MYRIARCH-FAKE version=0.116.0 health=ok\n' >> "$base/seed"
cp "$fake_otelcol" "$base/rel/otelcol-contrib"
printf '\n#MYRIARCH-FAKE version=0.117.0 health=ok\n' >> "$base/rel/otelcol-contrib"
chmod 755 "$base/seed" "$base/rel/otelcol-contrib"
tar czf "$base/art/v117.tar.gz" -C "$base/rel" otelcol-contrib
hex=$(sha256sum "$base/art/v117.tar.gz" | cut -d' ' -f1)

python3 "$here/tests/servers/artifact_server.py" --dir "$base/art" --port-file "$base/aport" \
    --stats "$base/stats.json" > "$base/artifact.log" 2>&1 &
pids+=($!)
wait_for 20 "the artifact server did not start" test -s "$base/aport"
prefix=http://127.0.0.1:$(cat "$base/aport")/artifacts/

touch "$base/cmds"
"$server" --port 0 --port-file "$base/oport" --record "$base/rec.jsonl" --commands "$base/cmds" \
    > "$base/server.log" 2>&1 &
pids+=($!)
wait_for 20 "the OpAMP test server did not start" test -s "$base/oport"
printf 'name=otelcol-contrib\nversion=0.117.0\nurl=%sv117.tar.gz\nsha256=%s\n' "$prefix" "$hex" \
    > "$base/release.txt"

echo "fleet.sh: $fleet updaters, startJitter ${jitter}${jitter_line:+s}, a $(stat -c %s "$base/art/v117.tar.gz")-byte release over http on 127.0.0.1"
for i in $(seq 1 "$fleet"); do
    d=$base/u$i
    mkdir -p "$d/install" "$d/state" "$d/storage"
    touch "$d/effective.yaml"
    bench_updater_yaml "$d" "ws://127.0.0.1:$(cat "$base/oport")/v1/opamp" "$prefix" "$base/seed" \
        "$fake_supervisor" 100ms "" ${jitter_line:+"$jitter_line"}
    unshare --pid --fork --mount-proc "$updater" container --config "$d/updater.yaml" \
        > "$d/up.out" 2> "$d/up.log" &
    pids+=($!)
    echo $! > "$d/unshare.pid"
done

# Every updater connected: as many connections that sent a message as updaters.
connected() {
    local n
    n=$(python3 -c '
import json, sys
conns = set()
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("event") == "message": conns.add(r["conn"])
print(len(conns))' "$base/rec.jsonl" 2>/dev/null || echo 0)
    [ "$n" -ge "$fleet" ]
}
wait_for 180 "not every updater connected" connected
for i in $(seq 1 "$fleet"); do
    u=$(cat "$base/u$i/unshare.pid")
    pid1s+=("$(cut -d' ' -f1 "/proc/$u/task/$u/children")")
done

# The offer to all at once, timed by the clock the artifact server stamps its requests with.
offered=$(python3 -c 'import time; print("%.6f" % time.time())')
echo "all:release=$base/release.txt" >> "$base/cmds"

installed() {
    local n
    n=$(python3 -c '
import json, sys
done = set()
for line in open(sys.argv[1]):
    r = json.loads(line)
    for p in (r.get("package_statuses") or {}).get("packages", []):
        if p["status"] == "Installed" and p["agent_has_version"] == "0.117.0": done.add(r["conn"])
        if p["status"] == "InstallFailed": sys.exit("InstallFailed: " + p["error_message"])
print(len(done))' "$base/rec.jsonl") || exit 1
    [ "$n" -ge "$fleet" ]
}
wait_for 600 "not every install ended Installed" installed

# Peak RSS and CPU time (user + system) of each updater, PID 1 of its namespace.
tck=$(getconf CLK_TCK)
for p in "${pid1s[@]}"; do
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$p/status")
    cpu=$(awk -v t="$tck" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$p/stat")
    echo "$hwm $cpu"
done > "$base/usage"

python3 - "$base/stats.json" "$offered" "$fleet" "$base/usage" "$window" "${CHECK:-0}" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
t0 = float(sys.argv[2])
fleet = int(sys.argv[3])
window = float(sys.argv[5])
times = sorted(r["t"] - t0 for r in stats["requests"] if r["path"].startswith("/artifacts/"))
print("requests: %d for %d updaters; first %.2f s, last %.2f s after the offer"
      % (len(times), fleet, times[0], times[-1]))
buckets = {}
for t in times:
    buckets[int(t // 2)] = buckets.get(int(t // 2), 0) + 1
print("by 2 s: " + "; ".join("%d-%ds: %d" % (2 * b, 2 * b + 2, buckets.get(b, 0))
                             for b in range(0, int(times[-1] // 2) + 1)))
print("busiest second: %d requests" % max(
    sum(1 for t in times if s <= t < s + 1) for s in range(0, int(times[-1]) + 1)))
usage = [l.split() for l in open(sys.argv[4])]
hwm = sorted(int(u[0]) for u in usage)
cpu = sorted(float(u[1]) for u in usage)
print("updater peak RSS (VmHWM): median %d KB, max %d KB; CPU time: median %.2f s, max %.2f s, total %.1f s"
      % (hwm[len(hwm) // 2], hwm[-1], cpu[len(cpu) // 2], cpu[-1], sum(cpu)))
if sys.argv[6] == "1":
    share = fleet / max(1.0, window / 2)
    problems = []
    if len(times) != fleet:
        problems.append("%d requests for %d updaters" % (len(times), fleet))
    if times[-1] - times[0] < window / 2:
        problems.append("the requests span %.2f s, under half the %g s window"
                        % (times[-1] - times[0], window))
    if max(buckets.values()) > 3 * share:
        problems.append("a 2 s bucket holds %d requests, over 3 times its share of %.1f"
                        % (max(buckets.values()), share))
    if problems:
        sys.exit("fleet.sh: " + "; ".join(problems))
    print("fleet.sh: the requests spread over the window")
PY
