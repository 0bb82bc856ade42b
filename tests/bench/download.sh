#!/bin/sh
# Benchmark of the downloader: SIZE_MB (default 200) over https on loopback into the spool
# (download-driver: the real HttpDownloader, SHA-256 while writing, fsync, rename) against
# `curl -o` + `sha256sum` + `sync` of the same file from the same server, side by side in one run.
#
# Usage: tests/bench/download.sh [BUILD_DIR]        (default: build/static)
# Environment: ROUNDS (default 3), SIZE_MB (default 200), SMALL_MB (default 20), BENCH_DIR
# (default: a new dir under /var/tmp).
#
# The server is tests/servers/artifact_server.py (python's ssl, 1 MiB writes) with a CA made by
# openssl here; both contenders fetch from it, so its speed bounds both alike. Each run is timed
# in wall-clock seconds and in CPU seconds of the contender (the server excluded). Prints every round, the medians, the ratio driver/baseline (goal <= 1.1),
# the driver's peak RSS at SMALL_MB and at SIZE_MB (goal <= 8 MB and the same at both), and the
# loop lag the driver measured with a 10 ms timer on the downloader's loop (p99 and max: how long
# a /healthz answer would have waited for the loop). Exit 1 when the RSS goal is missed.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build/static}
rounds=${ROUNDS:-3}
size_mb=${SIZE_MB:-200}
small_mb=${SMALL_MB:-20}
driver=$build/tests/servers/download-driver
[ -x "$driver" ] || { echo "download.sh: $driver: not built (ninja -C $build tests/servers/download-driver)" >&2; exit 2; }
for c in curl openssl python3 sha256sum; do
    command -v $c >/dev/null || { echo "download.sh: $c is not installed" >&2; exit 2; }
done

base=${BENCH_DIR:-}
if [ -z "$base" ]; then base=$(mktemp -d /var/tmp/myr-download-bench-XXXXXX); fi
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$base"
}
trap cleanup EXIT INT TERM
mkdir -p "$base/files" "$base/pki"

. "$here/tests/bench/loopback_ca.sh"
loopback_ca "$base/pki"

head -c $((size_mb * 1000000)) /dev/urandom > "$base/files/big.bin"
head -c $((small_mb * 1000000)) /dev/urandom > "$base/files/small.bin"
big_hex=$(sha256sum "$base/files/big.bin" | cut -d' ' -f1)
small_hex=$(sha256sum "$base/files/small.bin" | cut -d' ' -f1)

wait_file() { # file why: waits up to 10 s for a non-empty file
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1)); [ $i -lt 100 ] || { echo "download.sh: $2" >&2; exit 1; }
        sleep 0.1
    done
}

python3 "$here/tests/servers/artifact_server.py" --dir "$base/files" --port-file "$base/port" \
    --tls-cert "$base/pki/server.pem" --tls-key "$base/pki/server.key" --chunk 1048576 &
server_pid=$!
wait_file "$base/port" "the server did not start"
port=$(cat "$base/port")
prefix=https://127.0.0.1:$port/artifacts/

now() { date +%s.%N; }

# download-driver into a fresh spool; prints its JSON line.
run_driver() { # name hex
    rm -rf "$base/state"; mkdir -p "$base/state"
    "$driver" --state "$base/state" --url "$prefix$1" --hash "$2" --prefix "$prefix" \
        --ca "$base/pki/ca.pem" --max 2000000000
}

run_baseline() { # name hex
    rm -f "$base/curl.out"
    curl -sS --cacert "$base/pki/ca.pem" -o "$base/curl.out" "$prefix$1"
    got=$(sha256sum "$base/curl.out" | cut -d' ' -f1)
    sync
    [ "$got" = "$2" ] || { echo "download.sh: curl got $got, expected $2" >&2; exit 1; }
}

field() { # json key
    printf '%s' "$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p" | tr -d '"'
}

