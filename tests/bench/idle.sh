#!/bin/sh
# Idle memory of `myriarch-updater container` as PID 1, next to `tini-static -s` and `catatonit`
# in the same run:
# the pod's resting state, paid on every collector pod of a node, so it is measured where it is
# spent — after start-up, with the supervisor stand-in running under it and the OpAMP agent
# connected over wss:// with heartbeats.
#
# Usage: tests/bench/idle.sh [BINARY [BUILD_DIR]]
#   BINARY      default build/static/myriarch-updater
#   BUILD_DIR   where the stand-ins are (tests/fakes/fake-opampsupervisor,
#               tests/servers/opamp-test-server); default: the build dir of BINARY
# Environment: SETTLE (seconds connected before the first reading, default 10), HEARTBEAT
# (server.heartbeatInterval, default 1s: many heartbeats in a short run, so a per-heartbeat leak
# would show between the two readings), CA (system: server.caFile is the system bundle with the
# test CA appended, the size of what a pod on the system store parses, about 140 certificates;
# own: the test CA alone), PORT (when set: container.healthListen 127.0.0.1:PORT with /metrics on,
# scraped once before the first reading, as Prometheus would; unset: no probe listener), READINGS
# (1 or 2, default 2), FIGURES (a file to write the last reading to, one `who.field kB` a line,
# and the updater's resident kB by mapping: tests/budget/budget.py reads it), BENCH_DIR.
#
# Each runs as PID 1 of a PID namespace of its own (unshare --pid; root) with the same child, the
# fake supervisor. RSS and its parts come from /proc/PID/smaps_rollup: Private_Dirty is what the
# process alone costs the node (its heap, stacks and written data; clean file pages of a static
# binary are shared with the page cache and can be dropped under pressure). Read twice, SETTLE
# seconds apart, so that growth shows. Reported, not enforced here (tests/budget/budgets.txt holds
# the budgets the test enforces); exit 1 when something did not start or the agent never connected.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$here/build/static/myriarch-updater}
case "$bin" in /*) ;; *) bin=$(pwd)/$bin ;; esac
build=${2:-$(dirname "$bin")}
case "$build" in /*) ;; *) build=$(pwd)/$build ;; esac
settle=${SETTLE:-10}
ca=${CA:-system}
heartbeat=${HEARTBEAT:-1s}
sup=$build/tests/fakes/fake-opampsupervisor
srv=$build/tests/servers/opamp-test-server
readings=${READINGS:-2}
figures=${FIGURES:-}
health_port=${PORT:-}
tini=$(command -v tini-static || echo /usr/bin/tini-static)
catatonit=$(command -v catatonit || echo /usr/bin/catatonit)
for f in "$bin" "$sup" "$srv" "$tini" "$catatonit"; do
    [ -x "$f" ] || { echo "idle.sh: $f: not an executable (build it, or apt-get install tini catatonit)" >&2; exit 2; }
done
# The figures must not depend on the page cache's history. A binary written moments ago (a fresh
# strip) has dirty pages, which smaps counts as the process's private dirty until writeback: flush
# it. And a fault maps the neighbours of the faulting page that are in the page cache (fault-around,
# and whole large folios), so RSS follows how the file's pages came into the cache: a file just
# written is cached in other units than one read back. So each binary is dropped from the cache and
# read back whole before its start; the same bytes then give the same RSS, run after run.
sync "$bin"
for f in "$bin" "$tini" "$catatonit"; do
    dd if="$f" iflag=nocache count=0 status=none
    cat "$f" >/dev/null
done
# meson test sets MALLOC_PERTURB_, which makes glibc fill freed memory and so dirties heap pages the
# product leaves clean.
unset MALLOC_PERTURB_
[ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null ||
    { echo "idle.sh: needs root and unshare --pid (the figure is for PID 1)" >&2; exit 2; }

base=${BENCH_DIR:-}
if [ -z "$base" ]; then base=$(mktemp -d /var/tmp/myr-idle-bench-XXXXXX); fi
pids=""
cleanup() {
    for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
    rm -rf "$base"
}
trap cleanup EXIT INT TERM
cd "$base"

# TLS material for 127.0.0.1: a CA of our own, as a pod's caFile would hold.
sh "$here/tests/support/test_tls.sh" "$base"
if [ "$ca" = system ]; then cat /etc/ssl/certs/ca-certificates.crt ca.pem > bundle.pem; else cp ca.pem bundle.pem; fi
echo "server.caFile: $(grep -c 'BEGIN CERTIFICATE' bundle.pem) certificates (CA=$ca); heartbeatInterval $heartbeat"

"$srv" --port-file port --record record.jsonl --tls-cert s.pem --tls-key s.key >server.log 2>&1 &
pids="$pids $!"
n=0
until [ -s port ]; do n=$((n + 1)); [ $n -lt 500 ] || { echo "idle.sh: no server" >&2; exit 1; }; sleep 0.01; done

# The seed binary only has to exist and answer --version: the fake collector of the build, if
# there, else a script.
seed=$build/tests/fakes/fake-otelcol
mkdir -p image
if [ -x "$seed" ]; then cp "$seed" image/otelcol-contrib; else
    printf '#!/bin/sh\necho "otelcol-contrib version 0.116.0"\n' > image/otelcol-contrib
    chmod 0755 image/otelcol-contrib
fi
mkdir -p storage vol
cat > updater.yaml <<YAML
server:
  endpoint: wss://127.0.0.1:$(cat port)/v1/opamp
  caFile: $base/bundle.pem
  heartbeatInterval: $heartbeat
update:
  requireSignature: false
collector:
  installDir: $base/vol/collector
  stateDir: $base/vol/state
supervisor:
  storageDir: $base/storage
log:
  level: info
container:
  supervisorCommand: ["$sup", "--storage-dir", "$base/storage"]
  seedBinary: $base/image/otelcol-contrib
  healthListen: "${health_port:+127.0.0.1:$health_port}"
  metrics: true
YAML

# Output to files: a background process holding this script's stdout would keep a pipe reading
# it open after the script ended.
unshare --pid --fork --mount-proc "$bin" container --config updater.yaml >updater.log 2>&1 &
pids="$pids $!"; u_outer=$!
unshare --pid --fork --mount-proc "$tini" -s -- "$sup" --storage-dir "$base/storage-tini" >tini.log 2>&1 &
pids="$pids $!"; t_outer=$!
unshare --pid --fork --mount-proc "$catatonit" -- "$sup" --storage-dir "$base/storage-catatonit" >catatonit.log 2>&1 &
pids="$pids $!"; c_outer=$!

# PID 1 of each namespace: unshare's child.
child_of() {
    n=0
    while :; do
        c=$(cat "/proc/$1/task/$1/children" 2>/dev/null | awk '{ print $1 }')
        [ -n "$c" ] && { echo "$c"; return; }
        n=$((n + 1)); [ $n -lt 500 ] || { echo "idle.sh: nothing started under $1" >&2; exit 1; }
        sleep 0.01
    done
}
# unshare does not pass a TERM on to its child: the cleanup stops the PID 1s themselves.
u=$(child_of "$u_outer"); pids="$u $pids"
t=$(child_of "$t_outer"); pids="$t $pids"
c=$(child_of "$c_outer"); pids="$c $pids"

# Connected: the server recorded messages from the agent.
n=0
until grep -q '"event":"message"' record.jsonl 2>/dev/null; do
    n=$((n + 1))
    [ $n -lt 3000 ] || { echo "idle.sh: the agent never connected; log:" >&2; tail -20 updater.log >&2; exit 1; }
    sleep 0.01
done
# Metrics on: one scrape, so that the registry's text buffer is what a scraped pod holds.
if [ -n "$health_port" ]; then
    n=0
    until curl -fsS -o metrics.txt "http://127.0.0.1:$health_port/metrics" 2>/dev/null; do
        n=$((n + 1))
        [ $n -lt 500 ] || { echo "idle.sh: no /metrics on 127.0.0.1:$health_port; log:" >&2; tail -20 updater.log >&2; exit 1; }
        sleep 0.01
    done
    echo "/metrics scraped: $(grep -c '^myriarch_' metrics.txt) samples"
fi

field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/smaps_rollup"; }
report() {  # label
    m=$(grep -c '"event":"message"' record.jsonl)
    printf '%s (%s messages from the agent so far)\n' "$1" "$m"
    [ -z "$figures" ] || : > "$figures"
    for who in updater tini catatonit; do
        case $who in updater) p=$u ;; tini) p=$t ;; catatonit) p=$c ;; esac
        rss=$(field "$p" Rss); pd=$(field "$p" Private_Dirty); pc=$(field "$p" Private_Clean)
        sc=$(field "$p" Shared_Clean); an=$(field "$p" Anonymous)
        printf '  %-8s RSS %5d kB   private dirty %5d kB   private clean %5d kB   shared clean %5d kB   anonymous %5d kB\n' \
            "$who" "$rss" "$pd" "$pc" "$sc" "$an"
        eval "${who}_rss=$rss; ${who}_pd=$pd"
        [ -z "$figures" ] || printf '%s.rss %s\n%s.private_dirty %s\n' "$who" "$rss" "$who" "$pd" >> "$figures"
    done
    [ -z "$figures" ] || by_mapping "$u" >> "$figures"
}
# The updater's resident kB by mapping: the binary's pages (text, data), [heap], [stack] and the
# anonymous mappings (malloc's mmapped chunks, thread stacks), so that growth shows where it is.
by_mapping() {
    awk -v bin="$(readlink "/proc/$1/exe")" '
        /^[0-9a-f]+-[0-9a-f]+ / { name = $6 == "" ? "anonymous" : ($6 == bin ? "binary" : $6); next }
        $1 == "Rss:" { kb[name] += $2 }
        END { for (n in kb) printf "updater.map.%s %d\n", n, kb[n] }' "/proc/$1/smaps"
}
sleep "$settle"
report "after ${settle} s connected"
if [ "$readings" -ge 2 ]; then
    sleep "$settle"
    report "after $((settle * 2)) s connected"
fi
ratio() { echo "$1 $2" | awk '{ printf "%.2f", $1 / $2 }'; }
echo "updater/tini: RSS $(ratio "$updater_rss" "$tini_rss"), private dirty $(ratio "$updater_pd" "$tini_pd"); updater/catatonit: RSS $(ratio "$updater_rss" "$catatonit_rss"), private dirty $(ratio "$updater_pd" "$catatonit_pd")"
