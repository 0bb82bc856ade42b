#!/bin/sh
# Benchmark of a store activation (copy into .staging hashed while copying, fsync, hash check,
# marker, rename, `current` switch, directory fsyncs, journal writes) against `cp` + `sha256sum` +
# `sync` of the same file, side by side, through the volume driver (the store code of the product).
#
# Usage: tests/bench/activate.sh [DRIVER]   (default: build/tests/integration/volume/volume-driver)
# Environment: ROUNDS (default 5), SIZE_MB (default 300), BENCH_DIR (default: a new dir under
# /var/tmp, on a disk rather than a tmpfs). The source is read into the page cache before every run
# so both contenders start equal; the rounds alternate which one goes first.
#
# Prints every round, the medians, the ratio activate/baseline (goal <= 1.0, issue 13) and the
# peak RSS of an activation (limit 8 MB, at 300 MB and at a tenth of the size: it must not grow
# with the file).
# Exit 1 when the RSS limit is exceeded or an activated binary is wrong; the ratio is reported, not
# enforced (shared machines).
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
drv=${1:-$here/build/tests/integration/volume/volume-driver}
rounds=${ROUNDS:-5}
size_mb=${SIZE_MB:-300}
[ -x "$drv" ] || { echo "activate.sh: $drv: not an executable (build it first)" >&2; exit 2; }
case "$drv" in /*) ;; *) drv=$(pwd)/$drv ;; esac

base=${BENCH_DIR:-}
if [ -z "$base" ]; then base=$(mktemp -d /var/tmp/myr-activate-bench-XXXXXX); fi
trap 'rm -rf "$base"' EXIT INT TERM
src=$base/src.bin

now() { date +%s.%N; }

level() {
    sync
    cat "$src" > /dev/null
}

# A fresh volume per run: the same version activated twice would reuse the first copy.
run_activate() {
    rm -rf "$base/vol"; mkdir -p "$base/vol"
    level
    t0=$(now)
    "$drv" --install-dir "$base/vol/collector" --state-dir "$base/vol/state" activate \
        --file "$src" --version 0.117.0 --sha256 "$expected" > /dev/null 2>&1
    t1=$(now)
    echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }'
}

run_baseline() {
    rm -rf "$base/cp"
    mkdir -p "$base/cp"
    level
    t0=$(now)
    cp "$src" "$base/cp/bin"
    sha256sum "$base/cp/bin" > /dev/null
    sync
    t1=$(now)
    echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }'
}

peak_rss() {
    rm -rf "$base/vol"; mkdir -p "$base/vol"
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -f '%M' "$drv" --install-dir "$base/vol/collector" --state-dir \
            "$base/vol/state" activate --file "$1" --version 0.117.0 --sha256 "$2" 2>&1 >/dev/null |
            tail -n 1
    else
        "$drv" --install-dir "$base/vol/collector" --state-dir "$base/vol/state" activate \
            --file "$1" --version 0.117.0 --sha256 "$2" > /dev/null 2>&1 &
        pid=$!
        rss=0
        while kill -0 "$pid" 2>/dev/null; do
            v=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
            [ -n "$v" ] && rss=$v
            sleep 0.01
        done
        wait "$pid"
        echo "$rss"
    fi
}

echo "creating a ${size_mb} MB source file in $base"
head -c "$((size_mb * 1024 * 1024))" /dev/urandom > "$src"
expected=$(sha256sum < "$src" | cut -d' ' -f1)

run_activate > /dev/null
run_baseline > /dev/null

act_times=""
base_times=""
i=1
while [ "$i" -le "$rounds" ]; do
    if [ $((i % 2)) -eq 1 ]; then
        a=$(run_activate); b=$(run_baseline)
    else
        b=$(run_baseline); a=$(run_activate)
    fi
    printf 'round %d: activate %6.3fs   cp+sha256sum+sync %6.3fs\n' "$i" "$a" "$b"
    act_times="$act_times $a"
    base_times="$base_times $b"
    i=$((i + 1))
done

status=0
got=$(sha256sum < "$base/vol/collector/current/otelcol-contrib" | cut -d' ' -f1)
if [ "$got" != "$expected" ]; then echo "FAIL: the activated binary differs" >&2; status=1; fi

median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m_act=$(median $act_times)
m_base=$(median $base_times)
ratio=$(echo "$m_act $m_base" | awk '{ printf "%.2f", $1 / $2 }')

rss_big=$(peak_rss "$src" "$expected")
small=$base/small.bin
head -c "$((size_mb * 1024 * 1024 / 10))" "$src" > "$small"
rss_small=$(peak_rss "$small" "$(sha256sum < "$small" | cut -d' ' -f1)")

echo "median: activate ${m_act}s   cp+sha256sum+sync ${m_base}s   ratio ${ratio} (goal <= 1.0)"
echo "peak RSS of an activation: ${rss_big} kB at ${size_mb} MB, ${rss_small} kB at $((size_mb / 10)) MB (limit 8192 kB)"
for r in "$rss_big" "$rss_small"; do
    if [ "$r" -gt 8192 ]; then echo "FAIL: peak RSS above 8 MB" >&2; status=1; fi
done
exit $status