wall() { awk '{ printf "%.3f", $2 - $1 }'; }
cpu() { awk '{ split($3, u, "m"); split($4, s, "m"); printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }'; }

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "download.sh: ${size_mb} MB over https on 127.0.0.1:$port, $rounds rounds"
: > "$base/d.times"; : > "$base/b.times"; : > "$base/d.cpu"; : > "$base/b.cpu"; : > "$base/lag"; : > "$base/lagmax"; : > "$base/rss"
r=1
while [ $r -le "$rounds" ]; do
    # CPU seconds (user + system of the children, from `times`) next to the wall clock: on a
    # shared machine the wall clock also counts waiting for a core. The server is no child here.
    ( t0=$(now); run_driver big.bin "$big_hex" > "$base/d.out"; t1=$(now); times > "$base/t"
      echo "$t0 $t1 $(tail -n 1 "$base/t")" ) > "$base/d.raw"
    out=$(cat "$base/d.out")
    [ "$(field "$out" ok)" = "true" ] || { echo "download.sh: driver failed: $out" >&2; exit 1; }
    [ "$(field "$out" sha256)" = "$big_hex" ] || { echo "download.sh: wrong hash: $out" >&2; exit 1; }
    ( t0=$(now); run_baseline big.bin "$big_hex"; t1=$(now); times > "$base/t"
      echo "$t0 $t1 $(tail -n 1 "$base/t")" ) > "$base/b.raw"
    d=$(wall < "$base/d.raw"); dc=$(cpu < "$base/d.raw")
    b=$(wall < "$base/b.raw"); bc=$(cpu < "$base/b.raw")
    echo "round $r: driver ${d}s (cpu ${dc}s)  curl+sha256sum+sync ${b}s (cpu ${bc}s)  rss $(field "$out" peak_rss_kb) KB  lag p99 $(field "$out" lag_p99_ms) ms max $(field "$out" lag_max_ms) ms"
    echo "$d" >> "$base/d.times"; echo "$b" >> "$base/b.times"
    echo "$dc" >> "$base/d.cpu"; echo "$bc" >> "$base/b.cpu"
    echo "$(field "$out" lag_p99_ms)" >> "$base/lag"
    echo "$(field "$out" lag_max_ms)" >> "$base/lagmax"
    echo "$(field "$out" peak_rss_kb)" >> "$base/rss"
    r=$((r + 1))
done
dm=$(median < "$base/d.times"); bm=$(median < "$base/b.times")
big_rss=$(sort -n "$base/rss" | tail -n 1)
small_out=$(run_driver small.bin "$small_hex")
small_rss=$(field "$small_out" peak_rss_kb)
echo "median: driver ${dm}s ($(echo "$size_mb $dm" | awk '{ printf "%.0f", $1 / $2 }') MB/s), baseline ${bm}s ($(echo "$size_mb $bm" | awk '{ printf "%.0f", $1 / $2 }') MB/s)"
dcm=$(median < "$base/d.cpu"); bcm=$(median < "$base/b.cpu")
echo "ratio driver/baseline: wall $(echo "$dm $bm" | awk '{ printf "%.2f", $1 / $2 }') (goal <= 1.1), cpu $(echo "$dcm $bcm" | awk '{ printf "%.2f", $1 / $2 }') (${dcm}s / ${bcm}s)"
echo "peak RSS: ${small_rss} KB at ${small_mb} MB, ${big_rss} KB at ${size_mb} MB (goal <= 8192 KB, flat)"
echo "loop lag (10 ms timer on the download loop): p99 median $(median < "$base/lag") ms, max $(sort -n "$base/lagmax" | tail -n 1) ms"
# /healthz of the product's probe server on the download's loop, probed from outside during one
# more download of the big file.
rm -rf "$base/state"; mkdir -p "$base/state"; rm -f "$base/hz.port" "$base/go" "$base/stop"
"$driver" --state "$base/state" --url "${prefix}big.bin" --hash "$big_hex" --prefix "$prefix" \
    --ca "$base/pki/ca.pem" --max 2000000000 --healthz-port-file "$base/hz.port" \
    --start-file "$base/go" > "$base/hz.driver" &
driver_pid=$!
wait_file "$base/hz.port" "the driver did not serve probes"
python3 "$here/tests/bench/healthz_probe.py" "$(cat "$base/hz.port")" "$base/stop" > "$base/hz.out" &
probe_pid=$!
sleep 0.5
touch "$base/go"
wait "$driver_pid" || { echo "download.sh: driver failed: $(cat "$base/hz.driver")" >&2; exit 1; }
touch "$base/stop"
wait "$probe_pid"
echo "during a ${size_mb} MB download ($(field "$(cat "$base/hz.driver")" seconds) s): $(cat "$base/hz.out") (goal p99 <= 100 ms)"
[ "$big_rss" -le 8192 ] && [ "$small_rss" -le 8192 ] || { echo "download.sh: RSS over 8 MB" >&2; exit 1; }
