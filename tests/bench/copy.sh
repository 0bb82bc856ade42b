#!/bin/sh
# Benchmark of `myriarch-updater copy` against `cp` + `sync` on a 300 MB file, side by side.
#
# Usage: tests/bench/copy.sh [BINARY]        (default: build/static/myriarch-updater)
# Environment: ROUNDS (default 5), SIZE_MB (default 300), BENCH_DIR (default: a new dir under
# /var/tmp, on a disk rather than a tmpfs), DROP_CACHES=1 to drop the page cache before every run
# (root; slower, affects the whole machine). Without it the source is read into the cache before
# every run, so both contenders start equal.
#
# Both produce a durable copy: `copy` fsyncs its file and the directory, `cp` is followed by `sync`.
# The rounds alternate which one goes first. Prints every round, the medians, the ratio copy/cp
# (below 1.0: copy is faster) and the peak RSS of `copy` (must stay under 4 MB). Exit 1 when the
# RSS limit is exceeded or a copy is wrong; the ratio is reported, not enforced (shared machines).
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$here/build/static/myriarch-updater}
rounds=${ROUNDS:-5}
size_mb=${SIZE_MB:-300}
[ -x "$bin" ] || { echo "copy.sh: $bin: not an executable (build it first)" >&2; exit 2; }
case "$bin" in /*) ;; *) bin=$(pwd)/$bin ;; esac

base=${BENCH_DIR:-}
if [ -z "$base" ]; then base=$(mktemp -d /var/tmp/myr-copy-bench-XXXXXX); fi
trap 'rm -rf "$base"' EXIT INT TERM
src=$base/src.bin
mkdir -p "$base/out"

now() { date +%s.%N; }

# Removes the file the next run writes (both contenders create a new file) and levels the cache.
prepare() {
    rm -f "$1"
    sync
    if [ "${DROP_CACHES:-0}" = 1 ]; then
        echo 3 > /proc/sys/vm/drop_caches
    else
        cat "$src" > /dev/null
    fi
}

run_copy() {
    prepare "$base/out/a"
    t0=$(now)
    "$bin" copy "$src" "$base/out/a"
    t1=$(now)
    echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }'
}

run_cp() {
    prepare "$base/out/b"
    t0=$(now)
    cp "$src" "$base/out/b"
    sync
    t1=$(now)
    echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }'
}

echo "creating a ${size_mb} MB source file in $base"
head -c "$((size_mb * 1024 * 1024))" /dev/urandom > "$src"
expected=$(sha256sum < "$src" | cut -d' ' -f1)

# One uncounted run of each: the first write after creating the source pays for flushing it.
run_copy > /dev/null
run_cp > /dev/null

copy_times=""
cp_times=""
i=1
while [ "$i" -le "$rounds" ]; do
    if [ $((i % 2)) -eq 1 ]; then
        a=$(run_copy); b=$(run_cp)
    else
        b=$(run_cp); a=$(run_copy)
    fi
    printf 'round %d: copy %6.3fs   cp+sync %6.3fs\n' "$i" "$a" "$b"
    copy_times="$copy_times $a"
    cp_times="$cp_times $b"
    i=$((i + 1))
done

status=0
for f in a b; do
    got=$(sha256sum < "$base/out/$f" | cut -d' ' -f1)
    if [ "$got" != "$expected" ]; then echo "FAIL: out/$f differs from the source" >&2; status=1; fi
done

median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m_copy=$(median $copy_times)
m_cp=$(median $cp_times)
ratio=$(echo "$m_copy $m_cp" | awk '{ printf "%.2f", $1 / $2 }')
mbps=$(echo "$m_copy $size_mb" | awk '{ printf "%.0f", $2 / $1 }')

# Peak RSS of one more copy run (kB): /usr/bin/time when present, else VmHWM polled from /proc.
rm -f "$base/out/a"
if [ -x /usr/bin/time ]; then
    rss=$(/usr/bin/time -f '%M' "$bin" copy "$src" "$base/out/a" 2>&1 >/dev/null | tail -n 1)
else
    "$bin" copy "$src" "$base/out/a" &
    pid=$!
    rss=0
    while kill -0 "$pid" 2>/dev/null; do
        v=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
        [ -n "$v" ] && rss=$v
        sleep 0.01
    done
    wait "$pid"
fi

echo "median: copy ${m_copy}s (${mbps} MB/s)   cp+sync ${m_cp}s   ratio copy/cp ${ratio}"
echo "peak RSS of copy: ${rss} kB (limit 4096 kB)"
if [ "$rss" -gt 4096 ]; then echo "FAIL: peak RSS above 4 MB" >&2; status=1; fi
exit $status
