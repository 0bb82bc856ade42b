#!/usr/bin/env bash
# Builds the real upstream peers for tests/integration/real from our main modules in this folder
# (pinned in go.mod: the OpAMP Supervisor, a small collector distribution twice with two version
# strings, an opamp-go server) and caches them under ~/.cache/myriarch/real-tools/<key>/, where
# <key> hashes the Go version, go.mod, go.sum, the main.go files and the version strings below. A
# cached key is reused without running Go at all.
#
#   bash tests/real/build-tools.sh      prints MYR_REAL_TOOLS=<dir> as its last line
#
# Exit 0: built or cached. Exit 77: no Go toolchain (the tests then skip, or fail in strict mode).
# Exit 1: the build failed; the Go output says which module (e.g. a proxy that refuses a version).
# Module downloads and the build cache live under ~/.cache/myriarch/go so that reruns are quick;
# `go mod download` is run on its own first so that the cold-build time splits into download and
# compile (printed on stderr).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The versions the collector is built with: the upstream release that go.mod pins
# (upstream-release.sh), with "-myr" marking them as ours, not an upstream build. The third build
# fails at every start (main.brokenStart) while its --version and validate pass.
release=$(bash "$here/upstream-release.sh")
COLLECTOR_V1=$release-myr1
COLLECTOR_V2=$release-myr2
COLLECTOR_BROKEN=$release-myr3
BROKEN_REASON="this build fails at start on purpose (tests/real: main.brokenStart)"

. "$here/go_cache.sh"
myr_go_env "the real-peer tests"

key=$( { "$go" version; echo "$COLLECTOR_V1 $COLLECTOR_V2 $COLLECTOR_BROKEN $BROKEN_REASON"
         cd "$here" && cat go.mod go.sum supervisor/main.go otelcol/main.go opampserver/main.go; } |
       sha256sum | cut -c1-16)
out=$cache/real-tools/$key
cached() {
    [ -x "$out/opampsupervisor" ] && [ -x "$out/otelcol-2" ] && [ -x "$out/otelcol-broken" ] &&
        [ -x "$out/opampserver" ]
}
build() {
    local tmp=$1 t0 t1 t2
    cd "$here"
    t0=$(date +%s)
    nice "$go" mod download
    t1=$(date +%s)
    nice "$go" build -trimpath -o "$tmp/opampsupervisor" ./supervisor
    nice "$go" build -trimpath -o "$tmp/opampserver" ./opampserver
    nice "$go" build -trimpath -ldflags "-X main.version=$COLLECTOR_V1" -o "$tmp/otelcol-1" ./otelcol
    nice "$go" build -trimpath -ldflags "-X main.version=$COLLECTOR_V2" -o "$tmp/otelcol-2" ./otelcol
    nice "$go" build -trimpath -ldflags "-X main.version=$COLLECTOR_BROKEN -X 'main.brokenStart=$BROKEN_REASON'" \
        -o "$tmp/otelcol-broken" ./otelcol
    t2=$(date +%s)
    printf '%s\n%s\n%s\n' "$COLLECTOR_V1" "$COLLECTOR_V2" "$COLLECTOR_BROKEN" >"$tmp/collector-versions"
    timing="module download $((t1 - t0)) s, compile $((t2 - t1)) s"
}
myr_go_cached_build build-tools "$cache/real-tools" "$out" cached build
echo "MYR_REAL_TOOLS=$out"
