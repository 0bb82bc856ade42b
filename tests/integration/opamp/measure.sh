#!/usr/bin/env bash
# measure.sh BUILD_DIR: the OpAMP agent's footprint figures for the report (not part of the suite).
#  1. RSS of the agent connected over wss:// with 1 s heartbeats vs. the agent with no server.
#  2. Instructions per heartbeat (callgrind): two runs of different length, the difference divided
#     by the difference in heartbeats, so start-up and TLS handshake cancel out.
#  3. Reconnect storm: the server restarted 100 times within a minute on one port; attempts the
#     agent made, the longest delay it chose, and RSS before/after.
set -euo pipefail
build=$(cd "$1" && pwd)
support=$(cd "$(dirname "$0")/../../support" && pwd)
srv=$build/tests/servers/opamp-test-server
drv=$build/tests/servers/opamp-agent-driver
w=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$w"' EXIT
cd "$w"

rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }

# TLS material for 127.0.0.1.
sh "$support/test_tls.sh" "$w"

echo "== RSS =="
mkdir -p st1 st2
free_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$drv" --endpoint "wss://127.0.0.1:$free_port/v1/opamp" --ca-file ca.pem --state-dir "$w/st1" \
    --events /dev/null 2>/dev/null & idle=$!
"$srv" --port-file p1 --record r1.jsonl --tls-cert s.pem --tls-key s.key --on 1:heartbeat=1 & s1=$!
sleep 0.5
"$drv" --endpoint "wss://127.0.0.1:$(cat p1)/v1/opamp" --ca-file ca.pem --state-dir "$w/st2" \
    --events /dev/null 2>/dev/null & conn=$!
sleep 20
echo "no connection:          $(rss $idle) KiB"
echo "wss + 1 s heartbeats:   $(rss $conn) KiB after $(grep -c '"event":"message"' r1.jsonl) messages"
sleep 20
echo "  40 s later:           $(rss $conn) KiB after $(grep -c '"event":"message"' r1.jsonl) messages"
kill -TERM $idle $conn; wait $idle $conn || true; kill $s1; wait $s1 || true

run_cg() {  # seconds tag scheme
    local tls=()
    [ "$3" = wss ] && tls=(--tls-cert s.pem --tls-key s.key)
    "$srv" --port-file "p$2" --record "r$2.jsonl" --on 1:heartbeat=1 "${tls[@]}" & local s=$!
    sleep 0.5
    mkdir -p "st$2"
    valgrind --tool=callgrind --callgrind-out-file="cg$2.out" "$drv" \
        --endpoint "$3://127.0.0.1:$(cat p$2)/v1/opamp" --ca-file ca.pem --state-dir "$w/st$2" \
        --events /dev/null 2>/dev/null & local d=$!
    sleep "$1"
    kill -TERM $d; wait $d || true
    kill $s; wait $s || true
    local ir; ir=$(grep -m1 '^summary:\|^totals:' "cg$2.out" | awk '{print $2}')
    local hb; hb=$(grep -c '"event":"message"' "r$2.jsonl")
    echo "$ir $hb"
}
for scheme in ws wss; do
    echo "== instructions per heartbeat (callgrind, $scheme://) =="
    read -r ir_a hb_a < <(run_cg 8 "a$scheme" $scheme)
    read -r ir_b hb_b < <(run_cg 28 "b$scheme" $scheme)
    echo "run A: $ir_a instructions, $hb_a messages; run B: $ir_b instructions, $hb_b messages"
    echo "per heartbeat: $(( (ir_b - ir_a) / (hb_b - hb_a) )) instructions (send + the server's reply decoded)"
done

echo "== reconnect storm: 100 server restarts in about a minute =="
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p st3
"$drv" --endpoint "ws://127.0.0.1:$port/v1/opamp" --state-dir "$w/st3" --events /dev/null \
    2> storm.log & d=$!
"$srv" --port "$port" --port-file ps --record storm.jsonl & s=$!
sleep 2
before=$(rss $d)
start=$(date +%s.%N)
for i in $(seq 100); do
    kill $s; wait $s 2>/dev/null || true
    "$srv" --port "$port" --port-file ps --record storm.jsonl & s=$!
    sleep 0.55
done
end=$(date +%s.%N)
after=$(rss $d)
kill $s; wait $s 2>/dev/null || true
kill -TERM $d; wait $d || true
echo "restarts took $(python3 -c "print(round($end-$start,1))") s"
echo "connections accepted by the servers: $(grep -c '"event":"open"' storm.jsonl)"
echo "reconnects scheduled by the agent:   $(grep -c 'opamp disconnected, reconnecting' storm.log)"
echo "delays chosen (ms): $(grep -o 'delay=[0-9]*ms' storm.log | tr -d 'delay=ms' | tr '\n' ' ')"
echo "RSS before: $before KiB, after: $after KiB"
