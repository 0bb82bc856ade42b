#!/bin/bash
# Benchmark of a whole install through the real binary: the updater runs as PID 1 of a new PID
# namespace (as in a pod), the OpAMP test server offers a SIZE_MB tar.gz release served over https
# on loopback, and the time from the offer to the Installed report is measured. The baseline does
# the same work with the usual tools, side by side in one run: `curl` + `sha256sum` + `tar xzf` +
# `sync` of the same archive from the same server.
#
# Usage: tests/bench/install.sh [BUILD_DIR]        (default: build/static)
# Environment: ROUNDS (default 3), SIZE_MB (default 200), SMALL_MB (default 20), BENCH_DIR
# (default: a new dir under /var/tmp; removed at the end unless KEEP=1).
#
# The release is fake-otelcol grown to SIZE_MB by random bytes put before its trailer (which must
# stay last, as Rig::image does with zeros): random bytes do not compress, so the archive really is
# SIZE_MB and the download, the digest and the inflate all move SIZE_MB. Health rounds are
# 1 x 10 ms (config refuses 0) with no health URL: a round passes when the supervisor runs, so the
# figure is the pipeline, not the collector's start-up. Needs root (unshare --pid), curl, openssl,
# python3.
#
# Prints each round, the medians and the ratio updater/baseline (goal <= 1.3), the updater's peak
# RSS (VmHWM at Installed) at SMALL_MB and at SIZE_MB (goal <= 8 MB and flat), and /healthz
# latency probed every 20 ms during each install (goal p99 < 100 ms). Exit 1 when an install
# fails or the RSS goal is missed.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build/static}
updater=$build/myriarch-updater
fake_otelcol=$build/tests/fakes/fake-otelcol
fake_supervisor=$build/tests/fakes/fake-opampsupervisor
server=$build/tests/servers/opamp-test-server
size_mb=${SIZE_MB:-200} small_mb=${SMALL_MB:-20} rounds=${ROUNDS:-3}
for f in "$updater" "$fake_otelcol" "$fake_supervisor" "$server"; do
    [ -x "$f" ] || { echo "install.sh: $f: not built (ninja -C $build)" >&2; exit 2; }
done
for c in curl openssl python3 sha256sum tar unshare; do
    command -v $c >/dev/null || { echo "install.sh: $c is not installed" >&2; exit 2; }
done

. "$here/tests/bench/install_bench.sh"
bench_workdir install-bench
mkdir -p "$base/art" "$base/pki"

. "$here/tests/bench/loopback_ca.sh"
. "$here/tests/bench/updater_yaml.sh"
loopback_ca "$base/pki"

big_hex=$(bench_release "$fake_otelcol" "$size_mb" 0.117.0 "rel-$size_mb.tar.gz")
small_hex=$(bench_release "$fake_otelcol" "$small_mb" 0.117.0 "rel-$small_mb.tar.gz")
bench_seed "$fake_otelcol"
bench_https_artifacts

now() { date +%s.%N; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }


