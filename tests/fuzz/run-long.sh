#!/usr/bin/env bash
# run-long.sh NAME [SECONDS]: a long fuzzing run of one target (default 600 s), from the fuzz
# build in build/fuzz (scripts/test.sh makes it). Findings land in /tmp/myr-fuzz-findings.
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1 secs=${2:-600}
[ -x build/fuzz/tests/fuzz/fuzz_$name ] || { echo "build first: MYR_STAGES=fuzz bash scripts/test.sh" >&2; exit 2; }
exec tests/fuzz/run-one.sh "build/fuzz/tests/fuzz/fuzz_$name" "tests/fuzz/corpus/$name" "$secs"
