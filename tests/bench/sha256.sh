#!/bin/sh
# Benchmark of the artifact hashing of `myriarch-updater verify` against `openssl dgst -sha256` (the
# reference limit: OpenSSL's hand-written assembly for the same instructions) and `sha256sum`
# (coreutils, portable C), on a 320 MB file, side by side in one run.
#
# Usage: tests/bench/sha256.sh [BINARY]        (default: build/static/myriarch-updater)
# Environment: ROUNDS (default 5), SIZE_MB (default 320), BENCH_DIR (default: a new dir under
# /var/tmp). The file is read into the page cache before every run, so all contenders hash from
# memory and the figure is hashing speed, not disk speed.
#
# `verify` reads the (tiny) bundle and trusted root, hashes the artifact with sha256_file (streamed
# in 256 KiB chunks) and only then parses the bundle; the bundle here is `{}`, so the run ends right
# after hashing with "not verified: bundle: ..." (exit 1, expected). Correctness of the digest is
# covered by tests/unit/hash and tests/fuzz/fuzz_sha256.cpp.
#
# Each run is timed in wall-clock seconds and in CPU seconds (user + system of the child, from the
# shell's `times`): on a machine shared with other work the wall clock also counts the time the
# run waited for a core, the CPU time does not. Prints every round, the medians, MB/s (1 MB = 10^6
# bytes) both ways, the ratios verify/openssl (above 1.0: verify is slower) and the peak RSS of
# `verify`, which must stay flat (under 8 MB) whatever the file size. Goal: >= 1000 MB/s in CPU
# time on a CPU with SHA extensions (the backend `version` names). Exit 1 when the RSS limit is
# exceeded; the speed is reported, not enforced (shared machines).
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$here/build/static/myriarch-updater}
rounds=${ROUNDS:-5}
size_mb=${SIZE_MB:-320}
[ -x "$bin" ] || { echo "sha256.sh: $bin: not an executable (build it first)" >&2; exit 2; }
command -v openssl >/dev/null || { echo "sha256.sh: openssl is not installed" >&2; exit 2; }
case "$bin" in /*) ;; *) bin=$(pwd)/$bin ;; esac

base=${BENCH_DIR:-}
if [ -z "$base" ]; then base=$(mktemp -d /var/tmp/myr-sha256-bench-XXXXXX); fi
trap 'rm -rf "$base"' EXIT INT TERM
src=$base/artifact.bin
printf '{}' > "$base/bundle.json"
printf '{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}' > "$base/root.json"

now() { date +%s.%N; }

# Runs "$@" after levelling the cache; prints "<wall> <cpu>" in seconds. The subshell's `times`
# reports its children's user and system time on its second line ("0m0.190000s 0m0.070000s").
timed() {
    cat "$src" > /dev/null
    (
        t0=$(now)
        "$@" > "$base/out" 2>&1 || true
        t1=$(now)
        times > "$base/times"  # not in a pipe or $(...): those would run it in another process
        echo "$t0 $t1 $(tail -n 1 "$base/times")"
    ) | awk '{
        split($3, u, "m"); split($4, s, "m");
        cpu = u[1] * 60 + u[2] + s[1] * 60 + s[2];
        printf "%.3f %.3f", $2 - $1, cpu }'
}

run_verify() {
    timed "$bin" verify --artifact "$src" --bundle "$base/bundle.json" \
        --trusted-root "$base/root.json" --subject s --issuer i
    case "$(cat "$base/out")" in
        "not verified: bundle: "*) ;;
        *) echo "unexpected verify output: $(cat "$base/out")" >&2; exit 1 ;;
    esac
}
run_openssl() { timed openssl dgst -sha256 "$src"; }
run_sha256sum() { timed sha256sum "$src"; }

echo "creating a ${size_mb} MB file in $base"
head -c "$((size_mb * 1000 * 1000))" /dev/urandom > "$src"
backend=$("$bin" version | awk -F': ' '$1 == "sha256" { print $2 }')
echo "verify hashes with: ${backend:-unknown}; CPU: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"

v_wall=""; v_cpu=""; o_wall=""; o_cpu=""; s_wall=""; s_cpu=""
i=1
while [ "$i" -le "$rounds" ]; do
    # Rotate who goes first, so none always runs on the warmest cache.
    case $((i % 3)) in
        1) a=$(run_verify); b=$(run_openssl); c=$(run_sha256sum) ;;
        2) b=$(run_openssl); c=$(run_sha256sum); a=$(run_verify) ;;
        0) c=$(run_sha256sum); a=$(run_verify); b=$(run_openssl) ;;
    esac
    set -- $a $b $c
    printf 'round %d: verify %6.3fs (cpu %5.3fs)   openssl %6.3fs (cpu %5.3fs)   sha256sum %6.3fs (cpu %5.3fs)\n' \
        "$i" "$1" "$2" "$3" "$4" "$5" "$6"
    v_wall="$v_wall $1"; v_cpu="$v_cpu $2"
    o_wall="$o_wall $3"; o_cpu="$o_cpu $4"
    s_wall="$s_wall $5"; s_cpu="$s_cpu $6"
    i=$((i + 1))
done

median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mbps() { echo "$1 $size_mb" | awk '{ printf "%.0f", $2 / $1 }'; }
ratio() { echo "$1 $2" | awk '{ printf "%.2f", $1 / $2 }'; }
mvw=$(median $v_wall); mvc=$(median $v_cpu)
mow=$(median $o_wall); moc=$(median $o_cpu)
msw=$(median $s_wall); msc=$(median $s_cpu)

# Peak RSS of one more verify run (kB): /usr/bin/time when present, else VmHWM polled from /proc.
if [ -x /usr/bin/time ]; then
    rss=$(/usr/bin/time -f '%M' "$bin" verify --artifact "$src" --bundle "$base/bundle.json" \
        --trusted-root "$base/root.json" --subject s --issuer i 2>&1 >/dev/null | tail -n 1)
else
    "$bin" verify --artifact "$src" --bundle "$base/bundle.json" --trusted-root "$base/root.json" \
        --subject s --issuer i > /dev/null &
    pid=$!
    rss=0
    while kill -0 "$pid" 2>/dev/null; do
        v=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
        [ -n "$v" ] && rss=$v
        sleep 0.01
    done
    wait "$pid" || true
fi

status=0
echo "median wall: verify ${mvw}s ($(mbps "$mvw") MB/s)   openssl ${mow}s ($(mbps "$mow") MB/s)   sha256sum ${msw}s ($(mbps "$msw") MB/s)"
echo "median cpu:  verify ${mvc}s ($(mbps "$mvc") MB/s)   openssl ${moc}s ($(mbps "$moc") MB/s)   sha256sum ${msc}s ($(mbps "$msc") MB/s)"
echo "ratio verify/openssl: wall $(ratio "$mvw" "$mow"), cpu $(ratio "$mvc" "$moc")   (goal: verify >= 1000 MB/s cpu with SHA extensions)"
echo "peak RSS of verify: ${rss} kB (limit 8192 kB)"
if [ "$rss" -gt 8192 ]; then echo "FAIL: peak RSS above 8 MB" >&2; status=1; fi
exit $status
