#!/bin/sh
# The cost of /metrics (docs/metrics.md, "Budgets"): one render on the loop, and what scraping
# does to the updater over time.
#  1. metrics_bench: 1000 renders of the registry with the scrape-time readings (/proc/self,
#     statvfs), median and max: the loop time a scrape costs beyond the HTTP exchange;
#  2. the running binary (`container`, a sleeping child): 10 000 GET /metrics over one keep-alive
#     connection, the client-side latency (median, p99, max) and VmRSS before and after (after
#     100 scrapes of warm-up, so that the buffers are at their size).
#
# Usage: tests/bench/metrics.sh [BUILD_DIR]       (default: build)
# Environment: SCRAPES (default 10000), RENDERS (default 1000), PORT (default: a free one).
# Loopback only; bounded in time; stops everything it started.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/tests/bench/updater_yaml.sh"
build=$(cd "${1:-$here/build}" && pwd)
bin=$build/myriarch-updater
bench=$build/tests/bench/metrics_bench
seed=$build/tests/fakes/fake-otelcol  # prints a version: the seed the volume starts from
for f in "$bin" "$bench" "$seed"; do
    [ -x "$f" ] || { echo "metrics.sh: $f: not built (ninja -C $build)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "metrics.sh: python3 is not installed" >&2; exit 2; }
port=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}

dir=$(mktemp -d /tmp/myr-metrics-bench-XXXXXX)
pid=
cleanup() {
    if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

echo "== 1. render on the loop: $bench $dir ${RENDERS:-1000}"
"$bench" "$dir" "${RENDERS:-1000}"

bench_idle_updater_yaml "$dir" "$seed" "$port"

"$bin" container --config "$dir/updater.yaml" 2>"$dir/updater.log" &
pid=$!
python3 - "$port" "$pid" "${SCRAPES:-10000}" <<'PY' || { cat "$dir/updater.log" >&2; exit 1; }
import http.client, sys, time

port, pid, scrapes = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

def rss_kib():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

deadline = time.monotonic() + 10
while True:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read()
        if r.status == 200:
            break
    except OSError:
        pass
    if time.monotonic() > deadline:
        sys.exit("metrics.sh: /metrics did not answer 200 within 10 s (see the updater log)")
    time.sleep(0.1)
for _ in range(100):
    c.request("GET", "/metrics")
    c.getresponse().read()
before = rss_kib()
ms = []
for _ in range(scrapes):
    t0 = time.perf_counter()
    c.request("GET", "/metrics")
    r = c.getresponse()
    r.read()
    ms.append((time.perf_counter() - t0) * 1000)
    if r.status != 200:
        sys.exit(f"metrics.sh: a scrape answered {r.status}")
after = rss_kib()
ms.sort()
print(f"== 2. {scrapes} scrapes of the running binary over one connection ({len(body)} bytes)")
print(f"latency at the client: median {ms[len(ms) // 2]:.3f} ms, p99 {ms[len(ms) * 99 // 100]:.3f}"
      f" ms, max {ms[-1]:.3f} ms")
print(f"VmRSS: {before} KiB before, {after} KiB after ({after - before:+d} KiB)")
PY
kill -0 "$pid" || { echo "metrics.sh: the updater died" >&2; cat "$dir/updater.log" >&2; exit 1; }
