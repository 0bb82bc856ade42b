#!/bin/bash
# Benchmark: the install time of one signed release through an HTTP proxy (squid, Debian's) against
# the same install direct, side by side in one run (issue 25, item 4). The updater runs as PID 1 of
# a new PID namespace; the OpAMP test server offers a SIZE_MB tar.gz served over https on loopback
# with a Sigstore bundle made by tests/interop/sigstore-make.mjs under a private test root. Through
# the proxy the OpAMP connection and the download are both CONNECT tunnels (HTTPS_PROXY, as an
# operator sets it); direct, nothing goes through squid. The rounds alternate direct and proxy so
# that a slow moment of the machine hits both.
#
# Usage: tests/bench/proxy.sh [BUILD_DIR]          (default: build)
# Environment: ROUNDS (default 5), SIZE_MB (default 100), BENCH_DIR (default: a new dir under
# /var/tmp; removed at the end unless KEEP=1). Needs root (unshare --pid), squid, node with
# tests/interop/node_modules, openssl, python3.
#
# Prints each round, the medians and the ratio proxy/direct, and squid's CONNECT lines of the last
# proxied round. Exit 1 when an install fails.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
updater=$build/myriarch-updater
fake_otelcol=$build/tests/fakes/fake-otelcol
fake_supervisor=$build/tests/fakes/fake-opampsupervisor
server=$build/tests/servers/opamp-test-server
size_mb=${SIZE_MB:-100} rounds=${ROUNDS:-5}
for f in "$updater" "$fake_otelcol" "$fake_supervisor" "$server"; do
    [ -x "$f" ] || { echo "proxy.sh: $f: not built (ninja -C $build)" >&2; exit 2; }
done
for c in /usr/sbin/squid node openssl python3 unshare; do
    command -v $c >/dev/null || { echo "proxy.sh: $c is not installed" >&2; exit 2; }
done

. "$here/tests/bench/install_bench.sh"
bench_workdir proxy-bench
mkdir -p "$base/art" "$base/pki" "$base/squid"
# squid's workers run as its own user: its directory, and the way to it, must let them in.
chmod 755 "$base"; chmod 777 "$base/squid"

. "$here/tests/bench/loopback_ca.sh"
. "$here/tests/bench/updater_yaml.sh"
loopback_ca "$base/pki"

hex=$(bench_release "$fake_otelcol" "$size_mb" 0.117.0 rel.tar.gz)
node "$here/tests/interop/sigstore-make.mjs" "$base/sig" "$base/art/rel.tar.gz" > /dev/null
subject="https://github.com/example/release/.github/workflows/release.yml@refs/tags/v1.0.0"
bench_seed "$fake_otelcol"
bench_https_artifacts

squid_port=$((30000 + RANDOM % 10000))
cat > "$base/squid/squid.conf" <<EOF
http_port 127.0.0.1:$squid_port
pid_filename $base/squid/squid.pid
access_log stdio:$base/squid/access.log
cache_log $base/squid/cache.log
cache deny all
cache_mem 8 MB
coredump_dir $base/squid
shutdown_lifetime 0 seconds
visible_hostname squid-bench
http_access allow all
EOF
/usr/sbin/squid -N -f "$base/squid/squid.conf" > "$base/squid/out.log" 2>&1 &
pids+=($!)
i=0
until (exec 3<>/dev/tcp/127.0.0.1/$squid_port) 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 200 ] || { echo "proxy.sh: squid did not start" >&2; exit 1; }
    sleep 0.1
done

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }


# One install through a fresh updater; `proxy` = through squid (HTTPS_PROXY), `direct` = not.
run_updater() { # proxy|direct
    local d=$base/run
    rm -rf "$d"; mkdir -p "$d/install" "$d/state" "$d/storage"
    touch "$d/effective.yaml" "$d/cmds"
    "$server" --port 0 --port-file "$d/oport" --record "$d/rec.jsonl" --commands "$d/cmds" \
        --tls-cert "$base/pki/server.pem" --tls-key "$base/pki/server.key" \
        > "$d/server.log" 2>&1 &
    local server_pid=$!
    pids+=($server_pid)
    bench_wait_file "$d/oport" "the OpAMP test server did not start"
    printf 'name=otelcol-contrib\nversion=0.117.0\nurl=%s%s\nsha256=%s\nsignature_file=%s\n' \
        "$prefix" rel.tar.gz "$hex" "$base/sig/signed/rel.tar.gz.json" > "$d/release.txt"
    bench_updater_yaml "$d" "wss://127.0.0.1:$(cat "$d/oport")/v1/opamp" "$prefix" "$base/seed" \
        "$fake_supervisor" 10ms "" "server: caFile: $base/pki/ca.pem" \
        "update: trustedRootFile: $base/sig/trusted_root.json" \
        "update: signerIdentity: {subject: \"$subject\"}" "update: startJitter: 0s"
    sed -i 's/requireSignature: false/requireSignature: true/' "$d/updater.yaml"
    local env=(env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u no_proxy -u NO_PROXY)
    [ "$1" = proxy ] && env+=(HTTPS_PROXY=http://127.0.0.1:$squid_port)
    "${env[@]}" unshare --pid --fork --mount-proc "$updater" container --config "$d/updater.yaml" \
        > "$d/up.out" 2> "$d/up.log" &
    local unshare_pid=$!
    pids+=($unshare_pid)
    local i=0
    until grep -q '"event":"message"' "$d/rec.jsonl" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 200 ] || { echo "proxy.sh: the updater did not connect: $(tail -3 "$d/up.log")" >&2; exit 1; }
        sleep 0.1
    done
    local pid1
    pid1=$(cut -d' ' -f1 "/proc/$unshare_pid/task/$unshare_pid/children")
    pids+=("$pid1")
    local secs
    secs=$(bench_offer_and_wait "$d") || { echo "proxy.sh: the install failed; updater log:" >&2; grep -E 'update:|level=(warn|error)' "$d/up.log" | tail -5 >&2; exit 1; }
    kill -TERM "$pid1"
    wait "$unshare_pid" || true
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    echo "$secs"
}

echo "proxy.sh: a signed ${size_mb} MB tar.gz over https on 127.0.0.1, OpAMP over wss, $rounds rounds"
: > "$base/direct"; : > "$base/proxy"
r=1
while [ "$r" -le "$rounds" ]; do
    dsecs=$(run_updater direct)
    : > "$base/squid/access.log"
    psecs=$(run_updater proxy)
    echo "round $r: direct ${dsecs}s  through squid ${psecs}s"
    echo "$dsecs" >> "$base/direct"; echo "$psecs" >> "$base/proxy"
    r=$((r + 1))
done
dm=$(median < "$base/direct"); pm=$(median < "$base/proxy")
echo "median: direct ${dm}s, through squid ${pm}s"
echo "ratio proxy/direct: $(echo "$pm $dm" | awk '{ printf "%.2f", $1 / $2 }')"
echo "squid's access log of the last proxied round (the tunnels end when the updater stops):"
i=0
until grep -q CONNECT "$base/squid/access.log"; do
    i=$((i + 1)); [ $i -lt 100 ] || { echo "proxy.sh: squid saw no CONNECT" >&2; exit 1; }
    sleep 0.05
done
grep CONNECT "$base/squid/access.log" | sed 's/^/  /'
