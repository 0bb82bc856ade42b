#!/usr/bin/env bash
# The README's main command, `bash scripts/demo.sh`, run whole on the test build's binaries
# (MYR_DEMO_BUILD): it must show what it is there to show, signatures included, and must not
# quietly fall back to unsigned releases when its signer is missing.
#
#   no signer   the npm signer cannot be installed (an empty copy of tests/interop, npm offline
#               with an empty cache): the demo exits 1 naming the signer, before any pod starts
#   signed      the full demo: 0.118.0 installed with its signature verified, 0.118.2 (altered
#               after signing) refused before its download, 0.118.1 rolled back, then status and
#               /metrics
#
# Needs tests/interop/node_modules (scripts/test.sh installs it) for the signed case: without it
# the case is skipped (a failure under MYR_TEST_STRICT=1), as the other node-based tests are.
set -uo pipefail
src=${MYRIARCH_SOURCE_DIR:?}
build=${MYRIARCH_BUILD_DIR:?}
tmp=$(mktemp -d /tmp/myriarch-demo-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=0

fail() {  # case, what
    echo "FAIL: $1: $2"
    failed=1
}
expect_line() {  # case, log, fixed string that must be in the log
    grep -qF -- "$3" "$2" || fail "$1" "the demo's output lacks: $3"
}
expect_no_line() {  # case, log, fixed string that must not be in the log
    if grep -qF -- "$3" "$2"; then fail "$1" "the demo's output has: $3"; fi
}

# --- no signer ----------------------------------------------------------------------------------
mkdir -p "$tmp/interop" "$tmp/npm-cache"
cp "$src/tests/interop/package.json" "$src/tests/interop/sigstore-make.mjs" "$tmp/interop/"
MYR_DEMO_BUILD=$build MYR_DEMO_INTEROP=$tmp/interop npm_config_offline=true \
    npm_config_cache=$tmp/npm-cache bash "$src/scripts/demo.sh" >"$tmp/no-signer.log" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "no signer" "the demo exited $rc, expected 1"
expect_line "no signer" "$tmp/no-signer.log" "npm install in $tmp/interop failed"
expect_line "no signer" "$tmp/no-signer.log" "MYR_DEMO_UNSIGNED=1 runs the demo without signatures"
expect_no_line "no signer" "$tmp/no-signer.log" "requireSignature: false"
expect_no_line "no signer" "$tmp/no-signer.log" "== binaries"
[ "$failed" -eq 0 ] && echo "ok: no signer: the demo stops (exit 1) and names the signer"
[ "$failed" -eq 0 ] || sed 's/^/    /' "$tmp/no-signer.log"

# --- signed -------------------------------------------------------------------------------------
if [ ! -d "$src/tests/interop/node_modules/@sigstore/sign" ]; then
    why="tests/interop/node_modules is missing (scripts/test.sh runs npm install there)"
    if [ "${MYR_TEST_STRICT:-0}" = 1 ]; then
        fail "signed" "$why, and MYR_TEST_STRICT=1 forbids skips"
    else
        echo "MYR-SKIP: demo_test.sh signed: $why"
        [ "$failed" -eq 0 ] && exit 77
    fi
    exit 1
fi
start=$(date +%s)
MYR_DEMO_BUILD=$build bash "$src/scripts/demo.sh" >"$tmp/signed.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
log=$tmp/signed.log
[ "$rc" -eq 0 ] || fail "signed" "the demo exited $rc, expected 0"
expect_no_line "signed" "$log" "NOT signed"
expect_no_line "signed" "$log" "requireSignature: false"
expect_line "signed" "$log" 'msg="update: signature verified" version=0.118.0 subject=https://github.com/example/release/.github/workflows/release.yml@refs/tags/v1.0.0 issuer=https://token.actions.githubusercontent.com'
expect_line "signed" "$log" "error_message: signature: artifact: sha256 "
expect_line "signed" "$log" " != bundle messageDigest"
expect_line "signed" "$log" "installer states: checking failed idle"
expect_line "signed" "$log" "versions/0.118.2: none on the volume; current -> versions/0.118.0"
expect_line "signed" "$log" "; rolled back to 0.118.0"
expect_line "signed" "$log" "installer states: checking downloading verifying staging preflight stopping swapping starting health-checking rolling-back rolled-back idle"
expect_line "signed" "$log" "current       0.118.0"
expect_line "signed" "$log" 'myriarch_update_attempts_total{result="installed"} 1'
expect_line "signed" "$log" 'myriarch_collector_info{version="0.118.0"} 1'
expect_line "signed" "$log" "myriarch-updater exited with code 0"
if [ "$failed" -eq 0 ]; then
    echo "ok: signed: verified, altered release refused, rollback, status and /metrics (${took}s)"
else
    sed 's/\x1b\[[0-9;]*m//g; s/^/    /' "$log" | tail -80
fi
exit "$failed"
