#!/bin/sh
# Benchmark of an install over a bad edge link (issue 25, item 4): the install time of a signed
# release of MYR_BADLINK_MB MiB (default 20) through Toxiproxy at 300 ms and 1 Mbit/s, cut three
# times mid-body (reset, a 5 s stall, a data limit), against the link's own floor (artifact size /
# bandwidth), and the ratio; also the bytes that crossed the link and /healthz latency meanwhile.
# It runs the slow test `slow-download-badlink` (tests/integration/realnet/badlink_test.cpp), which
# measures all of this through the real binary as PID 1, and prints its figures.
#
# Usage: tests/bench/badlink.sh [BUILD_DIR]        (default: build/static)
# Environment: ROUNDS (default 1; each round takes the floor plus about 15 s), MYR_BADLINK_MB.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build/static}
rounds=${ROUNDS:-1}
[ -d "$build" ] || { echo "badlink.sh: $build: no build directory" >&2; exit 2; }
ninja -C "$build" tests/integration/realnet/realnet_badlink_test >/dev/null

i=1
while [ "$i" -le "$rounds" ]; do
    if ! meson test -C "$build" --no-rebuild slow-download-badlink >/dev/null 2>&1; then
        echo "badlink.sh: round $i failed; see $build/meson-logs/testlog.txt" >&2
        exit 1
    fi
    grep -o 'MESSAGE: bad link: .*' "$build/meson-logs/testlog.txt" | sed "s/^MESSAGE: /round $i: /"
    i=$((i + 1))
done
