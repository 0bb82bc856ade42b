#!/usr/bin/env bash
# `bash scripts/demo.sh host` run whole on this build's binary (MYR_DEMO_BUILD): the .deb on a
# booted systemd, the real supervisor and collector, a signed offer installed. It must end with
# the offered version in `current` and in `myriarch-updater status`, the supervisor's unit still
# running after the updater's stop. Skips (exit 77) where the host-mode rig or the real peers
# cannot be had, or the npm signer is missing, as the other host and node-based tests do.
set -uo pipefail
src=${MYRIARCH_SOURCE_DIR:?}
build=${MYRIARCH_BUILD_DIR:?}
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for systemd-nspawn"; exit 77; }
[ -d "$src/tests/interop/node_modules" ] || { echo "SKIP: no tests/interop/node_modules (the signer)"; exit 77; }
log=$(mktemp /tmp/myriarch-demo-host-test.XXXXXX)
trap 'rm -f "$log"' EXIT
second=""
if [ -n "${MYR_REAL_TOOLS:-}" ]; then second=$(sed -n 2p "$MYR_REAL_TOOLS/collector-versions"); fi

start=$(date +%s)
MYR_DEMO_BUILD=$build bash "$src/scripts/demo.sh" host >"$log" 2>&1
rc=$?
echo "demo host: exit $rc in $(( $(date +%s) - start )) s"
failed=0
expect() {  # extended regexp the demo's output must have
    grep -qE -- "$1" "$log" || { echo "FAIL: the demo's output lacks: $1"; failed=1; }
}
[ "$rc" -eq 0 ] || { echo "FAIL: the demo exited $rc"; failed=1; }
expect '^machine up: running'
expect 'not started: /etc/myriarch/updater.yaml is not valid yet'
expect "PackageStatus Installed +agent_has_version=${second:-[^ ]+}"
expect "^current -> versions/${second:-[^ ]+}\$"
expect 'Active: active \(running\)'
expect '^done in '
if [ "$failed" -ne 0 ]; then tail -60 "$log"; exit 1; fi
grep -E '^(machine up|done in)' "$log"