# One install of art/NAME (hex) through a fresh updater; appends "seconds hwm_kb healthz-line"
# to $base/u.out.
run_updater() { # name hex
    local d=$base/run
    rm -rf "$d"; mkdir -p "$d/install" "$d/state" "$d/storage"
    touch "$d/effective.yaml" "$d/cmds"
    "$server" --port 0 --port-file "$d/oport" --record "$d/rec.jsonl" --commands "$d/cmds" \
        > "$d/server.log" 2>&1 &
    local server_pid=$!
    pids+=($server_pid)
    bench_wait_file "$d/oport" "the OpAMP test server did not start"
    local hport=$((20000 + RANDOM % 10000))
    printf 'name=otelcol-contrib\nversion=0.117.0\nurl=%s%s\nsha256=%s\n' "$prefix" "$1" "$2" \
        > "$d/release.txt"
    bench_updater_yaml "$d" "ws://127.0.0.1:$(cat "$d/oport")/v1/opamp" "$prefix" "$base/seed" \
        "$fake_supervisor" 10ms "127.0.0.1:$hport" "server: caFile: $base/pki/ca.pem"
    unshare --pid --fork --mount-proc "$updater" container --config "$d/updater.yaml" \
        > "$d/up.out" 2> "$d/up.log" &
    local unshare_pid=$!
    pids+=($unshare_pid)
    # Connected and reported: the first AgentToServer is in the record.
    local i=0
    until grep -q '"event":"message"' "$d/rec.jsonl" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 200 ] || { echo "install.sh: the updater did not connect: $(tail -3 "$d/up.log")" >&2; exit 1; }
        sleep 0.1
    done
    local pid1
    pid1=$(cut -d' ' -f1 "/proc/$unshare_pid/task/$unshare_pid/children")
    # unshare does not pass a TERM on: the cleanup must reach the updater itself.
    pids+=("$pid1")
    rm -f "$d/stop"
    python3 "$here/tests/bench/healthz_probe.py" "$hport" "$d/stop" > "$d/hz.out" &
    local probe_pid=$!
    local secs
    secs=$(bench_offer_and_wait "$d") || { echo "install.sh: the install failed; updater log:" >&2; grep -E 'update:|level=(warn|error)' "$d/up.log" | tail -5 >&2; exit 1; }
    touch "$d/stop"
    wait "$probe_pid"
    local hwm
    hwm=$(awk '/^VmHWM:/ { print $2 }' /proc/$pid1/status)
    kill -TERM "$pid1"
    wait "$unshare_pid" || true
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    echo "$secs $hwm $(cat "$d/hz.out")" > "$base/u.out"
}

run_baseline() { # name hex
    rm -rf "$base/curl.out" "$base/x"; mkdir -p "$base/x"
    curl -sS --cacert "$base/pki/ca.pem" -o "$base/curl.out" "$prefix$1"
    got=$(sha256sum "$base/curl.out" | cut -d' ' -f1)
    [ "$got" = "$2" ] || { echo "install.sh: curl got $got, expected $2" >&2; exit 1; }
    tar xzf "$base/curl.out" -C "$base/x"
    sync
}

echo "install.sh: ${size_mb} MB tar.gz over https on 127.0.0.1, $rounds rounds"
: > "$base/u.times"; : > "$base/b.times"; : > "$base/hwm"; : > "$base/hz"
r=1
while [ "$r" -le "$rounds" ]; do
    run_updater "rel-$size_mb.tar.gz" "$big_hex"
    read -r u hwm hz < "$base/u.out"
    t0=$(now); run_baseline "rel-$size_mb.tar.gz" "$big_hex"; t1=$(now)
    b=$(echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }')
    echo "round $r: updater ${u}s (VmHWM ${hwm} KB; $hz)  curl+sha256sum+tar+sync ${b}s"
    echo "$u" >> "$base/u.times"; echo "$b" >> "$base/b.times"; echo "$hwm" >> "$base/hwm"
    echo "$hz" | sed -n 's/.*p99 \([0-9.]*\) ms.*/\1/p' >> "$base/hz"
    r=$((r + 1))
done
run_updater "rel-$small_mb.tar.gz" "$small_hex"
read -r su small_hwm shz < "$base/u.out"
echo "${small_mb} MB: updater ${su}s (VmHWM ${small_hwm} KB; $shz)"
um=$(median < "$base/u.times"); bm=$(median < "$base/b.times")
big_hwm=$(sort -n "$base/hwm" | tail -n 1)
echo "median: updater ${um}s, baseline ${bm}s"
echo "ratio updater/baseline: $(echo "$um $bm" | awk '{ printf "%.2f", $1 / $2 }') (goal <= 1.3)"
echo "peak RSS (VmHWM): ${small_hwm} KB at ${small_mb} MB, ${big_hwm} KB at ${size_mb} MB (goal <= 8192 KB, flat)"
echo "/healthz p99 during the installs: worst round $(sort -n "$base/hz" | tail -n 1) ms (goal < 100 ms)"
[ "$big_hwm" -le 8192 ] && [ "$small_hwm" -le 8192 ] || { echo "install.sh: RSS over 8 MB" >&2; exit 1; }
