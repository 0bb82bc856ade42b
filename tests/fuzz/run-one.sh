#!/usr/bin/env bash
# run-one.sh FUZZER SEED_CORPUS [SECONDS]: replays the seed corpus, then fuzzes for SECONDS
# (default $MYR_FUZZ_SECONDS or 20) with new inputs kept in a scratch directory, so the source
# tree is never written. Exit 0 only when libFuzzer found nothing.
set -euo pipefail
fuzzer=$1 seeds=$2 secs=${3:-${MYR_FUZZ_SECONDS:-20}}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/corpus" "$scratch/artifacts"
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$scratch/artifacts/" "$scratch/corpus" "$seeds" 2>&1 | tail -25
rc=${PIPESTATUS[0]}
if ls "$scratch/artifacts/"* >/dev/null 2>&1; then
    echo "finding(s):"; ls -la "$scratch/artifacts/"
    mkdir -p "${MYR_FUZZ_FINDINGS:-/tmp/myr-fuzz-findings}"
    cp "$scratch/artifacts/"* "${MYR_FUZZ_FINDINGS:-/tmp/myr-fuzz-findings}/"
    exit 1
fi
exit "$rc"
