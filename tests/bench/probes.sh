#!/bin/sh
# Probe throughput of `myriarch-updater container`: wrk against /healthz on 127.0.0.1, while the
# updater supervises a child. Prints requests/s and the latency percentiles (p99 included), then
# shows the loop stays responsive: single /readyz requests timed with curl while wrk is running.
#
# Usage: tests/bench/probes.sh [BINARY]       (default: build/static/myriarch-updater)
# Environment: DURATION (default 10s), CONNECTIONS (default 32; the server caps at 64),
# THREADS (default 2), PORT (default: a free one).
# Loopback only; bounded in time; stops everything it started.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/tests/bench/updater_yaml.sh"
bin=${1:-$here/build/static/myriarch-updater}
duration=${DURATION:-10s}
conns=${CONNECTIONS:-32}
threads=${THREADS:-2}
[ -x "$bin" ] || { echo "probes.sh: $bin: not an executable (build it first)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "probes.sh: wrk is not installed" >&2; exit 2; }
port=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}

dir=$(mktemp -d /tmp/myr-probes-bench-XXXXXX)
pid=
cleanup() {
    if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

bench_idle_updater_yaml "$dir" "/bin/true" "$port"

"$bin" container --config "$dir/updater.yaml" 2>"$dir/updater.log" &
pid=$!
i=0
until curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -lt 100 ] || { echo "probes.sh: the probe server did not come up" >&2; cat "$dir/updater.log" >&2; exit 1; }
    sleep 0.1
done

echo "== wrk -t$threads -c$conns -d$duration --latency http://127.0.0.1:$port/healthz"
wrk -t"$threads" -c"$conns" -d"$duration" --latency "http://127.0.0.1:$port/healthz" > "$dir/wrk.out" &
wrk_pid=$!
sleep 2
echo "== /readyz timed with curl while wrk runs (seconds)"
for n in 1 2 3 4 5; do
    curl -s -o /dev/null -w "readyz %{http_code} in %{time_total}s\n" "http://127.0.0.1:$port/readyz"
    sleep 0.5
done
wait "$wrk_pid"
cat "$dir/wrk.out"
rps=$(awk '/Requests\/sec/ {print $2}' "$dir/wrk.out")
p99=$(awk '$1 == "99%" {print $2}' "$dir/wrk.out")
rss=$(awk '/VmHWM/ {print $2, $3}' "/proc/$pid/status")
echo "== summary: requests/s $rps, p99 $p99, updater peak RSS $rss"
kill -0 "$pid" || { echo "probes.sh: the updater died under load" >&2; exit 1; }
