#!/usr/bin/env bash
# run-one.sh FUZZER SEED_CORPUS [SECONDS]: replays the seed corpus, then fuzzes for SECONDS
# (default $MYR_FUZZ_SECONDS or 20) with new inputs kept in a scratch directory, so the source
# tree is never written. Exit 0 only when libFuzzer found nothing; a finding (crash, leak, timeout,
# out-of-memory or undefined behaviour) is copied to $MYR_FUZZ_FINDINGS (default
# /tmp/myr-fuzz-findings) and named in the output, so that it can be replayed with
# `FUZZER FINDING`.
set -uo pipefail
fuzzer=$1 seeds=$2 secs=${3:-${MYR_FUZZ_SECONDS:-20}}
findings=${MYR_FUZZ_FINDINGS:-/tmp/myr-fuzz-findings}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/corpus" "$scratch/artifacts"
# Undefined behaviour stops the run like a crash (the build also passes -fno-sanitize-recover).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$scratch/artifacts/" "$scratch/corpus" "$seeds" >"$scratch/log" 2>&1
rc=$?
tail -25 "$scratch/log"
if ls "$scratch/artifacts/"* >/dev/null 2>&1; then
    mkdir -p "$findings"
    cp "$scratch/artifacts/"* "$findings/"
    echo "finding(s), kept in $findings:"
    for f in "$scratch/artifacts/"*; do echo "  $findings/$(basename "$f")"; done
    [ "$rc" -ne 0 ] || rc=1
fi
if [ "$rc" -ne 0 ] && ! grep -q "Done [0-9]* runs" "$scratch/log"; then
    echo "the fuzzer ended with exit code $rc before finishing its run"
fi
exit "$rc"
